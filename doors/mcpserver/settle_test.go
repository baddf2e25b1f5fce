package mcpserver

import (
	"os"
	"testing"

	"github.com/act-project/act/gate"
)

// TestMain waits, before the test binary exits, for the sandboxes the
// tests ran to end (gate.Settle): their cgroups are removed then.
func TestMain(m *testing.M) {
	code := m.Run()
	gate.Settle()
	os.Exit(code)
}
