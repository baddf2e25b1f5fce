package plan

import (
	"os"
	"testing"
)

// TestMain waits, before the test binary exits, for the sandboxes the
// tests ran to end (Settle): their cgroups are removed then.
func TestMain(m *testing.M) {
	code := m.Run()
	Settle()
	os.Exit(code)
}
