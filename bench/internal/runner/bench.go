package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"time"
)

// bench holds what rows share: the repository, the temporary directory,
// the environment timed commands run in, and what has been built.
type bench struct {
	root, work string
	home       string   // HOME of timed commands, inside work
	env        []string // environment of timed commands
	devnull    *os.File
	built      map[string]string // name → path, built once
	loadStart  string            // load average when the run started
}

// rowError carries a setup failure out of a row's setup (see fail).
type rowError struct{ err error }

func (e rowError) Error() string { return e.err.Error() }

// fail stops the current row's setup with an error.
func (b *bench) fail(format string, args ...any) {
	panic(rowError{fmt.Errorf(format, args...)})
}

// must stops the current row's setup if err is not nil.
func (b *bench) must(err error) {
	if err != nil {
		panic(rowError{err})
	}
}

func newBench(root, work string) (*bench, error) {
	root, err := filepath.Abs(root)
	if err != nil {
		return nil, err
	}
	work, err = filepath.Abs(work)
	if err != nil {
		return nil, err
	}
	b := &bench{root: root, work: work, home: filepath.Join(work, "home"), built: map[string]string{}, loadStart: loadavg()}
	if err := os.MkdirAll(b.home, 0o755); err != nil {
		return nil, err
	}
	if b.devnull, err = os.OpenFile(os.DevNull, os.O_RDWR, 0); err != nil {
		return nil, err
	}
	// Timed commands get a private HOME and state directory and no
	// host policy or state from the caller's environment.
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if k == "HOME" || strings.HasPrefix(k, "ACT_") || strings.HasPrefix(k, "XDG_") {
			continue
		}
		b.env = append(b.env, kv)
	}
	b.env = append(b.env, "HOME="+b.home, "ACT_HOME="+filepath.Join(b.home, "act-state"))
	return b, nil
}

func (b *bench) close() { b.devnull.Close() }

// goBuild runs go build in dir with the caller's environment (the module
// and build caches live under the real HOME). Its scratch directory is
// kept (-work) under the bench's own directory, removed only at the end:
// on ext4 without a journal, files removed in the last half minute slow
// every file created after them in the same block group, and go build
// removes thousands, beside the rows' state dirs (A's creates, not B's).
func (b *bench) goBuild(dir string, args ...string) {
	tmp := filepath.Join(b.work, "go-work")
	if err := os.MkdirAll(tmp, 0o755); err != nil {
		b.fail("go build: %v", err)
	}
	cmd := exec.Command("go", append([]string{"build", "-work"}, args...)...)
	cmd.Env = append(os.Environ(), "GOTMPDIR="+tmp)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		b.fail("go build %s (in %s): %v\n%s", strings.Join(args, " "), dir, err, out)
	}
}

// act builds act from the repository root, once, and returns its path.
func (b *bench) act() string {
	if p, ok := b.built["act"]; ok {
		return p
	}
	p := filepath.Join(b.work, "bin", "act")
	fmt.Fprintln(os.Stderr, "bench: building act")
	b.goBuild(b.root, "-tags", "urfave_cli_no_docs", "-o", p, ".") // as README.md builds it
	b.built["act"] = p
	return p
}

const helloSrc = `package main

import "fmt"

func main() { fmt.Println("hello, world") }
`

// hello builds the Go hello-world baseline, once, and returns its path.
func (b *bench) hello() string {
	if p, ok := b.built["hello"]; ok {
		return p
	}
	dir := filepath.Join(b.work, "src", "hello")
	b.must(os.MkdirAll(dir, 0o755))
	b.must(os.WriteFile(filepath.Join(dir, "main.go"), []byte(helloSrc), 0o644))
	p := filepath.Join(b.work, "bin", "hello")
	b.goBuild(dir, "-o", p, "main.go")
	b.built["hello"] = p
	return p
}

var createdAt = regexp.MustCompile(`(?m)^(\s*"?created_at"?\s*:\s*)"?[0-9][0-9T:.+\-Zz]*"?`)

// example copies examples/NAME into the temporary directory with every
// created_at set to now (the default policy blocks descriptors older than
// its plan expiry as stale intent) and returns the copy's path.
func (b *bench) example(name string) string {
	data, err := os.ReadFile(filepath.Join(b.root, "examples", name))
	if err != nil {
		b.fail("example: %v", err)
	}
	if !createdAt.Match(data) {
		b.fail("example %s: no created_at to refresh", name)
	}
	now := time.Now().UTC().Format(time.RFC3339)
	data = createdAt.ReplaceAll(data, []byte(`${1}"`+now+`"`))
	dir := filepath.Join(b.work, "examples")
	b.must(os.MkdirAll(dir, 0o755))
	p := filepath.Join(dir, name)
	b.must(os.WriteFile(p, data, 0o644))
	return p
}

// command is a side that runs argv (argv[0] a path) in the temporary
// directory with the bench environment and times the whole process:
// fork, exec and wait. It is run once untimed first and must exit 0 then
// and on every timed run: a benchmark of an error path is worthless.
func (b *bench) command(argv ...string) side {
	if !filepath.IsAbs(argv[0]) {
		p, err := exec.LookPath(argv[0])
		if err != nil {
			b.fail("%v", err)
		}
		argv[0] = p
	}
	label := b.label(argv)
	var out bytes.Buffer
	if _, err := b.exec(argv, &out); err != nil {
		b.fail("%s: %v\n%s", label, err, strings.TrimSpace(out.String()))
	}
	return side{label: label, run: func(int) (sample, error) { return b.exec(argv, nil) }}
}

// exec runs argv once and measures it. Output goes to out when given,
// else to /dev/null; standard input is /dev/null.
func (b *bench) exec(argv []string, out *bytes.Buffer) (sample, error) {
	return b.execStatus(argv, out, 0)
}

// execStatus is exec for a command whose success is exit status ok (diff
// exits 1 when the trees differ).
func (b *bench) execStatus(argv []string, out *bytes.Buffer, ok int) (sample, error) {
	cmd := &exec.Cmd{Path: argv[0], Args: argv, Env: b.env, Dir: b.work,
		Stdin: b.devnull, Stdout: b.devnull, Stderr: b.devnull}
	if out != nil {
		cmd.Stdout, cmd.Stderr = out, out
	}
	start := time.Now()
	err := cmd.Start()
	if err == nil {
		err = cmd.Wait()
	}
	wall := time.Since(start)
	var ee *exec.ExitError
	switch {
	case err == nil && ok == 0:
	case errors.As(err, &ee) && ee.ExitCode() == ok && ok != 0:
	case errors.As(err, &ee):
		return sample{}, fmt.Errorf("%s", ee.ProcessState)
	case err != nil:
		return sample{}, err
	default:
		return sample{}, fmt.Errorf("exit status 0, want %d", ok)
	}
	s := sample{wall: wall, maxRSS: -1}
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		s.maxRSS = ru.Maxrss * 1024 // kilobytes on Linux
	}
	return s, nil
}

// label shortens argv for display: built binaries by name, the
// temporary directory as $W.
func (b *bench) label(argv []string) string {
	parts := make([]string, len(argv))
	for i, a := range argv {
		if i == 0 && strings.HasPrefix(a, filepath.Join(b.work, "bin")+"/") {
			a = filepath.Base(a)
		}
		parts[i] = strings.ReplaceAll(a, b.work, "$W")
	}
	return strings.Join(parts, " ")
}
