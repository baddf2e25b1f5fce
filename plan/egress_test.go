package plan

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/act-project/act/descriptors"
	"github.com/act-project/act/internal/problem"
	"github.com/act-project/act/policy"
	"github.com/act-project/act/sandbox/isolate"
)

// TestEgress: a command with the network reaches it only through act's
// egress proxy. A host service on 127.0.0.1 answers only when the policy
// names 127.0.0.1; a cloud metadata address, a name not on the list and a
// listed name that resolves to loopback are refused by the proxy, and the
// plan's command result says what was asked and refused.
func TestEgress(t *testing.T) {
	if err := isolate.Available(); err != nil {
		t.Skipf("no isolation here: %v", err)
	}
	if _, err := exec.LookPath("curl"); err != nil {
		t.Skip("curl is not installed")
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, "host service answered")
	}))
	defer srv.Close()
	port := srv.Listener.Addr().(*net.TCPAddr).Port
	for _, tt := range []struct {
		name    string
		allowed []string
		want    []string
		not     []string
	}{
		{"named", []string{"127.0.0.1"},
			[]string{"host service answered", "169.254.169.254", "localhost"},
			nil},
		{"not named", []string{"localhost"},
			[]string{"127.0.0.1"},
			[]string{"host service answered"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			base := t.TempDir()
			scope := filepath.Join(base, "s")
			mustDo(t, os.MkdirAll(scope, 0o755))
			script := fmt.Sprintf(`curl -sS --max-time 10 http://127.0.0.1:%[1]d/; echo; curl -sS --max-time 10 http://169.254.169.254/latest/meta-data/; echo; curl -sS --max-time 10 http://localhost:%[1]d/; echo; true`, port)
			// The short form: act stamps the id, the time and the
			// single-valued fields.
			text := `intent_summary: Fetch through the proxy.
risk_level: MEDIUM
action_type: COMMAND_EXECUTION
scope: {filesystem: {paths: [` + scope + `], recursive: true}, network: {required: true}, ui: {required: false}}
resources: {max_cpu_ms: 4000, max_memory_mb: 256, max_disk_mb: 4, max_duration_ms: 30000}
sandbox: {required: true, allow_network: true, max_runs: 1}
rollback: {supported: true, rollback_scope: declared_effects_only}
confirmation: {required: false, reason: "", cooldown_on_repeat: false}
audit: {log: true, log_level: SUMMARY, retain_days: 30}
preconditions: {paths_exist: [], network_available: false, user_idle: false}
effects: {filesystem: {create: [], modify: [], delete: []}, network: true, system_state_change: false}
operation: {argv: [sh, -c, ` + js(script) + `], workdir: ` + scope + `}
`
			d, _, probs := descriptors.Load("d.yaml", []byte(text))
			if probs != nil {
				t.Fatal(probs)
			}
			pol, err := policy.Default("")
			if err != nil {
				t.Fatal(err)
			}
			pol.AllowedRoots = []string{base}
			pol.Network.SandboxNetwork = true
			pol.Network.AllowedHosts = tt.allowed
			now := time.Now()
			p, err := Build(t.Context(), d, Options{StateDir: filepath.Join(base, "state"), Policy: pol, Decision: pol.Decide(d, now),
				File: "d.yaml", Now: func() time.Time { return now }})
			if err != nil {
				t.Fatal(err)
			}
			if len(p.Commands) != 1 {
				t.Fatalf("commands %+v", p.Commands)
			}
			c := p.Commands[0]
			out := c.Stdout + c.Stderr + strings.Join(c.Egress, "\n")
			t.Logf("stdout:\n%s\nstderr:\n%s\negress:\n%s", c.Stdout, c.Stderr, strings.Join(c.Egress, "\n"))
			for _, w := range tt.want {
				if !strings.Contains(out, w) {
					t.Errorf("no %q in the command's result", w)
				}
			}
			for _, w := range tt.not {
				if strings.Contains(c.Stdout, w) {
					t.Errorf("%q in the command's output", w)
				}
			}
			if strings.Contains(c.Stdout, "host service answered") != (tt.name == "named") {
				t.Errorf("the host service answered: %v", strings.Contains(c.Stdout, "host service answered"))
			}
			refused := 0
			for _, e := range c.Egress {
				if strings.Contains(e, "refused") {
					refused++
				}
			}
			if want := map[bool]int{true: 2, false: 3}[tt.name == "named"]; refused != want {
				t.Errorf("%d requests refused, want %d: %q", refused, want, c.Egress)
			}
		})
	}
}

// TestHomeView: the home roots and a home elsewhere are masked; what the
// policy shows below the real home is bound, but a credential store, a
// tool's configuration (shown as a copy with placeholders instead), a path
// holding a hidden path that is no credential store (act's state dir), or
// a path outside the real home ($HOME's, say). A toolchain's directory
// that holds a credential store is bound: the store is hidden over it.
func TestHomeView(t *testing.T) {
	me := t.TempDir()
	mask, binds := HomeView(me, []string{me + "/.gitconfig", me + "/.npmrc", me + "/.ssh", me + "/.cargo", "/etc/passwd", me, me + "/go/pkg/mod", me + "/.local"},
		[]string{me + "/.cargo/credentials.toml", me + "/.local/state/act"})
	if want := []string{"/home", "/root", me}; !slices.Equal(mask, want) {
		t.Errorf("mask %q, want %q", mask, want)
	}
	if want := []string{me + "/.cargo", me + "/go/pkg/mod"}; !slices.Equal(binds, want) {
		t.Errorf("binds %q, want %q", binds, want)
	}
	for _, h := range []string{"/", "/nonexistent"} {
		if mask, binds := HomeView(h, []string{h + "/.gitconfig"}, nil); len(binds) != 0 || len(mask) != 2 {
			t.Errorf("a home of %s: mask %q, binds %q", h, mask, binds)
		}
	}
}

// TestEgressRefusalsSaid: when act's egress proxy refuses a command's
// connection, act says so, naming the host, the reason and the policy
// setting: beside the command's failure (a problem of its own, whatever
// the tool printed), as a warning when the command did not fail, and in
// the command's result (network_refused). A PACKAGE_INSTALL whose registry
// is not listed says that the registry must be (with npm, whose own
// message is a misleading E403). As root, and by
// TestEgressRefusalsSaidNobody as uid 65534.
func TestEgressRefusalsSaid(t *testing.T) {
	if err := isolate.Available(); err != nil {
		t.Skipf("no isolation here: %v", err)
	}
	if _, err := exec.LookPath("curl"); err != nil {
		t.Skip("curl is not installed")
	}
	pol, err := policy.Default("")
	if err != nil {
		t.Fatal(err)
	}
	pol.Network.SandboxNetwork = true
	pol.Network.AllowedHosts = []string{"listed.example"}
	pol.Sandbox.Caches = nil
	build := func(t *testing.T, base, op string) (*Plan, error) {
		scope := filepath.Join(base, "s")
		mustDo(t, os.MkdirAll(scope, 0o755))
		mustDo(t, os.WriteFile(filepath.Join(scope, "package.json"), []byte(`{"name":"p","version":"1.0.0"}`), 0o644))
		text := `intent_summary: Fetch through the proxy.
risk_level: MEDIUM
scope: {filesystem: {paths: [` + scope + `], recursive: true}, network: {required: true}, ui: {required: false}}
resources: {max_cpu_ms: 20000, max_memory_mb: 512, max_disk_mb: 16, max_duration_ms: 60000}
sandbox: {required: true, allow_network: true, max_runs: 1}
rollback: {supported: true, rollback_scope: declared_effects_only}
confirmation: {required: false, reason: "", cooldown_on_repeat: false}
audit: {log: true, log_level: SUMMARY, retain_days: 30}
preconditions: {paths_exist: [], network_available: false, user_idle: false}
effects: {filesystem: {create: [` + scope + `/**], modify: [` + scope + `/**], delete: []}, network: true, system_state_change: false}
` + strings.ReplaceAll(op, "$S", scope)
		d, _, probs := descriptors.Load("d.yaml", []byte(text))
		if probs != nil {
			t.Fatal(probs)
		}
		p := *pol
		p.AllowedRoots = []string{base}
		now := time.Now()
		return Build(t.Context(), d, Options{StateDir: filepath.Join(base, "state"), Policy: &p, Decision: p.Decide(d, now),
			File: "d.yaml", Now: func() time.Time { return now }})
	}
	wantProblem := func(t *testing.T, err error, words ...string) {
		t.Helper()
		var probs problem.List
		if !errors.As(err, &probs) {
			t.Fatalf("got %v, want problems", err)
		}
		for _, p := range probs {
			if p.Rule == RuleNetworkRefused {
				for _, w := range words {
					if !strings.Contains(p.Message, w) {
						t.Errorf("%s does not say %q: %s", RuleNetworkRefused, w, p.Message)
					}
				}
				return
			}
		}
		t.Errorf("no %s among %v", RuleNetworkRefused, probs)
	}
	t.Run("failed", func(t *testing.T) {
		_, err := build(t, t.TempDir(), `action_type: COMMAND_EXECUTION
operation: {argv: [curl, -fsS, --max-time, "20", "http://unlisted.example/"], workdir: $S}
`)
		wantProblem(t, err, "unlisted.example:80", "network.allowed_hosts", "add unlisted.example")
	})
	t.Run("not failed", func(t *testing.T) {
		p, err := build(t, t.TempDir(), `action_type: COMMAND_EXECUTION
operation: {argv: [sh, -c, "curl -fsS --max-time 20 https://unlisted.example/ || true"], workdir: $S}
`)
		if err != nil {
			t.Fatal(err)
		}
		want := NetworkRefusal{Target: "unlisted.example:443", Reason: "host unlisted.example is not in the policy's network.allowed_hosts", Setting: "network.allowed_hosts"}
		if c := p.Commands[0]; len(c.Refused) != 1 || c.Refused[0] != want {
			t.Errorf("refused %+v, want %+v", c.Refused, want)
		}
		if !slices.ContainsFunc(p.Warnings, func(w problem.Problem) bool {
			return w.Rule == RuleNetworkRefused && strings.Contains(w.Message, "unlisted.example:443")
		}) {
			t.Errorf("no %s warning: %v", RuleNetworkRefused, p.Warnings)
		}
	})
	t.Run("npm install", func(t *testing.T) {
		if _, err := exec.LookPath("npm"); err != nil {
			t.Skip("npm is not installed")
		}
		_, err := build(t, t.TempDir(), `action_type: PACKAGE_INSTALL
operation: {manager: npm, packages: [kleur], workdir: $S}
`)
		wantProblem(t, err, "registry.npmjs.org:443", "PACKAGE_INSTALL", "add registry.npmjs.org there")
	})
}

func TestEgressRefusalsSaidNobody(t *testing.T) {
	t.Parallel()
	if os.Getenv("ACT_PLAN_EGRESS_CHILD") != "" {
		t.Skip("in the child")
	}
	dir := nobodyDir(t)
	if out := runAsNobody(t, dir, "TestEgressRefusalsSaid", "ACT_PLAN_EGRESS_CHILD=1"); strings.Contains(string(out), "--- SKIP") {
		t.Error("skipped as uid 65534")
	}
}

// TestNoNetworkSaid: a command without the network whose output reads
// like a connection that failed for lack of one (curl's, here) is told,
// beside its failure, how a command gets the network.
func TestNoNetworkSaid(t *testing.T) {
	if err := isolate.Available(); err != nil {
		t.Skipf("no isolation here: %v", err)
	}
	if _, err := exec.LookPath("curl"); err != nil {
		t.Skip("curl is not installed")
	}
	base := t.TempDir()
	scope := filepath.Join(base, "s")
	mustDo(t, os.Mkdir(scope, 0o755))
	d := commandIn(t, scope, "curl -fsS --max-time 10 http://example.org/", false)
	pol, err := policy.Default("")
	if err != nil {
		t.Fatal(err)
	}
	pol.AllowedRoots = []string{base}
	pol.Sandbox.Caches = nil
	now := time.Now()
	_, err = Build(t.Context(), d, Options{StateDir: filepath.Join(base, "state"), Policy: pol, Decision: pol.Decide(d, now),
		File: "d.yaml", Now: func() time.Time { return now }})
	var probs problem.List
	if !errors.As(err, &probs) || !slices.ContainsFunc(probs, func(p problem.Problem) bool {
		return p.Rule == RuleNetworkRefused && strings.Contains(p.Message, "had no network") && strings.Contains(p.Message, "network.sandbox_network")
	}) {
		t.Errorf("got %v, want %s saying the command had no network", err, RuleNetworkRefused)
	}
	// A command that fails otherwise is not told.
	d = commandIn(t, scope, "echo failed >&2; exit 3", false)
	_, err = Build(t.Context(), d, Options{StateDir: filepath.Join(base, "state"), Policy: pol, Decision: pol.Decide(d, now),
		File: "d.yaml", Now: func() time.Time { return now }})
	if errors.As(err, &probs) && slices.ContainsFunc(probs, func(p problem.Problem) bool { return p.Rule == RuleNetworkRefused }) {
		t.Errorf("a failure with no sign of the network: %v", probs)
	}
}
