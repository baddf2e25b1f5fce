package main

import (
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
