package policy

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/act-project/act/descriptors"
)

// asSystem makes f the system policy, owned as the test runs, for the rest
// of t.
func asSystem(t *testing.T, f string) {
	t.Helper()
	old, oldOwner := SystemFile, SystemOwner
	t.Cleanup(func() { SystemFile, SystemOwner = old, oldOwner })
	SystemFile, SystemOwner = f, uint32(os.Geteuid())
}

// trustedDir returns a new directory writable by no one but its owner.
func trustedDir(t *testing.T) string {
	t.Helper()
	d := t.TempDir()
	if err := os.Chmod(d, 0o755); err != nil {
		t.Fatal(err)
	}
	return d
}

func mustSymlink(t *testing.T, target, link string) {
	t.Helper()
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
}

// TestSystemPolicySwappedThroughLink: a system policy reached through a
// link in a directory others can write, re-pointed by them at an empty
// file root owns, is refused — it does not read as no restrictions.
func TestSystemPolicySwappedThroughLink(t *testing.T) {
	base := trustedDir(t)
	etc := filepath.Join(base, "etc")
	shared := filepath.Join(base, "shared")
	for _, d := range []string{etc, shared} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	os.Chmod(shared, 0o777) // others can write here
	real := writeFile(t, base, "real.yaml", "modes: {risk: {LOW: deny}}\n")
	empty := writeFile(t, base, "empty", "")
	mustSymlink(t, filepath.Join(shared, "policy.yaml"), filepath.Join(etc, "policy.yaml"))
	mustSymlink(t, real, filepath.Join(shared, "policy.yaml"))
	asSystem(t, filepath.Join(etc, "policy.yaml"))

	// The agent re-points the link it can write.
	os.Remove(filepath.Join(shared, "policy.yaml"))
	mustSymlink(t, empty, filepath.Join(shared, "policy.yaml"))
	p, _, err := Load(LoadOptions{})
	var ue *UntrustedError
	if !errors.As(err, &ue) {
		t.Fatalf("Load() = %v, %v; want the link in %s refused", p, err, shared)
	}
	if ue.At != shared || !strings.Contains(err.Error(), shared+" is a directory others can write") {
		t.Errorf("error %q does not name the link and why", err)
	}
}

// TestReadTrusted: what ReadTrusted reads, follows and refuses.
func TestReadTrusted(t *testing.T) {
	base := trustedDir(t)
	good := writeFile(t, base, "conf/good", "ok\n")
	open := filepath.Join(base, "open")
	os.Mkdir(open, 0o755)
	os.Chmod(open, 0o777)
	inOpen := writeFile(t, open, "f", "ok\n")
	os.Chmod(open, 0o777)
	mustSymlink(t, "conf/good", filepath.Join(base, "rel"))
	mustSymlink(t, good, filepath.Join(base, "abs"))
	mustSymlink(t, "../conf/good", filepath.Join(base, "conf", "up"))
	mustSymlink(t, inOpen, filepath.Join(base, "to-open"))
	mustSymlink(t, good, filepath.Join(open, "link"))
	mustSymlink(t, "loop", filepath.Join(base, "loop"))
	groupW := writeFile(t, base, "groupw", "x\n")
	os.Chmod(groupW, 0o664)
	fifo := filepath.Join(base, "fifo")
	if err := mkfifo(fifo); err != nil {
		t.Fatal(err)
	}
	old := SystemOwner
	defer func() { SystemOwner = old }()
	SystemOwner = uint32(os.Geteuid())

	for _, tt := range []struct {
		name, path string
		ok         bool
		why        string // in the error
	}{
		{"a file in trusted directories", good, true, ""},
		{"a relative link in a trusted directory", filepath.Join(base, "rel"), true, ""},
		{"an absolute link", filepath.Join(base, "abs"), true, ""},
		{"a link with ..", filepath.Join(base, "conf", "up"), true, ""},
		{"a file in a directory others can write", inOpen, false, open + " is a directory others can write"},
		{"a trusted link to a file in a directory others can write", filepath.Join(base, "to-open"), false, open + " is a directory others can write"},
		{"a link in a directory others can write", filepath.Join(open, "link"), false, open + " is a directory others can write"},
		{"a group-writable file", groupW, false, "is writable by others (mode 0664)"},
		{"a fifo", fifo, false, "is not a regular file"},
		{"a directory", base, false, "is a directory, not a file"},
		{"a loop", filepath.Join(base, "loop"), false, "too many levels"},
		{"relative", "conf/good", false, "not an absolute path"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			data, err := ReadTrusted(tt.path)
			if tt.ok {
				if err != nil || string(data) != "ok\n" {
					t.Fatalf("ReadTrusted(%s) = %q, %v", tt.path, data, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.why) {
				t.Fatalf("ReadTrusted(%s) = %q, %v; want an error saying %q", tt.path, data, err, tt.why)
			}
		})
	}
	if _, err := ReadTrusted(filepath.Join(base, "missing")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a missing file: %v, want fs.ErrNotExist", err)
	}

	// Owned by someone else: the file, or a directory on the way. A
	// sticky directory of root's others can write (/tmp) may be passed
	// through, but no link in it is followed.
	if os.Geteuid() != 0 {
		t.Skip("chown and a sticky directory of root's need root")
	}
	sticky := filepath.Join(base, "sticky")
	os.Mkdir(sticky, 0o755)
	os.Chmod(sticky, 0o777|os.ModeSticky)
	inSticky := writeFile(t, sticky, "f", "ok\n")
	if data, err := ReadTrusted(inSticky); err != nil || string(data) != "ok\n" {
		t.Errorf("a root-owned file in a sticky root-owned directory: %q, %v", data, err)
	}
	mustSymlink(t, good, filepath.Join(sticky, "link"))
	if _, err := ReadTrusted(filepath.Join(sticky, "link")); err == nil || !strings.Contains(err.Error(), "is a symbolic link in "+sticky+", a directory others can write") {
		t.Errorf("a link in a sticky directory: %v", err)
	}
	other := writeFile(t, base, "other/f", "ok\n")
	os.Chown(other, 65534, 65534)
	if _, err := ReadTrusted(other); err == nil || !strings.Contains(err.Error(), "belongs to uid 65534") {
		t.Errorf("a file of uid 65534: %v", err)
	}
	os.Chown(other, 0, 0)
	os.Chown(filepath.Dir(other), 65534, 65534)
	if _, err := ReadTrusted(other); err == nil || !strings.Contains(err.Error(), "is a directory of uid 65534") {
		t.Errorf("a directory of uid 65534: %v", err)
	}
}

// TestEmptySystemPolicy: an empty system policy file (or comments only)
// is refused; {} bounds users by act's defaults.
func TestEmptySystemPolicy(t *testing.T) {
	for _, content := range []string{"", "# nothing\n"} {
		asSystem(t, writeFile(t, trustedDir(t), "policy.yaml", content))
		_, _, err := Load(LoadOptions{})
		var le *LoadError
		if !errors.As(err, &le) || len(le.Problems) != 1 || le.Problems[0].Rule != RuleEmptySystem {
			t.Errorf("an empty system policy %q: %v, want %s", content, err, RuleEmptySystem)
		}
	}
	asSystem(t, writeFile(t, trustedDir(t), "policy.yaml", "{}\n"))
	p, _, err := Load(LoadOptions{})
	if err != nil || p.System == nil {
		t.Fatalf("the system policy {}: %v", err)
	}
}

// TestHomeIsThePasswordDatabase: "~" in every layer is the password
// database's home of the user the test runs as, whatever $HOME says; a
// system policy's ["~"] does not become "/" with HOME=/.
func TestHomeIsThePasswordDatabase(t *testing.T) {
	old := LookupHome
	defer func() { LookupHome = old }()
	LookupHome = passwdHome
	u, err := user.LookupId(strconv.Itoa(os.Getuid()))
	if err != nil {
		t.Skip("this uid has no password database entry:", err)
	}
	want, err := checkHome(u.HomeDir)
	if err != nil {
		t.Skip("this user's home cannot be ~:", err)
	}
	t.Setenv("HOME", "/")
	asSystem(t, writeFile(t, trustedDir(t), "policy.yaml", "allowed_roots: [\"~\"]\nsandbox: {hide_paths: [\"~/.secret\"]}\nrisk: {sensitive_paths: [\"~/.profile\"]}\n"))
	p, _, err := Load(LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := p.AllowedRoots; len(got) != 1 || got[0] != want {
		t.Errorf("allowed roots %q with HOME=/, want [%s]", got, want)
	}
	if p.UnderAllowedRoot("/etc/passwd") {
		t.Error("/etc/passwd is under an allowed root with HOME=/")
	}
	if h := p.Sandbox.HidePaths; len(h) != 1 || h[0] != want+"/.secret" {
		t.Errorf("hide paths %q", h)
	}
	if s := p.Risk.SensitivePaths; len(s) != 1 || s[0] != want+"/.profile" {
		t.Errorf("sensitive paths %q", s)
	}
}

// TestHomeSlashRefused: when the password database's home is "/", a
// layer that uses "~" is refused (naming file and line); the default's
// "~" root is left out rather than widened to "/".
func TestHomeSlashRefused(t *testing.T) {
	withHome(t, "/")
	sys := writeFile(t, trustedDir(t), "policy.yaml", "cooldown: 2h\nallowed_roots: [\"~\"]\n")
	asSystem(t, sys)
	_, _, err := Load(LoadOptions{})
	var le *LoadError
	if !errors.As(err, &le) || le.Source != OriginSystem || le.Problems[0].Rule != RuleNoHome || le.Problems[0].Line != 2 {
		t.Fatalf("a system policy with ~ and the home /: %v", err)
	}
	if !strings.Contains(err.Error(), sys+":2:") || !strings.Contains(err.Error(), `home directory "/"`) {
		t.Errorf("error %q does not say where and why", err)
	}
	SystemFile = filepath.Join(t.TempDir(), "none")
	p, _, err := Load(LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.AllowedRoots) != 1 || p.AllowedRoots[0] != "/tmp" {
		t.Errorf("the default's roots with the home /: %q, want [/tmp]", p.AllowedRoots)
	}
}

// TestEnforcedPolicyPrinted: under a system policy stricter than the user's
// on modes, roots, hosts, caps and confirmation, the effective policy holds
// the enforced values, marks the system's, and its printed form, loaded
// back with or without the system policy, decides the same.
func TestEnforcedPolicyPrinted(t *testing.T) {
	asSystem(t, writeFile(t, trustedDir(t), "policy.yaml", `
allowed_roots: [/srv, /home/u/work]
resource_caps: {max_cpu_ms: 1000}
modes: {risk: {LOW: confirm}, types: {NETWORK_REQUEST: deny, FILE_READ: allow}}
network: {allowed_hosts: ["*.example.org", "other.net"]}
confirmation: {via: terminal}
`))
	user := writeFile(t, t.TempDir(), "user.yaml", `
allowed_roots: ["~", /srv/data, /opt]
resource_caps: {max_cpu_ms: 99999}
modes: {risk: {LOW: allow, MEDIUM: deny}, types: {FILE_WRITE: allow, COMMAND_EXECUTION: confirm}}
network: {allowed_hosts: [a.example.org, "*.b.example.org", evil.example, "*.net"]}
confirmation: {via: flag}
`)
	p, _, err := Load(LoadOptions{Flag: user})
	if err != nil {
		t.Fatal(err)
	}
	out := p.Marshal()
	for _, want := range []string{
		"FILE_WRITE: {LOW: confirm, MEDIUM: confirm, HIGH: confirm, CRITICAL: deny}",
		"LOW: confirm # system policy",
		"MEDIUM: deny\n", // the user's stricter stands
		"COMMAND_EXECUTION: {LOW: confirm, MEDIUM: confirm, HIGH: confirm, CRITICAL: deny}",
		"NETWORK_REQUEST: deny",
		"max_cpu_ms: 1000 # system policy",
		"via: terminal # system policy",
		"allowed_roots: # system policy\n  - /home/u/work\n  - /srv/data\n",
		"Bounded by the system policy",
	} {
		if !bytes.Contains(out, []byte(want)) {
			t.Errorf("the printed policy lacks %q:\n%s", want, out)
		}
	}
	if bytes.Contains(out, []byte("FILE_WRITE: allow")) || bytes.Contains(out, []byte("evil.example")) || bytes.Contains(out, []byte("/opt")) {
		t.Errorf("the printed policy shows a looser user value:\n%s", out)
	}
	if want := []string{"a.example.org", "*.b.example.org", "other.net"}; strings.Join(p.Network.AllowedHosts, " ") != strings.Join(want, " ") {
		t.Errorf("allowed hosts %q, want %q", p.Network.AllowedHosts, want)
	}
	saved := writeFile(t, t.TempDir(), "saved.yaml", string(out))
	again, _, err := Load(LoadOptions{Flag: saved})
	if err != nil {
		t.Fatalf("the printed policy does not load: %v\n%s", err, out)
	}
	SystemFile = filepath.Join(t.TempDir(), "none")
	alone, _, err := Load(LoadOptions{Flag: saved})
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []*Policy{again, alone} {
		for _, typ := range descriptors.ActionTypes {
			for _, r := range descriptors.RiskLevels {
				if got, want := q.ModeOf(typ, r).Mode, p.ModeOf(typ, r).Mode; got != want {
					t.Errorf("%s %s: the printed policy decides %s, the enforced %s", typ, r, got, want)
				}
			}
		}
		for _, path := range []string{"/srv/data/x", "/srv/x", "/opt/x", "/home/u/work/a", "/home/u/x", "/tmp/x"} {
			if q.UnderAllowedRoot(path) != p.UnderAllowedRoot(path) {
				t.Errorf("%s: the printed policy's roots disagree", path)
			}
		}
		for _, h := range []string{"a.example.org", "x.b.example.org", "c.example.org", "evil.example", "other.net", "x.net"} {
			if q.HostAllowed(h) != p.HostAllowed(h) {
				t.Errorf("%s: the printed policy's hosts disagree", h)
			}
		}
		if q.ResourceCaps.MaxCPUMs != 1000 || q.Confirmation.Via != ViaTerminal {
			t.Errorf("caps or via not as enforced: %+v %s", q.ResourceCaps, q.Confirmation.Via)
		}
	}
	// The decision attributes a mode the system raised to it.
	d := &descriptors.Descriptor{ActionType: descriptors.FileWrite, RiskLevel: descriptors.RiskLow, CreatedAt: "2026-11-22T00:00:00Z"}
	if dec := p.ModeOf(d.ActionType, d.RiskLevel); dec.Mode != Confirm || !strings.Contains(dec.Reason, "system policy") {
		t.Errorf("FILE_WRITE LOW: %+v", dec)
	}
}
