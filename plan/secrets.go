package plan

import (
	"bytes"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"github.com/act-project/act/descriptors"
	"github.com/act-project/act/internal/credstore"
	"github.com/act-project/act/internal/egress"
	"github.com/act-project/act/internal/pathglob"
	"github.com/act-project/act/internal/problem"
	"github.com/act-project/act/internal/redact"
	"github.com/act-project/act/policy"
	"github.com/act-project/act/sandbox/isolate"
	"golang.org/x/sys/unix"
)

// RuleScopeCredentialStore: a scope of a plan that runs commands is, holds
// or lies in a credential store, found where the static rules could not
// see it: through a symbolic link, or a tool's configuration that holds a
// secret now.
const RuleScopeCredentialStore = "plan.scope-credential-store"

// CheckScopeSecrets refuses, before anything runs, a plan of d whose
// commands would see a credential store through a scope
// (docs/sandbox-filesystem.md, "What is hidden"): a scope path that is,
// holds or lies in one under homes (the static rule
// forbidden.credential-store, checked here again on each scope's real
// path, its symbolic links resolved), or that takes in a tool's
// configuration under userHome that holds a secret now (a ~/.gitconfig
// with a token in a URL). A descriptor that runs nothing in the sandbox
// is not concerned: act itself carries out its operations.
func CheckScopeSecrets(d *descriptors.Descriptor, homes []string, userHome string) problem.List {
	if !NeedsSandbox(d) {
		return nil
	}
	homes = slices.Clone(homes)
	if userHome != "" && !slices.Contains(homes, userHome) {
		homes = append(homes, userHome)
	}
	var configs []credstore.Found
	if isHomeDir(userHome) {
		configs = credstore.HomeConfigs(filepath.Clean(userHome))
	}
	var probs problem.List
	for i, s := range d.Scope.Filesystem.Paths {
		if !filepath.IsAbs(s) {
			continue
		}
		s = filepath.Clean(s)
		real := resolvedScope(s)
		f := problem.FieldPath("scope", "filesystem", "paths", fmt.Sprint(i))
		stores := credstore.ScopeTakesIn(s, homes)
		if real != s {
			stores = append(stores, credstore.ScopeTakesIn(real, homes)...)
		}
		if len(stores) > 0 {
			via := ""
			if real != s {
				via = fmt.Sprintf(" (it is %s)", real)
			}
			probs = append(probs, problem.Problem{Rule: RuleScopeCredentialStore, Field: f, Layer: problem.Rejected,
				Message: fmt.Sprintf("the scope path %q%s takes in the credential store %s, which a command in the sandbox would read: nothing ran", s, via, stores[0])})
			continue
		}
		for _, c := range configs {
			under := pathglob.Join(real, "**")
			if !pathglob.Match(under, c.Path) && !pathglob.Match(pathglob.Join(s, "**"), c.Path) {
				continue
			}
			if held, why := configHoldsSecret(userHome, c); held {
				probs = append(probs, problem.Problem{Rule: RuleScopeCredentialStore, Field: f, Layer: problem.Rejected,
					Message: fmt.Sprintf("the scope path %q takes in %s, which %s, and a command in the sandbox would read it: nothing ran", s, c.Path, why)})
				break
			}
		}
	}
	return probs
}

// resolvedScope is the scope path s (a path or a glob) with the symbolic
// links of its literal leading directories resolved, as far as they
// exist: the tree the sandbox's overlay shows at s.
func resolvedScope(s string) string {
	prefix := pathglob.Prefix(s)
	rest := strings.TrimPrefix(strings.TrimPrefix(s, prefix), "/")
	existing, missing := prefix, ""
	for {
		r, err := filepath.EvalSymlinks(existing)
		if err == nil {
			out := filepath.Join(r, missing, rest)
			if rest == "" && missing == "" {
				out = r
			}
			return filepath.Clean(out)
		}
		if !errors.Is(err, fs.ErrNotExist) || existing == "/" {
			return s
		}
		missing = filepath.Join(filepath.Base(existing), missing)
		existing = filepath.Dir(existing)
	}
}

// configHoldsSecret reports whether the configuration c under home holds
// a secret now, and what to say of it; one that cannot be read safely
// (readConfig) counts as holding one. A missing one holds none.
func configHoldsSecret(home string, c credstore.Found) (bool, string) {
	data, err := readConfig(home, c.Path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return false, ""
	case err != nil:
		return true, "act cannot read safely (" + err.Error() + ")"
	case redact.HoldsSecret(c.Format, data):
		return true, "holds a secret"
	}
	return false, ""
}

// readConfig reads the configuration file p below home without following
// a symbolic link anywhere below home (openat2 RESOLVE_NO_SYMLINKS): the
// agent, as the same user, may plant one there to have act read another
// file (a private key) and show it as a configuration. The file must be a
// regular file of the user act runs as, at most redact.MaxConfig bytes.
func readConfig(home, p string) ([]byte, error) {
	rel, err := filepath.Rel(home, p)
	if err != nil || rel == "." || strings.HasPrefix(rel, "../") || rel == ".." {
		return nil, fmt.Errorf("%s is not below %s", p, home)
	}
	dir, err := unix.Open(home, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: home, Err: err}
	}
	defer unix.Close(dir)
	fd, err := unix.Openat2(dir, rel, &unix.OpenHow{
		Flags:   unix.O_RDONLY | unix.O_CLOEXEC | unix.O_NOFOLLOW | unix.O_NONBLOCK | unix.O_NOCTTY,
		Resolve: unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_BENEATH | unix.RESOLVE_NO_MAGICLINKS,
	})
	switch {
	case errors.Is(err, unix.ELOOP):
		return nil, fmt.Errorf("%s is, or lies under, a symbolic link, which act does not follow", p)
	case err != nil:
		return nil, &fs.PathError{Op: "open", Path: p, Err: err}
	}
	f := os.NewFile(uintptr(fd), p)
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	st, _ := fi.Sys().(*syscall.Stat_t)
	switch {
	case !fi.Mode().IsRegular():
		return nil, fmt.Errorf("%s is not a regular file", p)
	case st == nil || int(st.Uid) != os.Geteuid():
		return nil, fmt.Errorf("%s does not belong to the user act runs as", p)
	case fi.Size() > redact.MaxConfig:
		return nil, fmt.Errorf("%s is larger than %d bytes", p, redact.MaxConfig)
	}
	data, err := io.ReadAll(io.LimitReader(f, redact.MaxConfig+1))
	if err != nil {
		return nil, err
	}
	if len(data) > redact.MaxConfig {
		return nil, fmt.Errorf("%s is larger than %d bytes", p, redact.MaxConfig)
	}
	return data, nil
}

// isConfig reports whether p is a tool's configuration below home that
// mixes settings and secrets (credstore.Configs): shown as a copy with
// placeholders, never as it is.
func isConfig(home, p string) bool {
	for _, c := range credstore.Configs {
		if pathglob.Match(pathglob.Join(filepath.Clean(home), c.Rel), p) {
			return true
		}
	}
	return false
}

// ConfigViews are the tools' configurations below realHome the sandbox
// shows as copies with placeholders for their secrets
// (docs/sandbox-filesystem.md, "Configurations with secrets"): each of
// credstore.Configs that visible (the policy's sandbox.home_visible) names
// or that lies in a directory of binds, and not in a scope (which shows
// the real tree: CheckScopeSecrets refused a scope that would show one
// holding a secret).
func ConfigViews(realHome string, visible, binds, scopes []string) []credstore.Found {
	if !isHomeDir(realHome) {
		return nil
	}
	realHome = filepath.Clean(realHome)
	var out []credstore.Found
	for _, c := range credstore.HomeConfigs(realHome) {
		shown := slices.ContainsFunc(visible, func(v string) bool { return filepath.Clean(v) == c.Path }) ||
			slices.ContainsFunc(binds, func(b string) bool { return pathglob.Within(c.Path, b) })
		inScope := slices.ContainsFunc(scopes, func(s string) bool {
			return pathglob.CoversPath(filepath.Clean(s), c.Path)
		})
		if shown && !inScope {
			out = append(out, c)
		}
	}
	return out
}

// A ConfigSecret is a secret a configuration's copy holds a placeholder
// for: what the egress proxy may put back in a request to its host.
type ConfigSecret struct {
	redact.Secret
	// File is the configuration it was taken from.
	File string
}

// configFiles makes the copies of views for the sandbox (isolate.Spec.Files),
// read without following a symbolic link (readConfig), and returns the
// secrets they replaced. A view that is not there shows nothing; one that
// cannot be read safely or as its format (a symbolic link, another
// user's, not text) is hidden instead: its path joins hide, so that a
// directory the sandbox shows does not show it as it is.
func configFiles(realHome string, views []credstore.Found, hide []string) ([]isolate.File, []ConfigSecret, []string) {
	var files []isolate.File
	var secrets []ConfigSecret
	for _, v := range views {
		data, err := readConfig(realHome, v.Path)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		var out []byte
		var found []redact.Secret
		ok := err == nil
		if ok {
			out, found, ok = redact.Config(v.Format, data, nil)
		}
		if !ok || len(files) == isolate.MaxFiles-2 { // two for the egress proxy's CA
			if !slices.Contains(hide, v.Path) {
				hide = append(hide, v.Path)
			}
			continue
		}
		files = append(files, isolate.File{Path: v.Path, Data: out})
		for _, s := range found {
			secrets = append(secrets, ConfigSecret{Secret: s, File: v.Path})
		}
	}
	return files, secrets, hide
}

// egressUpstreamRoots verify the hosts the egress proxy gives credentials
// to (nil: the system's roots); tests set it.
var egressUpstreamRoots *x509.CertPool

// giveCredentials sets up eg (nil: the command has no network) to give
// the secrets of the configuration copies to their hosts where the policy
// names them (network.credential_hosts, docs/sandbox.md, "Credentials"):
// a per-run CA that may sign for those hosts alone, its certificate and
// the system's roots with it added to files for the sandbox to trust.
// The real values stay in act's memory.
func giveCredentials(eg *egress.Proxy, secrets []ConfigSecret, pol *policy.Policy, files []isolate.File) (*egress.Proxy, []isolate.File, error) {
	if eg == nil {
		return nil, files, nil
	}
	var hosts []string
	for _, s := range secrets {
		h := strings.ToLower(s.Host)
		if h == "" || !pol.CredentialHostAllowed(h) {
			continue
		}
		eg.Credentials = append(eg.Credentials, egress.Credential{Placeholder: s.Placeholder, Value: s.Value, Host: h})
		if !slices.Contains(hosts, h) {
			hosts = append(hosts, h)
		}
	}
	if len(hosts) == 0 {
		return eg, files, nil
	}
	ca, err := egress.NewCA(hosts)
	if err != nil {
		return nil, nil, fmt.Errorf("the egress proxy's CA: %w", err)
	}
	eg.CA, eg.UpstreamRoots = ca, egressUpstreamRoots
	bundle := append(systemRoots(isolate.MaxFileBytes-len(ca.PEM)-1), '\n')
	files = append(files, isolate.File{Path: CAFile, Data: ca.PEM}, isolate.File{Path: CABundleFile, Data: append(bundle, ca.PEM...)})
	return eg, files, nil
}

// systemRoots is the system's bundle of trusted certificates (the first
// of the usual places), at most max bytes; nil where there is none.
func systemRoots(max int) []byte {
	for _, p := range []string{"/etc/ssl/certs/ca-certificates.crt", "/etc/pki/tls/certs/ca-bundle.crt", "/etc/ssl/ca-bundle.pem",
		"/etc/pki/tls/cacert.pem", "/etc/pki/ca-trust/extracted/pem/tls-ca-bundle.pem", "/etc/ssl/cert.pem"} {
		f, err := os.Open(p)
		if err != nil {
			continue
		}
		data, err := io.ReadAll(io.LimitReader(f, int64(max)+1))
		f.Close()
		if err == nil && len(data) <= max && bytes.IndexByte(data, 0) < 0 {
			return data
		}
	}
	return nil
}
