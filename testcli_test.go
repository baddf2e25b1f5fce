package main

import (
	"io/fs"
	"slices"
	"testing"

	"github.com/act-project/act/internal/clitest"
)

// testCLIEnv names the directory holding the test CLI, for a copy of this
// test binary run as another user (asNobody), which uses it as it is.
const testCLIEnv = clitest.EnvDir

// testCLISource is the test CLI's program (testdata/testcli: act with a
// fixed clock and the test hooks).
const testCLISource = "./testdata/testcli"

// runWithTestCLI runs the tests with the test CLI first in PATH as act,
// act-crash and act-audit-fill (clitest.Main).
func runWithTestCLI(m *testing.M) int { return clitest.Main(m, testCLISource, raceEnabled) }

// raceEnabled is whether this test binary was built with -race
// (race_test.go).
var raceEnabled bool

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// copyFile copies a regular file (clitest.CopyFile).
func copyFile(t *testing.T, from, to string, mode fs.FileMode) { clitest.CopyFile(t, from, to, mode) }

// asNobody runs the test named test as uid and gid 65534, in a copy of
// this test binary (clitest.AsNobody); seedGoCacheEnv among env gives
// the copy's build cache the standard library (seedNobodyGoCache).
func asNobody(t *testing.T, test string, env ...string) {
	var seed func(string) error
	if slices.Contains(env, seedGoCacheEnv) {
		seed = seedNobodyGoCache
	}
	clitest.AsNobody(t, test, seed, env...)
}
