//go:build linux

package isolate

import (
	"net"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestWantUserScope: act re-executes itself in a delegated systemd user
// scope only as an ordinary user, once, without a writable memory cgroup,
// where a user manager and systemd-run are there. (The re-execution itself
// is not exercised here: this host runs no systemd user manager.)
func TestWantUserScope(t *testing.T) {
	yes := scopeFacts{euid: 1000, userManager: true, systemdRun: "/usr/bin/systemd-run"}
	if !wantUserScope(yes) {
		t.Errorf("%+v: not re-executed", yes)
	}
	for name, f := range map[string]func(*scopeFacts){
		"root":                func(f *scopeFacts) { f.euid = 0 },
		"re-executed already": func(f *scopeFacts) { f.inScope = true },
		"v1 memory writable":  func(f *scopeFacts) { f.v1Memory = true },
		"v2 delegated":        func(f *scopeFacts) { f.v2Delegated = true },
		"no user manager":     func(f *scopeFacts) { f.userManager = false },
		"no systemd-run":      func(f *scopeFacts) { f.systemdRun = "" },
	} {
		g := yes
		f(&g)
		if wantUserScope(g) {
			t.Errorf("%s: re-executed", name)
		}
	}
	argv := userScopeArgv("/usr/bin/systemd-run", "/usr/local/bin/act", []string{"mcp", "--workspace", "/w"})
	want := []string{"/usr/bin/systemd-run", "--user", "--scope", "-p", "Delegate=yes", "--quiet", "--", "/usr/local/bin/act", "mcp", "--workspace", "/w"}
	if !slices.Equal(argv, want) {
		t.Errorf("argv %q, want %q", argv, want)
	}
	// The user manager is found by its private socket.
	rt := t.TempDir()
	if userManagerRuns(rt) {
		t.Error("a user manager without a socket")
	}
	if err := os.Mkdir(filepath.Join(rt, "systemd"), 0o700); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("unix", filepath.Join(rt, "systemd", "private"))
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	if !userManagerRuns(rt) {
		t.Error("the user manager's private socket was not found")
	}
	// Here (as whoever runs the test) the facts are gathered without
	// error, and a process marked re-executed is left as it is.
	t.Setenv(scopeEnv, "1")
	if f := userScopeFacts(); wantUserScope(f) {
		t.Errorf("re-executed twice: %+v", f)
	}
}

// TestV2Usable: the read-only check of a delegated cgroup v2 directory.
func TestV2Usable(t *testing.T) {
	own := t.TempDir()
	for name, v := range map[string]string{"cgroup.controllers": "cpu memory pids\n", "cgroup.subtree_control": "", "cgroup.procs": "1\n"} {
		if err := os.WriteFile(filepath.Join(own, name), []byte(v), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if !v2Usable(own, os.Geteuid()) {
		t.Error("the user's own cgroup with memory: not usable")
	}
	if v2Usable(own, os.Geteuid()+1) {
		t.Error("another user's cgroup: usable")
	}
	if err := os.WriteFile(filepath.Join(own, "cgroup.controllers"), []byte("cpu pids\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if v2Usable(own, os.Geteuid()) {
		t.Error("a cgroup without the memory controller: usable")
	}
}
