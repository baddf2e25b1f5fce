package plan

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha1"
	"crypto/sha512"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/act-project/act/descriptors"
	"github.com/act-project/act/internal/problem"
	"github.com/act-project/act/internal/redact"
	"github.com/act-project/act/policy"
	"github.com/act-project/act/sandbox/isolate"
)

// commandIn is a short COMMAND_EXECUTION descriptor scoped to scope that
// runs script, or with write a FILE_WRITE of scope/f.
func commandIn(t *testing.T, scope, script string, write bool) *descriptors.Descriptor {
	t.Helper()
	op := `action_type: COMMAND_EXECUTION
effects: {filesystem: {create: [], modify: [], delete: []}, network: false, system_state_change: false}
operation: {argv: [sh, -c, ` + js(script) + `], workdir: ` + js(scope) + `}
`
	if write {
		op = `action_type: FILE_WRITE
effects: {filesystem: {create: [` + js(scope+"/f") + `], modify: [], delete: []}, network: false, system_state_change: false}
operation: {path: ` + js(scope+"/f") + `, content: "x"}
`
	}
	text := `intent_summary: Look around.
risk_level: MEDIUM
scope: {filesystem: {paths: [` + js(scope) + `], recursive: true}, network: {required: false}, ui: {required: false}}
resources: {max_cpu_ms: 4000, max_memory_mb: 256, max_disk_mb: 4, max_duration_ms: 30000}
sandbox: {required: true, allow_network: false, max_runs: 1}
rollback: {supported: true, rollback_scope: declared_effects_only}
confirmation: {required: false, reason: "", cooldown_on_repeat: false}
audit: {log: true, log_level: SUMMARY, retain_days: 30}
preconditions: {paths_exist: [], network_available: false, user_idle: false}
` + op
	d, _, probs := descriptors.Load("d.yaml", []byte(text))
	if probs != nil {
		t.Fatalf("%v\n%s", probs, text)
	}
	return d
}

// TestCheckScopeSecrets: a plan that runs commands is refused before
// anything runs when a scope, on its real path, takes in a credential
// store (a link planted to ~/.ssh, which the static rules cannot see), or
// takes in a tool's configuration that holds a secret now, or one act
// cannot read safely (a link planted in its place). A configuration
// without a secret, and any scope of a plan that runs nothing, pass.
func TestCheckScopeSecrets(t *testing.T) {
	base := t.TempDir()
	home := filepath.Join(base, "home")
	write := func(rel, data string) {
		mustDo(t, os.MkdirAll(filepath.Dir(filepath.Join(home, rel)), 0o755))
		mustDo(t, os.WriteFile(filepath.Join(home, rel), []byte(data), 0o600))
	}
	write(".ssh/id_key", "not a key\n")
	write(".config/nvim/init.vim", "set nu\n")
	write(".config/pip/pip.conf", "[global]\nindex-url = https://u:tok@pypi.corp.example/simple\n")
	write(".pip/pip.conf", "[global]\ntimeout = 60\n")
	write(".pyenv/versions/3.12.0/bin/python", "")
	mustDo(t, os.MkdirAll(filepath.Join(home, ".pyenv/versions/3.12.0"), 0o755))
	mustDo(t, os.Symlink("../../../.ssh/id_key", filepath.Join(home, ".pyenv/versions/3.12.0/pip.conf")))
	link := filepath.Join(base, "link")
	mustDo(t, os.Symlink(filepath.Join(home, ".ssh"), link))

	for _, tt := range []struct {
		scope string
		want  string // "" or a word of the message
	}{
		{home + "/.config/nvim", ""},
		{home + "/.ssh", "credential store"},
		{link, "it is " + home + "/.ssh"},
		{home + "/.config/pip", "holds a secret"},
		{home + "/.pip", ""},
		{home + "/.pyenv", "cannot read safely"},
	} {
		t.Run(filepath.Base(tt.scope), func(t *testing.T) {
			probs := CheckScopeSecrets(commandIn(t, tt.scope, "true", false), []string{home}, home)
			switch {
			case tt.want == "" && len(probs) > 0:
				t.Errorf("refused: %v", probs)
			case tt.want != "" && (len(probs) != 1 || probs[0].Rule != RuleScopeCredentialStore || probs[0].Field != "scope.filesystem.paths[0]" ||
				probs[0].Layer != problem.Rejected || !strings.Contains(probs[0].Message, tt.want)):
				t.Errorf("got %v, want one %s naming %q", probs, RuleScopeCredentialStore, tt.want)
			}
			if probs := CheckScopeSecrets(commandIn(t, tt.scope, "", true), []string{home}, home); len(probs) > 0 {
				t.Errorf("a FILE_WRITE, which runs nothing, refused: %v", probs)
			}
		})
	}
}

// TestConfigViews: with sandbox.home_visible showing the toolchains and
// the tools' configurations, a command sees each configuration as a copy
// with a placeholder for each secret (settings such as save-exact kept),
// never the secret: not ~/.npmrc's token, not nvm's global npmrc's, not
// the index-url token of a pyenv Python's pip.conf; cargo's
// credentials.toml inside a shown ~/.cargo is hidden, and a ~/.netrc the
// agent planted as a link to a key shows nothing (act does not follow it).
// The command's output is reversed, so that output redaction cannot be
// what hides them. As root, and by TestConfigViewsNobody as uid 65534.
func TestConfigViews(t *testing.T) {
	if err := isolate.Available(); err != nil {
		t.Skipf("no isolation here: %v", err)
	}
	base, err := os.MkdirTemp("/var/tmp", "act-views-")
	if err != nil {
		t.Skipf("no writable /var/tmp: %v", err)
	}
	t.Cleanup(func() { makeRemovable(base); os.RemoveAll(base) })
	mustDo(t, os.Chmod(base, 0o755))
	home := filepath.Join(base, "home")
	write := func(rel, data string) {
		mustDo(t, os.MkdirAll(filepath.Dir(filepath.Join(home, rel)), 0o755))
		// Secrets 0600, as they are: their copies are readable all the
		// same (as root, by the sandbox's own identity too).
		mode := os.FileMode(0o644)
		if strings.Contains(data, "SECRET") {
			mode = 0o600
		}
		mustDo(t, os.WriteFile(filepath.Join(home, rel), []byte(data), mode))
	}
	node := ".nvm/versions/node/v20.0.0"
	py := ".pyenv/versions/3.12.0"
	write(".npmrc", "save-exact=true\n//registry.npmjs.org/:_authToken=NPMRC-SECRET-1\n")
	write(node+"/etc/npmrc", "prefix=/opt/x\n//npm.corp.example/:_authToken=NVM-SECRET-2\n")
	write(node+"/bin/tool", "the node tool\n")
	write(py+"/pip.conf", "[global]\nindex-url = https://u:PYENV-SECRET-3@pypi.corp.example/simple\n")
	write(".cargo/credentials.toml", "[registry]\ntoken = \"CARGO-SECRET-4\"\n")
	write(".cargo/bin/cargo", "the cargo tool\n")
	write(".ssh/id_key", "KEY-SECRET-5\n")
	mustDo(t, os.Symlink(".ssh/id_key", filepath.Join(home, ".netrc")))
	scope := filepath.Join(base, "s")
	mustDo(t, os.Mkdir(scope, 0o755))

	script := `H=` + home + `; for f in .npmrc ` + node + `/etc/npmrc ` + py + `/pip.conf .cargo/credentials.toml .netrc ` + node + `/bin/tool .cargo/bin/cargo; do echo "== $f"; cat "$H/$f"; done 2>&1 | rev; grep -rl SECRET "$H" 2>&1 | rev; true`
	d := commandIn(t, scope, script, false)
	pol, err := policy.Default("")
	if err != nil {
		t.Fatal(err)
	}
	pol.AllowedRoots = []string{base}
	pol.Sandbox.HomeVisible = []string{home + "/.npmrc", home + "/.netrc", home + "/.nvm", home + "/.pyenv", home + "/.cargo"}
	pol.Sandbox.Caches = nil
	now := time.Now()
	p, err := Build(t.Context(), d, Options{StateDir: filepath.Join(base, "state"), Policy: pol, Decision: pol.Decide(d, now),
		File: "d.yaml", Now: func() time.Time { return now }, Homes: []string{home}, UserHome: home})
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(p.Commands[0].Stdout, "\n")
	for i, l := range lines {
		r := []rune(l)
		for a, b := 0, len(r)-1; a < b; a, b = a+1, b-1 {
			r[a], r[b] = r[b], r[a]
		}
		lines[i] = string(r)
	}
	out := strings.Join(lines, "\n")
	t.Logf("the command saw:\n%s", out)
	for _, w := range []string{"save-exact=true", "prefix=/opt/x", "//registry.npmjs.org/:_authToken=" + redact.PlaceholderPrefix,
		"//npm.corp.example/:_authToken=" + redact.PlaceholderPrefix, "https://u:" + redact.PlaceholderPrefix, "the node tool", "the cargo tool"} {
		if !strings.Contains(out, w) {
			t.Errorf("the command did not see %q", w)
		}
	}
	for _, s := range []string{"NPMRC-SECRET", "NVM-SECRET", "PYENV-SECRET", "CARGO-SECRET", "KEY-SECRET", "SECRET"} {
		if strings.Contains(out, s) {
			t.Errorf("the command saw %s", s)
		}
	}

	// A second scope that is a link the agent planted to ~/.ssh (the
	// first, the workdir, a plain directory): refused before anything
	// runs, not shown through the link.
	link := filepath.Join(base, "l")
	mustDo(t, os.Symlink(filepath.Join(home, ".ssh"), link))
	d = commandIn(t, scope, `cat `+link+`/id_key | rev; touch ran`, false)
	d.Scope.Filesystem.Paths = append(d.Scope.Filesystem.Paths, link)
	p, err = Build(t.Context(), d, Options{StateDir: filepath.Join(base, "state"), Policy: pol, Decision: pol.Decide(d, now),
		File: "d.yaml", Now: func() time.Time { return now }, Homes: []string{home}, UserHome: home})
	var probs problem.List
	if !errors.As(err, &probs) || probs[0].Rule != RuleScopeCredentialStore || probs[0].Field != "scope.filesystem.paths[1]" {
		t.Fatalf("a scope linked to ~/.ssh: %v, %v; want %s", p, err, RuleScopeCredentialStore)
	}
	t.Log(probs)
}

func TestConfigViewsNobody(t *testing.T) {
	t.Parallel()
	if os.Getenv("ACT_PLAN_VIEWS_CHILD") != "" {
		t.Skip("in the child")
	}
	dir := nobodyDir(t)
	if out := runAsNobody(t, dir, "TestConfigViews", "ACT_PLAN_VIEWS_CHILD=1"); strings.Contains(string(out), "--- SKIP") {
		t.Error("skipped as uid 65534")
	}
}

// TestCredentialsGiven: a command that sends the placeholder of its
// ~/.npmrc copy to the registry the file gives the token to reaches it
// with the real token, where the policy names that host in
// network.credential_hosts: the egress proxy terminates that host's
// tunnel with the run's CA, which the sandbox trusts (curl through
// CURL_CA_BUNDLE), and puts the token in. The command never sees the
// token. Without the policy's naming, the placeholder goes out as it is.
// As root, and by TestCredentialsGivenNobody as uid 65534.
func TestCredentialsGiven(t *testing.T) {
	if err := isolate.Available(); err != nil {
		t.Skipf("no isolation here: %v", err)
	}
	if _, err := exec.LookPath("curl"); err != nil {
		t.Skip("curl is not installed")
	}
	var mu sync.Mutex
	var got []string
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		got = append(got, r.Header.Get("Authorization"))
		mu.Unlock()
		io.WriteString(w, "registry answered")
	}))
	defer srv.Close()
	roots := x509.NewCertPool()
	roots.AddCert(srv.Certificate())
	egressUpstreamRoots = roots
	defer func() { egressUpstreamRoots = nil }()
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())

	base, err := os.MkdirTemp("/var/tmp", "act-creds-")
	if err != nil {
		t.Skipf("no writable /var/tmp: %v", err)
	}
	t.Cleanup(func() { makeRemovable(base); os.RemoveAll(base) })
	mustDo(t, os.Chmod(base, 0o755))
	home := filepath.Join(base, "home")
	mustDo(t, os.MkdirAll(home, 0o755))
	mustDo(t, os.WriteFile(filepath.Join(home, ".npmrc"), []byte("//127.0.0.1:"+port+"/:_authToken=REAL-NPM-TOKEN\n"), 0o600))
	scope := filepath.Join(base, "s")
	mustDo(t, os.Mkdir(scope, 0o755))

	for _, named := range []bool{true, false} {
		t.Run(fmt.Sprint("named=", named), func(t *testing.T) {
			mu.Lock()
			got = nil
			mu.Unlock()
			insecure := ""
			if !named {
				insecure = "-k " // the tunnel is not the proxy's: the test server's own certificate
			}
			script := `tok=$(sed -n 's/.*_authToken=//p' ` + home + `/.npmrc); curl -fsS ` + insecure + `--max-time 20 -H "Authorization: Bearer $tok" https://127.0.0.1:` + port + `/; echo; env | grep -c CA_BUNDLE; cat ` + home + `/.npmrc | rev`
			d := commandIn(t, scope, script, false)
			d.Sandbox.AllowNetwork = true
			d.Scope.Network.Required = true
			d.Effects.Network = true
			pol, err := policy.Default("")
			if err != nil {
				t.Fatal(err)
			}
			pol.AllowedRoots = []string{base}
			pol.Network.SandboxNetwork = true
			pol.Network.AllowedHosts = []string{"127.0.0.1"}
			if named {
				pol.Network.CredentialHosts = []string{"127.0.0.1"}
			}
			pol.Sandbox.HomeVisible = []string{home + "/.npmrc"}
			pol.Sandbox.Caches = nil
			now := time.Now()
			p, err := Build(t.Context(), d, Options{StateDir: filepath.Join(base, "state"), Policy: pol, Decision: pol.Decide(d, now),
				File: "d.yaml", Now: func() time.Time { return now }, Homes: []string{home}, UserHome: home})
			if err != nil {
				t.Fatal(err)
			}
			c := p.Commands[0]
			t.Logf("stdout:\n%s\nstderr:\n%s\negress: %q", c.Stdout, c.Stderr, c.Egress)
			if strings.Contains(c.Stdout+c.Stderr, "NEKOT-MPN-LAER") || strings.Contains(c.Stdout+c.Stderr, "REAL-NPM-TOKEN") {
				t.Error("the command saw the token")
			}
			mu.Lock()
			defer mu.Unlock()
			switch {
			case len(got) != 1:
				t.Fatalf("%d requests reached the registry, want 1", len(got))
			case named && got[0] != "Bearer REAL-NPM-TOKEN":
				t.Errorf("the registry got %q, want the real token", got[0])
			case !named && !strings.HasPrefix(got[0], "Bearer "+redact.PlaceholderPrefix):
				t.Errorf("the registry got %q, want the placeholder", got[0])
			}
		})
	}
}

func TestCredentialsGivenNobody(t *testing.T) {
	t.Parallel()
	if os.Getenv("ACT_PLAN_CREDS_CHILD") != "" {
		t.Skip("in the child")
	}
	dir := nobodyDir(t)
	if out := runAsNobody(t, dir, "TestCredentialsGiven", "ACT_PLAN_CREDS_CHILD=1"); strings.Contains(string(out), "--- SKIP") {
		t.Error("skipped as uid 65534")
	}
}

// TestCredentialsNpm: a PACKAGE_INSTALL with npm from a private registry
// that wants a token (a fake one, over TLS, answering 401 without it)
// installs, with the token only in the person's ~/.npmrc: npm reads the
// sandbox's copy (a placeholder), trusts the run's CA through
// NODE_EXTRA_CA_CERTS, and the egress proxy puts the token in. As root,
// and by TestCredentialsNpmNobody as uid 65534.
func TestCredentialsNpm(t *testing.T) {
	if err := isolate.Available(); err != nil {
		t.Skipf("no isolation here: %v", err)
	}
	if _, err := exec.LookPath("npm"); err != nil {
		t.Skip("npm is not installed")
	}
	// The package: a tarball of package/package.json.
	var tgz bytes.Buffer
	gz := gzip.NewWriter(&tgz)
	tw := tar.NewWriter(gz)
	pj := []byte(`{"name":"privpkg","version":"1.0.0","main":"index.js"}`)
	mustDo(t, tw.WriteHeader(&tar.Header{Name: "package/package.json", Mode: 0o644, Size: int64(len(pj))}))
	tw.Write(pj)
	tw.Close()
	gz.Close()
	sum := sha512.Sum512(tgz.Bytes())
	sha1sum := sha1.Sum(tgz.Bytes())
	var mu sync.Mutex
	var auths []string
	var srv *httptest.Server
	srv = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		auths = append(auths, r.Method+" "+r.URL.Path+" "+r.Header.Get("Authorization"))
		mu.Unlock()
		if r.Header.Get("Authorization") != "Bearer REAL-NPM-TOKEN" {
			w.WriteHeader(http.StatusUnauthorized)
			io.WriteString(w, `{"error":"unauthorized"}`)
			return
		}
		switch r.URL.Path {
		case "/privpkg":
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, `{"name":"privpkg","dist-tags":{"latest":"1.0.0"},"versions":{"1.0.0":{"name":"privpkg","version":"1.0.0","dist":{"tarball":"%s/privpkg/-/privpkg-1.0.0.tgz","shasum":"%x","integrity":"sha512-%s"}}}}`,
				srv.URL, sha1sum, base64.StdEncoding.EncodeToString(sum[:]))
		case "/privpkg/-/privpkg-1.0.0.tgz":
			w.Write(tgz.Bytes())
		default:
			http.NotFound(w, r)
		}
	}))
	// A registry by name, as real ones are: localhost (the proxy
	// resolves it, and its addresses are named in allowed_hosts).
	cert, roots := localhostCert(t)
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{cert}}
	srv.StartTLS()
	defer srv.Close()
	srv.URL = strings.Replace(srv.URL, "127.0.0.1", "localhost", 1)
	egressUpstreamRoots = roots
	defer func() { egressUpstreamRoots = nil }()

	base, err := os.MkdirTemp("/var/tmp", "act-npm-creds-")
	if err != nil {
		t.Skipf("no writable /var/tmp: %v", err)
	}
	t.Cleanup(func() { makeRemovable(base); os.RemoveAll(base) })
	mustDo(t, os.Chmod(base, 0o755))
	home := filepath.Join(base, "home")
	mustDo(t, os.MkdirAll(home, 0o755))
	u := strings.TrimPrefix(srv.URL, "https:")
	mustDo(t, os.WriteFile(filepath.Join(home, ".npmrc"), []byte("registry="+srv.URL+"/\n"+u+"/:_authToken=REAL-NPM-TOKEN\nsave-exact=true\n"), 0o600))
	scope := filepath.Join(base, "s")
	mustDo(t, os.Mkdir(scope, 0o755))
	mustDo(t, os.WriteFile(filepath.Join(scope, "package.json"), []byte(`{"name":"app","version":"1.0.0"}`), 0o644))
	text := `intent_summary: Install the private package.
risk_level: MEDIUM
action_type: PACKAGE_INSTALL
scope: {filesystem: {paths: [` + js(scope) + `], recursive: true}, network: {required: true}, ui: {required: false}}
resources: {max_cpu_ms: 60000, max_memory_mb: 1024, max_disk_mb: 64, max_duration_ms: 120000}
sandbox: {required: true, allow_network: true, max_runs: 1}
rollback: {supported: true, rollback_scope: declared_effects_only}
confirmation: {required: false, reason: "", cooldown_on_repeat: false}
audit: {log: true, log_level: SUMMARY, retain_days: 30}
preconditions: {paths_exist: [], network_available: false, user_idle: false}
effects: {filesystem: {create: [` + js(scope+"/**") + `], modify: [` + js(scope+"/**") + `], delete: []}, network: true, system_state_change: false}
operation: {manager: npm, packages: [privpkg], workdir: ` + js(scope) + `}
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
	pol.Network.AllowedHosts = []string{"localhost", "127.0.0.1", "::1"}
	pol.Network.CredentialHosts = []string{"localhost"}
	pol.Sandbox.HomeVisible = []string{home + "/.npmrc"}
	pol.Sandbox.Caches = nil
	now := time.Now()
	p, err := Build(t.Context(), d, Options{StateDir: filepath.Join(base, "state"), Policy: pol, Decision: pol.Decide(d, now),
		File: "d.yaml", Now: func() time.Time { return now }, Homes: []string{home}, UserHome: home})
	mu.Lock()
	t.Logf("the registry saw: %q", auths)
	mu.Unlock()
	if err != nil {
		t.Fatal(err)
	}
	c := p.Commands[0]
	if strings.Contains(c.Stdout+c.Stderr, "REAL-NPM-TOKEN") {
		t.Error("npm printed the token")
	}
	var installed, exact bool
	for _, ch := range p.Changes {
		installed = installed || strings.HasSuffix(ch.Path, "node_modules/privpkg/package.json")
	}
	layer, err := os.ReadFile(filepath.Join(UpperDir(filepath.Join(base, "state"), p.ID), scope, "package.json"))
	var pkg struct {
		Dependencies map[string]string `json:"dependencies"`
	}
	exact = err == nil && json.Unmarshal(layer, &pkg) == nil && pkg.Dependencies["privpkg"] == "1.0.0" // not ^1.0.0
	if !installed {
		t.Errorf("privpkg is not installed: %v\n%s\n%s", p.Changes, c.Stdout, c.Stderr)
	}
	if !exact {
		t.Errorf("package.json does not pin privpkg exactly (save-exact from the ~/.npmrc copy): %s %v", layer, err)
	}
}

func TestCredentialsNpmNobody(t *testing.T) {
	t.Parallel()
	if os.Getenv("ACT_PLAN_NPM_CHILD") != "" {
		t.Skip("in the child")
	}
	dir := nobodyDir(t)
	if out := runAsNobody(t, dir, "TestCredentialsNpm", "ACT_PLAN_NPM_CHILD=1"); strings.Contains(string(out), "--- SKIP") {
		t.Error("skipped as uid 65534")
	}
}

// localhostCert is a self-signed certificate for the name localhost, and
// a pool that trusts it.
func localhostCert(t *testing.T) (tls.Certificate, *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), DNSNames: []string{"localhost"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IsCA: true, BasicConstraintsValid: true}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	c, _ := x509.ParseCertificate(der)
	pool := x509.NewCertPool()
	pool.AddCert(c)
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, pool
}
