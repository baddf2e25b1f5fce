// Package clitest is what the test packages that drive act as a program
// share: the test CLI (testdata/testcli, act with a fixed clock and the
// test hooks) built once per checkout, and small helpers over the
// trees those tests make. It is used by tests only.
package clitest

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/act-project/act/internal/cgrouptest"
	"github.com/act-project/act/internal/treesnap"
)

// EnvDir names the directory holding a built test CLI, for a copy of a
// test binary run as another user, which uses it as it is.
const EnvDir = "ACT_TEST_CLI"

// Main runs m with the test CLI first in PATH as act, act-crash and
// act-audit-fill: built once from src (the testdata/testcli directory),
// with -race and -cover as the test binary was (race says), or the
// directory $ACT_TEST_CLI names.
//
// These tests mostly wait on act processes (their fsyncs, their
// sandboxes, a hook's time) rather than use a CPU each: unless -parallel
// says otherwise, twice as many run at once as go test's default, the
// number of CPUs.
func Main(m *testing.M, src string, race bool) int {
	flag.Parse()
	parallel := false
	flag.Visit(func(f *flag.Flag) { parallel = parallel || f.Name == "test.parallel" })
	if !parallel {
		flag.Set("test.parallel", strconv.Itoa(2*runtime.GOMAXPROCS(0)))
	}
	dir := os.Getenv(EnvDir)
	if dir == "" {
		var err error
		if dir, err = build(src, race); err != nil {
			fmt.Fprintln(os.Stderr, "act tests:", err)
			return 1
		}
		os.Setenv(EnvDir, dir)
	}
	os.Setenv("PATH", dir+string(filepath.ListSeparator)+os.Getenv("PATH"))
	return m.Run()
}

// build builds the test CLI from src into a directory that any user may
// read, and links it there under each of its names. The directory is the
// same for every test binary of this checkout (and user, -race and -cover
// alike): go build relinks a program only when its build ID changed, so
// the first package's tests link act and the others (agents, promotion
// beside the root) find it up to date, instead of each linking its own.
// It stays in the temporary directory after the tests, as go's own build
// cache stays, and is refused unless this user owns it and only this user
// may write it.
func build(src string, race bool) (string, error) {
	// Read here, so that go test's cache of the package's result knows
	// the program: go build reads it in another process.
	if _, err := os.ReadFile(filepath.Join(src, "main.go")); err != nil {
		return "", err
	}
	abs, err := filepath.Abs(src)
	if err != nil {
		return "", err
	}
	key := sha256.Sum256(fmt.Appendf(nil, "%s\x00%d\x00%t\x00%s", abs, os.Geteuid(), race, testing.CoverMode()))
	dir := filepath.Join(os.TempDir(), fmt.Sprintf("act-test-cli-%x", key[:8]))
	if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
		return "", err
	}
	fi, err := os.Lstat(dir)
	if err != nil {
		return "", err
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); !ok || !fi.IsDir() || int(st.Uid) != os.Geteuid() || fi.Mode().Perm()&0o022 != 0 {
		return "", fmt.Errorf("%s: not a directory of this user's that only it may write; remove it", dir)
	}
	// Any user may read it, whatever the umask: the tests run a copy of
	// themselves as nobody, with this act.
	if err := os.Chmod(dir, 0o755); err != nil {
		return "", err
	}
	// One build at a time in dir: the test binaries go test runs side by
	// side wait for the first, then find act up to date.
	lock, err := os.OpenFile(filepath.Join(dir, ".lock"), os.O_RDWR|os.O_CREATE|syscall.O_NOFOLLOW, 0o644)
	if err != nil {
		return "", err
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return "", err
	}
	goCmd, err := exec.LookPath("go")
	if err != nil {
		goCmd = filepath.Join(runtime.GOROOT(), "bin", "go")
	}
	// Built as README.md builds act: without urfave/cli's man page
	// renderer, whose package initialisation each of the thousands of
	// act processes the tests start would pay.
	args := []string{"build", "-tags", "urfave_cli_no_docs", "-o", filepath.Join(dir, "act")}
	if race {
		args = append(args, "-race")
	}
	if mode := testing.CoverMode(); mode != "" {
		args = append(args, "-cover", "-covermode="+mode)
	}
	c := exec.Command(goCmd, append(args, src)...)
	if out, err := c.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build %s: %v\n%s", src, err, out)
	}
	// The other names are links to act as it is now, each replaced at
	// once (a rename) where a relink made act a new file.
	if err := os.Chmod(filepath.Join(dir, "act"), 0o755); err != nil {
		return "", err
	}
	act, err := os.Stat(filepath.Join(dir, "act"))
	if err != nil {
		return "", err
	}
	for _, name := range []string{"act-crash", "act-audit-fill"} {
		path := filepath.Join(dir, name)
		if fi, err := os.Lstat(path); err == nil && os.SameFile(fi, act) {
			continue
		}
		tmp := path + ".new"
		os.Remove(tmp)
		if err := os.Link(filepath.Join(dir, "act"), tmp); err != nil {
			return "", err
		}
		if err := os.Rename(tmp, path); err != nil {
			return "", err
		}
	}
	return dir, nil
}

// GoCache is the Go build cache of the go command running the tests, or
// "" if it is off.
var GoCache = sync.OnceValue(func() string {
	out, err := exec.Command("go", "env", "GOCACHE").Output()
	if dir := strings.TrimSpace(string(out)); err == nil && dir != "off" {
		return dir
	}
	return ""
})

// Write writes data to name, making its directory.
func Write(t testing.TB, name, data string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(name, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

// HashTree is every entry under root (treesnap's: type, mode, owner, a
// file's sha256, a link's target), each as one string.
func HashTree(t testing.TB, root string) map[string]string {
	t.Helper()
	snap, err := treesnap.Take(root)
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]string{}
	for rel, e := range snap {
		m[rel] = fmt.Sprintf("%+v", e)
	}
	return m
}

// RollbackID finds the action id in an "act … rollback ID" that act
// prints (with --home and --policy when it names them).
var RollbackID = regexp.MustCompile(`act(?: --(?:home|policy) \S+)* rollback ([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})`)

// AppendActions appends the action ids text names in "act rollback ID",
// each once.
func AppendActions(ids []string, text string) []string {
	for _, m := range RollbackID.FindAllStringSubmatch(text, -1) {
		if !slices.Contains(ids, m[1]) {
			ids = append(ids, m[1])
		}
	}
	return ids
}

// NoCgroupEnv, among AsNobody's env, runs the test without a memory
// cgroup.
const NoCgroupEnv = "ACT_TEST_NO_CGROUP=1"

// AsNobody runs the test named test as uid and gid 65534, in a copy of
// this test binary, and fails t if it fails. seed, if not nil, fills the
// copy's Go build cache (a directory it is given) first.
func AsNobody(t *testing.T, test string, seed func(gocache string) error, env ...string) {
	if os.Getenv("ACT_TEST_AS_NOBODY") != "" || testing.Short() {
		t.Skip("already an ordinary user, or -short")
	}
	if os.Geteuid() != 0 {
		t.Skipf("not root: %s itself runs as an ordinary user", test)
	}
	if _, err := exec.LookPath("setpriv"); err != nil {
		t.Skip("setpriv (util-linux) is not installed: cannot switch to an ordinary user")
	}
	t.Parallel()
	dir, err := os.MkdirTemp("", "act-nobody-")
	check(t, err)
	t.Cleanup(func() { os.RemoveAll(dir) })
	check(t, os.Chmod(dir, 0o777))
	exe, err := os.Executable()
	check(t, err)
	bin := filepath.Join(dir, "act.test")
	// A hard link where it can be: a copy written here while another
	// test's goroutine forks may still be open for writing in that child
	// when setpriv runs it ("text file busy").
	if os.Link(exe, bin) != nil {
		CopyFile(t, exe, bin, 0o755)
	}
	// go test wrote the binary with the umask's mode (0700 under umask
	// 077), which a link shares.
	check(t, os.Chmod(bin, 0o755))
	// In a memory cgroup of its own, without which a command's memory cap
	// is RLIMIT_AS per process (docs/sandbox-process.md); without one
	// where env asks (NoCgroupEnv).
	var prefix []string
	if !slices.Contains(env, NoCgroupEnv) {
		var remove func()
		prefix, remove, err = cgrouptest.Delegate(65534, 65534)
		if err != nil {
			t.Skipf("cannot give uid 65534 a memory cgroup: %v", err)
		}
		defer remove()
	}
	args := append(append([]string{"--reuid=65534", "--regid=65534", "--clear-groups", "--"}, prefix...), bin, "-test.run=^"+test+"$", "-test.count=1")
	if testing.Verbose() {
		args = append(args, "-test.v")
	}
	c := exec.Command("setpriv", args...)
	c.Dir = dir
	for _, kv := range os.Environ() {
		switch name, _, _ := strings.Cut(kv, "="); name {
		case "TMPDIR", "HOME", "GOCOVERDIR", "GOCACHE":
		default:
			c.Env = append(c.Env, kv)
		}
	}
	gocache := filepath.Join(dir, "gocache")
	if seed != nil {
		check(t, seed(gocache))
	}
	c.Env = append(c.Env, "TMPDIR="+dir, "HOME="+dir, "GOCACHE="+gocache, "ACT_TEST_AS_NOBODY=1")
	c.Env = append(c.Env, env...)
	out, err := c.CombinedOutput()
	for try := 0; err != nil && bytes.Contains(bytes.ToLower(out), []byte("text file busy")) && try < 5; try++ {
		time.Sleep(100 * time.Millisecond) // the copy's writer fd, in a forked child, is gone once it execs
		again := exec.Command(c.Path, c.Args[1:]...)
		again.Dir, again.Env = c.Dir, c.Env
		c = again
		out, err = c.CombinedOutput()
	}
	if err != nil {
		t.Fatalf("%s as nobody: %v\n%s", test, err, out)
	}
	if !bytes.Contains(out, []byte("ok")) && !bytes.Contains(out, []byte("PASS")) {
		t.Fatalf("%s as nobody ran nothing:\n%s", test, out)
	}
	t.Logf("%s as nobody:\n%s", test, out)
}

// CopyFile copies a regular file, for the test binary.
func CopyFile(t *testing.T, from, to string, mode fs.FileMode) {
	t.Helper()
	in, err := os.Open(from)
	check(t, err)
	defer in.Close()
	out, err := os.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
	check(t, err)
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
	check(t, out.Close())
	// The mode whatever the umask: a copy uid 65534 runs must be its to
	// read and execute under umask 077 too.
	check(t, os.Chmod(to, mode))
}

func check(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
