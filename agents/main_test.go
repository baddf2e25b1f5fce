// Package agents tests act with the agents people run it with — Claude
// Code and Codex CLI, driven against local mocks of their model APIs —
// and a new user's whole session through every door (the hooks, act run,
// act mcp). Its tests only; a package of its own so that its share of the
// suite runs beside the root package's rather than inside its time.
package agents

import (
	"os"
	"testing"

	"github.com/act-project/act/internal/clitest"
)

func TestMain(m *testing.M) {
	os.Exit(clitest.Main(m, "../testdata/testcli", raceEnabled))
}

// raceEnabled is whether this test binary was built with -race
// (race_test.go).
var raceEnabled bool

var (
	write         = func(t *testing.T, name, data string) { t.Helper(); clitest.Write(t, name, data) }
	hashTree      = func(t *testing.T, root string) map[string]string { t.Helper(); return clitest.HashTree(t, root) }
	appendActions = clitest.AppendActions
	testGoCache   = clitest.GoCache
)
