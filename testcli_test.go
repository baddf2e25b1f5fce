package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
)

// testCLIEnv names the directory holding the test CLI, for a copy of this
// test binary run as another user (asNobody), which uses it as it is.
const testCLIEnv = "ACT_TEST_CLI"

// testCLISource is the test CLI's program (testdata/testcli: act with a
// fixed clock and the test hooks).
const testCLISource = "./testdata/testcli"

// runWithTestCLI runs the tests with the test CLI first in PATH as act,
// act-crash and act-audit-fill: built here, once, with go build (-race
// and -cover as this binary was), or the directory $ACT_TEST_CLI names.
func runWithTestCLI(m *testing.M) int {
	dir := os.Getenv(testCLIEnv)
	if dir == "" {
		var err error
		if dir, err = buildTestCLI(); err != nil {
			fmt.Fprintln(os.Stderr, "act tests:", err)
			return 1
		}
		defer os.RemoveAll(dir)
		os.Setenv(testCLIEnv, dir)
	}
	os.Setenv("PATH", dir+string(filepath.ListSeparator)+os.Getenv("PATH"))
	return m.Run()
}

// buildTestCLI builds the test CLI into a new directory that any user may
// read, and links it there under each of its names.
func buildTestCLI() (string, error) {
	// Read here, so that go test's cache of this package's result knows
	// the program: go build reads it in another process.
	if _, err := os.ReadFile(filepath.Join(testCLISource, "main.go")); err != nil {
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
	if raceEnabled {
		args = append(args, "-race")
	}
	if mode := testing.CoverMode(); mode != "" {
		args = append(args, "-cover", "-covermode="+mode)
	}
	c := exec.Command(goCmd, append(args, testCLISource)...)
	if out, err := c.CombinedOutput(); err != nil {
		os.RemoveAll(dir)
		return "", fmt.Errorf("go build %s: %v\n%s", testCLISource, err, out)
	}
	for _, name := range []string{"act-crash", "act-audit-fill"} {
		if err := os.Link(filepath.Join(dir, "act"), filepath.Join(dir, name)); err != nil {
			os.RemoveAll(dir)
			return "", err
		}
	}
	return dir, nil
}

// raceEnabled is whether this test binary was built with -race
// (race_test.go).
var raceEnabled bool
