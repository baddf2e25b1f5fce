package digest_test

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"testing/iotest"

	"github.com/act-project/act/internal/digest"
	"golang.org/x/sys/unix"
)

func hexSum(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// big is larger than two read buffers and not a multiple of one.
func big(t *testing.T) []byte {
	b := make([]byte, 2*128<<10+12345)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return b
}

func TestFile(t *testing.T) {
	dir := t.TempDir()
	large := big(t)
	for _, c := range []struct {
		name string
		data []byte
		want string
	}{
		{"empty", nil, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"},
		{"abc", []byte("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"},
		{"large", large, hexSum(large)},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := filepath.Join(dir, c.name)
			if err := os.WriteFile(p, c.data, 0o600); err != nil {
				t.Fatal(err)
			}
			for _, f := range []func(string) (string, error){digest.File, digest.RegularFile} {
				got, err := f(p)
				if err != nil || got != c.want {
					t.Errorf("got %s, %v; want %s", got, err, c.want)
				}
			}
			sum, n, err := digest.Reader(iotest.HalfReader(strings.NewReader(string(c.data))))
			if err != nil || sum != c.want || n != int64(len(c.data)) {
				t.Errorf("Reader: got %s, %d, %v; want %s, %d", sum, n, err, c.want, len(c.data))
			}
		})
	}
}

func TestFileFollowsSymlinks(t *testing.T) {
	dir := t.TempDir()
	p, l := filepath.Join(dir, "f"), filepath.Join(dir, "l")
	if err := os.WriteFile(p, []byte("abc"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("f", l); err != nil {
		t.Fatal(err)
	}
	for _, f := range []func(string) (string, error){digest.File, digest.RegularFile} {
		if got, err := f(l); err != nil || got != hexSum([]byte("abc")) {
			t.Errorf("through a symlink: got %s, %v", got, err)
		}
	}
}

func TestFileErrors(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "missing")
	for _, c := range []struct {
		name string
		f    func(string) (string, error)
		path string
		op   string
		is   error
	}{
		{"File missing", digest.File, missing, "open", fs.ErrNotExist},
		{"RegularFile missing", digest.RegularFile, missing, "open", fs.ErrNotExist},
		{"File directory", digest.File, dir, "read", syscall.EISDIR},
		{"RegularFile directory", digest.RegularFile, dir, "open", digest.ErrNotRegular},
		{"RegularFile device", digest.RegularFile, "/dev/null", "open", digest.ErrNotRegular},
	} {
		t.Run(c.name, func(t *testing.T) {
			sum, err := c.f(c.path)
			var pe *fs.PathError
			if sum != "" || !errors.As(err, &pe) || pe.Op != c.op || pe.Path != c.path || !errors.Is(err, c.is) {
				t.Errorf("got %q, %#v; want an *fs.PathError %s %s wrapping %v", sum, err, c.op, c.path, c.is)
			}
		})
	}
}

func TestReaderError(t *testing.T) {
	boom := errors.New("boom")
	sum, n, err := digest.Reader(io.MultiReader(strings.NewReader("abcd"), iotest.ErrReader(boom)))
	if sum != "" || n != 4 || err != boom {
		t.Errorf("got %q, %d, %v; want \"\", 4, boom", sum, n, err)
	}
	// Data and io.EOF in one call: the data counts.
	sum, n, err = digest.Reader(iotest.DataErrReader(strings.NewReader("abc")))
	if sum != hexSum([]byte("abc")) || n != 3 || err != nil {
		t.Errorf("data with EOF: got %q, %d, %v", sum, n, err)
	}
}

// TestRegularFileFIFO: a FIFO with no writer is refused at once, not
// waited on: opening one for reading blocks until a writer comes, so a
// precondition naming one would hang act plan.
func TestRegularFileFIFO(t *testing.T) {
	p := filepath.Join(t.TempDir(), "fifo")
	if err := syscall.Mkfifo(p, 0o600); err != nil {
		t.Fatal(err)
	}
	sum, err := digest.RegularFile(p)
	if sum != "" || !errors.Is(err, digest.ErrNotRegular) {
		t.Errorf("got %q, %v; want ErrNotRegular", sum, err)
	}
}

// TestOpenRaw reads a file through a RawFile as through an *os.File: the
// same bytes, io.EOF at the end, the file's type, and errors that name the
// file once it is closed.
func TestOpenRaw(t *testing.T) {
	dir := t.TempDir()
	name := filepath.Join(dir, "f")
	want := bytes.Repeat([]byte("act "), 100_000) // more than one read
	if err := os.WriteFile(name, want, 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := digest.OpenRaw(name, unix.O_NOFOLLOW)
	if err != nil {
		t.Fatal(err)
	}
	if typ, err := f.Type(); err != nil || typ != unix.S_IFREG {
		t.Errorf("Type() = %o, %v; want S_IFREG", typ, err)
	}
	got, err := io.ReadAll(f)
	if err != nil || !bytes.Equal(got, want) {
		t.Errorf("ReadAll: %d bytes, %v; want the %d written", len(got), err, len(want))
	}
	if n, err := f.Read(make([]byte, 8)); n != 0 || err != io.EOF {
		t.Errorf("Read at the end = %d, %v; want 0, io.EOF", n, err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	var pe *fs.PathError
	if _, err := f.Read(make([]byte, 8)); !errors.As(err, &pe) || pe.Path != name || !errors.Is(err, fs.ErrClosed) {
		t.Errorf("Read after Close = %v; want a PathError naming the file, ErrClosed", err)
	}
	if err := f.Close(); !errors.Is(err, fs.ErrClosed) {
		t.Errorf("second Close = %v; want ErrClosed", err)
	}

	d, err := digest.OpenRaw(dir, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if typ, err := d.Type(); err != nil || typ != unix.S_IFDIR {
		t.Errorf("Type() of a directory = %o, %v; want S_IFDIR", typ, err)
	}

	link := filepath.Join(dir, "link")
	if err := os.Symlink(name, link); err != nil {
		t.Fatal(err)
	}
	if _, err := digest.OpenRaw(link, unix.O_NOFOLLOW); !errors.As(err, &pe) || pe.Op != "open" || !errors.Is(err, unix.ELOOP) {
		t.Errorf("OpenRaw of a symlink with O_NOFOLLOW = %v; want open: ELOOP", err)
	}
}
