// Package clitest is what the test packages that drive act as a program
// share: the test CLI (testdata/testcli, act with a fixed clock and the
// test hooks) built once per test binary, and small helpers over the
// trees those tests make. It is used by tests only.
package clitest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/act-project/act/internal/treesnap"
)

// EnvDir names the directory holding a built test CLI, for a copy of a
// test binary run as another user, which uses it as it is.
const EnvDir = "ACT_TEST_CLI"

// Main runs m with the test CLI first in PATH as act, act-crash and
// act-audit-fill: built once from src (the testdata/testcli directory),
// with -race and -cover as the test binary was (race says), or the
// directory $ACT_TEST_CLI names.
func Main(m *testing.M, src string, race bool) int {
	dir := os.Getenv(EnvDir)
	if dir == "" {
		var err error
		if dir, err = build(src, race); err != nil {
			fmt.Fprintln(os.Stderr, "act tests:", err)
			return 1
		}
		defer os.RemoveAll(dir)
		os.Setenv(EnvDir, dir)
	}
	os.Setenv("PATH", dir+string(filepath.ListSeparator)+os.Getenv("PATH"))
	return m.Run()
}

// build builds the test CLI from src into a new directory that any user
// may read, and links it there under each of its names.
func build(src string, race bool) (string, error) {
	// Read here, so that go test's cache of the package's result knows
	// the program: go build reads it in another process.
	if _, err := os.ReadFile(filepath.Join(src, "main.go")); err != nil {
		return "", err
	}
	dir, err := os.MkdirTemp("", "act-test-cli-")
	if err != nil {
		return "", err
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		os.RemoveAll(dir)
		return "", err
	}
	goCmd, err := exec.LookPath("go")
	if err != nil {
		goCmd = filepath.Join(runtime.GOROOT(), "bin", "go")
	}
	args := []string{"build", "-o", filepath.Join(dir, "act")}
	if race {
		args = append(args, "-race")
	}
	if mode := testing.CoverMode(); mode != "" {
		args = append(args, "-cover", "-covermode="+mode)
	}
	c := exec.Command(goCmd, append(args, src)...)
	if out, err := c.CombinedOutput(); err != nil {
		os.RemoveAll(dir)
		return "", fmt.Errorf("go build %s: %v\n%s", src, err, out)
	}
	for _, name := range []string{"act-crash", "act-audit-fill"} {
		if err := os.Link(filepath.Join(dir, "act"), filepath.Join(dir, name)); err != nil {
			os.RemoveAll(dir)
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
