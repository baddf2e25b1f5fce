package isolate

import (
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/act-project/act/internal/cgroupfs"
)

// scopeEnv marks a process that EnterUserScope re-executed in a systemd
// user scope: it does not try again.
const scopeEnv = "_ACT_USER_SCOPE"

// scopeFacts are what decides whether act re-executes itself in a
// delegated systemd user scope (wantUserScope).
type scopeFacts struct {
	euid        int
	inScope     bool   // scopeEnv is set: re-executed already
	v1Memory    bool   // a cgroup v1 memory cgroup of this process is writable
	v2Delegated bool   // this process's cgroup v2 is delegated to its user, with memory
	userManager bool   // a systemd user manager answers ($XDG_RUNTIME_DIR/systemd/private or the user bus)
	systemdRun  string // systemd-run's path, "" where there is none
}

// wantUserScope says whether an ordinary user's act should re-execute
// itself through systemd-run --user --scope -p Delegate=yes: only where
// no memory cgroup is writable for it as it is, and a systemd user
// manager would make it one. Root is left as it is (systemd-run --scope
// is root's own choice; a v1 hierarchy or a delegated v2 cgroup serves it).
func wantUserScope(f scopeFacts) bool {
	return f.euid != 0 && !f.inScope && !f.v1Memory && !f.v2Delegated && f.userManager && f.systemdRun != ""
}

// userScopeArgv is the command line that re-executes exe with args in a
// delegated user scope: systemd-run execs it in place (same PID, same
// descriptors and environment), and the scope's cgroup is the user's.
func userScopeArgv(systemdRun, exe string, args []string) []string {
	return append([]string{systemdRun, "--user", "--scope", "-p", "Delegate=yes", "--quiet", "--", exe}, args...)
}

// EnterUserScope re-executes this process, with args (os.Args[1:]),
// through systemd-run --user --scope -p Delegate=yes where that gives an
// ordinary user the memory cgroup that a total memory cap needs
// (docs/sandbox-process.md): no memory cgroup is writable here, and a
// systemd user manager runs. The new process finds its scope delegated
// (delegatedV2) and makes the sandboxes' cgroups in it. It returns where
// it does not re-execute (or the exec failed): the memory cap is then
// held as it would have been (RLIMIT_AS per process, or refused). Call it
// first thing in main, once, before anything is opened or started.
//
// Not exercised on the machine this was written on (no systemd user
// manager there); TestWantUserScope tests the decision.
func EnterUserScope(args []string) {
	f := userScopeFacts()
	if !wantUserScope(f) {
		return
	}
	exe, err := os.Executable()
	if err != nil {
		return
	}
	env := append(os.Environ(), scopeEnv+"=1")
	_ = syscall.Exec(f.systemdRun, userScopeArgv(f.systemdRun, exe, args), env)
}

// userScopeFacts gathers scopeFacts for this process, cheapest first.
func userScopeFacts() scopeFacts {
	f := scopeFacts{euid: os.Geteuid(), inScope: os.Getenv(scopeEnv) != ""}
	if f.euid == 0 || f.inScope {
		return f
	}
	own, err := cgroupfs.Own()
	if err != nil {
		return f
	}
	if d, ok := own["memory"]; ok && syscall.Access(d, 2) == nil {
		f.v1Memory = true
		return f
	}
	if d := own[""]; d != "" {
		f.v2Delegated = v2Usable(d, f.euid)
		if f.v2Delegated {
			return f
		}
	}
	f.userManager = userManagerRuns(os.Getenv("XDG_RUNTIME_DIR"))
	if f.userManager {
		f.systemdRun, _ = exec.LookPath("systemd-run")
	}
	return f
}

// v2Usable says whether the cgroup v2 directory own is delegated to euid
// with the memory controller: what prepareV2 needs, read without changing
// anything (prepareV2 checks the rest when it prepares it).
func v2Usable(own string, euid int) bool {
	ctl, err := os.ReadFile(filepath.Join(own, "cgroup.controllers"))
	if err != nil || !hasWord(string(ctl), "memory") {
		return false
	}
	for _, f := range []string{"", "cgroup.procs", "cgroup.subtree_control"} {
		var st syscall.Stat_t
		p := filepath.Join(own, f)
		if syscall.Stat(p, &st) != nil || int(st.Uid) != euid || syscall.Access(p, 2) != nil {
			return false
		}
	}
	return true
}

// userManagerRuns says whether a systemd user manager answers on its
// private socket in runtimeDir, or on the user's D-Bus, which systemd-run
// --user talks to.
func userManagerRuns(runtimeDir string) bool {
	var socks []string
	if runtimeDir != "" {
		socks = append(socks, filepath.Join(runtimeDir, "systemd", "private"), filepath.Join(runtimeDir, "bus"))
	}
	if a, ok := strings.CutPrefix(os.Getenv("DBUS_SESSION_BUS_ADDRESS"), "unix:path="); ok {
		a, _, _ = strings.Cut(a, ",")
		socks = append(socks, a)
	}
	for _, s := range socks {
		c, err := net.DialTimeout("unix", s, 200*time.Millisecond)
		if err == nil {
			c.Close()
			return true
		}
	}
	return false
}
