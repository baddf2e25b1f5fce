package plan

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/act-project/act/descriptors"
)

// TestPreconditionsHost checks the preconditions that read the machine
// rather than files, with the machine's answers injected.
func TestPreconditionsHost(t *testing.T) {
	now := time.Date(2026, 11, 22, 1, 0, 0, 0, time.UTC)
	dir := t.TempDir()
	mb := int64(10)
	d := &descriptors.Descriptor{}
	d.Scope.Filesystem.Paths = []string{filepath.Join(dir, "not-yet")}
	d.Preconditions = descriptors.Preconditions{NetworkAvailable: true, UserIdle: true, MinFreeDiskMB: &mb}
	for _, tt := range []struct {
		name string
		host Host
		want []string
	}{
		{"all hold", Host{
			FreeBytes:        func(string) (uint64, error) { return 11 << 20, nil },
			NetworkAvailable: func() (bool, error) { return true, nil },
			LastInput:        func() (time.Time, bool) { return now.Add(-time.Hour), true },
		}, nil},
		{"none hold", Host{
			FreeBytes:        func(string) (uint64, error) { return 9 << 20, nil },
			NetworkAvailable: func() (bool, error) { return false, nil },
			LastInput:        func() (time.Time, bool) { return now.Add(-time.Minute), true },
		}, []string{"precondition.disk-space", "precondition.network-unavailable", "precondition.user-not-idle"}},
		{"unknown idle and errors", Host{
			FreeBytes:        func(string) (uint64, error) { return 0, errors.New("statfs failed") },
			NetworkAvailable: func() (bool, error) { return false, errors.New("no /proc") },
			LastInput:        func() (time.Time, bool) { return time.Time{}, false },
		}, []string{"precondition.disk-space", "precondition.network-unavailable", "precondition.user-idle-unknown"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var seen string
			host := tt.host
			free := host.FreeBytes
			host.FreeBytes = func(p string) (uint64, error) { seen = p; return free(p) }
			var got []string
			for _, p := range CheckPreconditions(d, host, now, 5*time.Minute) {
				got = append(got, p.Rule)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("rules mismatch (-want +got):\n%s", diff)
			}
			// Free space is read on the nearest existing ancestor.
			if seen != dir {
				t.Errorf("free space read on %q, want %q", seen, dir)
			}
		})
	}
}

// TestDefaultHost runs the real machine probes: they must answer without
// error here (the answers themselves depend on the machine).
func TestDefaultHost(t *testing.T) {
	h := DefaultHost()
	if _, err := h.FreeBytes(os.TempDir()); err != nil {
		t.Errorf("FreeBytes: %v", err)
	}
	if _, err := h.NetworkAvailable(); err != nil {
		t.Errorf("NetworkAvailable: %v", err)
	}
	h.LastInput() // no terminal is a valid answer: reported as unknown
}

// TestPreconditionsSHA256 pins the sha256 precondition's messages: a
// match, a mismatch, a missing path, a directory, a device and a FIFO, the
// last three refused without being read (a FIFO without a writer, at
// once: act plan does not wait on it).
func TestPreconditionsSHA256(t *testing.T) {
	dir := t.TempDir()
	f := filepath.Join(dir, "f")
	if err := os.WriteFile(f, []byte("abc"), 0o600); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	const abc = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
	const zero = "0000000000000000000000000000000000000000000000000000000000000000"
	d := &descriptors.Descriptor{}
	d.Preconditions.SHA256 = map[string]string{
		f:                         strings.ToUpper(abc), // compared in lower case
		filepath.Join(dir, "g"):   zero,
		dir:                       zero,
		"/dev/null":               zero,
		fifo:                      zero,
		filepath.Join(f, "below"): zero,
	}
	var got []string
	for _, p := range CheckPreconditions(d, Host{}, time.Time{}, 0) {
		got = append(got, p.Rule+": "+p.Message)
	}
	want := []string{
		"precondition.sha256-mismatch: /dev/null must have sha256 " + zero + ": it is not a regular file",
		"precondition.sha256-mismatch: " + dir + " must have sha256 " + zero + ": it is not a regular file",
		"precondition.sha256-mismatch: " + f + "/below must have sha256 " + zero + ": not a directory",
		"precondition.sha256-mismatch: " + fifo + " must have sha256 " + zero + ": it is not a regular file",
		"precondition.sha256-mismatch: " + dir + "/g must have sha256 " + zero + ": it does not exist",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("problems mismatch (-want +got):\n%s", diff)
	}
}
