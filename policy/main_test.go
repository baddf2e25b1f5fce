package policy

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// TestMain makes the tests hermetic: the system policy is a path under a
// temporary directory where there is none (a test that wants one writes
// it there or points SystemFile elsewhere), and "~" is userHome, whatever
// /etc/act/policy.yaml and the password database say on this host.
func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "act-policy-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	// The directory is the test user's: as the owner of the system
	// policy's directories, it is one no one else can change.
	SystemFile, SystemOwner = filepath.Join(dir, "etc", "policy.yaml"), uint32(os.Geteuid())
	LookupHome = func() (string, error) { return userHome, nil }
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// withHome makes h the password database's home for the rest of t ("-":
// none at all).
func withHome(t *testing.T, h string) {
	t.Helper()
	old := LookupHome
	t.Cleanup(func() { LookupHome = old })
	LookupHome = func() (string, error) {
		if h == "-" {
			return "", errors.New("no such user")
		}
		return h, nil
	}
}
