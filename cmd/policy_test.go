package cmd

import (
	"bytes"
	"encoding/json"
	"os"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/act-project/act/policy"
)

// The tests of this package never read the host's /etc/act/policy.yaml: a
// test that wants a system policy points SystemFile at its own.
func init() {
	policy.SystemFile = "/nonexistent/act-cmd-test/policy.yaml"
}

// runPolicy runs act policy with args under the environment env (HOME and
// ACT_HOME) and returns stdout and stderr.
func runPolicy(t *testing.T, vars map[string]string, args ...string) (string, string, int) {
	t.Helper()
	var out, errb bytes.Buffer
	env := DefaultEnv(Stdio{In: &bytes.Buffer{}, Out: &out, Err: &errb})
	env.Getenv = func(k string) string { return vars[k] }
	code := MainEnv(append([]string{"act"}, args...), env)
	return out.String(), errb.String(), code
}

// systemPolicy makes content the system policy for the rest of t.
func systemPolicy(t *testing.T, content string) string {
	t.Helper()
	dir := t.TempDir()
	os.Chmod(dir, 0o755)
	f := filepath.Join(dir, "policy.yaml")
	if err := os.WriteFile(f, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	old, oldOwner := policy.SystemFile, policy.SystemOwner
	t.Cleanup(func() { policy.SystemFile, policy.SystemOwner = old, oldOwner })
	policy.SystemFile, policy.SystemOwner = f, uint32(os.Geteuid())
	return f
}

// TestPolicyHomeNotFromHOME: with HOME=/, a system policy's ["~"] is the
// password database's home, not "/".
func TestPolicyHomeNotFromHOME(t *testing.T) {
	u, err := user.LookupId(strconv.Itoa(os.Getuid()))
	if err != nil || u.HomeDir == "/" || !filepath.IsAbs(u.HomeDir) {
		t.Skip("this user has no home ~ may stand for")
	}
	systemPolicy(t, "allowed_roots: [\"~\"]\n")
	out, stderr, code := runPolicy(t, map[string]string{"HOME": "/", "ACT_HOME": t.TempDir()}, "--json", "policy")
	if code != 0 {
		t.Fatalf("act policy: exit %d\n%s%s", code, out, stderr)
	}
	var doc struct {
		Data struct {
			Policy struct {
				AllowedRoots []string `json:"allowed_roots"`
			} `json:"policy"`
		} `json:"data"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatal(err)
	}
	if got := doc.Data.Policy.AllowedRoots; !slices.Equal(got, []string{filepath.Clean(u.HomeDir)}) {
		t.Errorf("allowed roots %q with HOME=/, want [%s]", got, u.HomeDir)
	}
}

// TestPolicyPrintsEnforced: under a system policy stricter than the user's
// on modes, roots, caps and confirmation, act policy prints the enforced
// values, names their layers, and its output is a valid policy.
func TestPolicyPrintsEnforced(t *testing.T) {
	systemPolicy(t, "allowed_roots: [/srv]\nresource_caps: {max_cpu_ms: 1000}\nmodes: {risk: {LOW: confirm}}\nconfirmation: {via: signed}\n")
	dir := t.TempDir()
	user := filepath.Join(dir, "user.yaml")
	os.WriteFile(user, []byte("allowed_roots: [/, /srv/a]\nresource_caps: {max_cpu_ms: 99999}\nmodes: {types: {FILE_WRITE: allow}}\nconfirmation: {via: flag, approvers: [\"me@example.org ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIKfA\"]}\n"), 0o644)
	vars := map[string]string{"ACT_HOME": filepath.Join(dir, "state")}
	out, stderr, code := runPolicy(t, vars, "--policy", user, "policy")
	if code != 0 {
		t.Fatalf("act policy: exit %d\n%s%s", code, out, stderr)
	}
	for _, want := range []string{"allowed_roots: # system policy\n  - /srv\n", "set aside the user's looser override of FILE_WRITE.\n  types: {}", "max_cpu_ms: 1000 # system policy", "via: signed # system policy", "are ignored"} {
		if !strings.Contains(out, want) {
			t.Errorf("act policy does not print %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "FILE_WRITE: allow") || strings.Contains(out, "me@example.org") {
		t.Errorf("act policy prints a looser user value:\n%s", out)
	}
	if !strings.Contains(stderr, "approvers and approvers_file are ignored") {
		t.Errorf("stderr does not say the user's approvers are ignored:\n%s", stderr)
	}
	type document struct {
		Data struct {
			Policy  json.RawMessage   `json:"policy"`
			Sources map[string]string `json:"sources"`
		} `json:"data"`
	}
	js, _, _ := runPolicy(t, vars, "--policy", user, "--json", "policy")
	var doc document
	if err := json.Unmarshal([]byte(js), &doc); err != nil {
		t.Fatal(err)
	}
	// Saved and loaded back, with or without the system policy, the
	// output is the same policy.
	saved := filepath.Join(dir, "saved.yaml")
	os.WriteFile(saved, []byte(out), 0o644)
	for _, withSystem := range []bool{true, false} {
		if !withSystem {
			policy.SystemFile = filepath.Join(dir, "none.yaml")
		}
		js, stderr, code := runPolicy(t, vars, "--policy", saved, "--json", "policy")
		var again document
		if err := json.Unmarshal([]byte(js), &again); err != nil || code != 0 {
			t.Fatalf("the saved output does not load (exit %d, %v): %s", code, err, stderr)
		}
		if !bytes.Equal(again.Data.Policy, doc.Data.Policy) {
			t.Errorf("the saved output (system policy: %v) loads as\n%s\nnot\n%s", withSystem, again.Data.Policy, doc.Data.Policy)
		}
	}
	for k, want := range map[string]string{"modes.types.FILE_WRITE": "system", "allowed_roots": "system", "resource_caps.max_cpu_ms": "system",
		"confirmation.via": "system", "confirmation.approvers": "system", "cooldown": "flag"} {
		if got := doc.Data.Sources[k]; got != want {
			t.Errorf("sources[%s] = %q, want %q", k, got, want)
		}
	}
}
