// Package credstore is act's one list of the places credentials live
// (docs/sandbox-filesystem.md, "What is hidden"): credential stores under a
// home, which the sandbox hides and no command's scope may take in; tool
// configurations that mix settings and secrets, which the sandbox shows
// with each secret replaced by a placeholder; and the host's own secrets.
// The static rules (descriptors), the dry run's sandbox (plan) and risk
// grading (gate) all read it from here.
package credstore

import (
	"path/filepath"
	"slices"
	"strings"

	"github.com/act-project/act/internal/pathglob"
	"github.com/act-project/act/internal/redact"
)

// Stores are the credential stores under a home, relative to it: files and
// directories whose whole content is keys, tokens or passwords. The
// sandbox hides each; a command's scope may neither be one nor hold one.
var Stores = []string{
	".ssh", ".aws", ".gnupg", ".git-credentials", ".config/gh", ".config/hub",
	".docker/config.json", ".kube", ".azure", ".config/gcloud", ".password-store",
	".local/share/keyrings", ".vault-token",
	".mozilla", ".config/google-chrome", ".config/chromium", ".config/BraveSoftware",
	".pgpass", ".config/git/credentials", ".my.cnf", ".config/rclone", ".cargo/credentials",
	".cargo/credentials.toml", ".terraform.d/credentials.tfrc.json", ".config/op", ".m2/settings.xml",
	".config/containers/auth.json", ".local/share/containers/auth.json",
	".gem/credentials", ".s3cfg", ".boto", ".oci", ".subversion/auth",
	// The agents' own sign-ins.
	".claude/.credentials.json", ".codex/auth.json",
}

// A Config is a tool's configuration file below a home that mixes
// settings and secrets: the sandbox shows a copy of it with each secret
// replaced by a placeholder, so that the tool behaves inside as outside.
type Config struct {
	// Rel is its path relative to the home; a "*" matches one path
	// element (a toolchain's version directory).
	Rel    string
	Format redact.ConfigFormat
	// Secret: it exists to hold credentials (a scope that takes it in is
	// refused whatever it holds now, as for a store). Otherwise it is a
	// settings file first, and a scope that takes it in is refused only
	// while it holds a secret.
	Secret bool
}

// Configs are the mixed configuration files act knows, by tool.
var Configs = []Config{
	{Rel: ".npmrc", Format: redact.Npmrc, Secret: true},
	{Rel: ".netrc", Format: redact.Netrc, Secret: true},
	{Rel: ".pypirc", Format: redact.INI, Secret: true},
	{Rel: ".config/pip/pip.conf", Format: redact.INI},
	{Rel: ".pip/pip.conf", Format: redact.INI},
	{Rel: ".cargo/config.toml", Format: redact.TOML},
	{Rel: ".cargo/config", Format: redact.TOML},
	{Rel: ".gitconfig", Format: redact.Gitconfig},
	{Rel: ".config/git/config", Format: redact.Gitconfig},
	// Inside the toolchains sandbox.home_visible shows: nvm's global
	// npmrc of each node version, pip's site configuration of each
	// pyenv Python and virtualenv.
	{Rel: ".nvm/versions/node/*/etc/npmrc", Format: redact.Npmrc},
	{Rel: ".nvm/versions/node/*/lib/node_modules/npm/npmrc", Format: redact.Npmrc},
	{Rel: ".pyenv/versions/*/pip.conf", Format: redact.INI},
	{Rel: ".pyenv/versions/*/envs/*/pip.conf", Format: redact.INI},
}

// System are the host's own secrets outside any home: shadow files, sudo
// rules, TLS and SSH host private keys. A "/**/" pattern (a private key
// anywhere) names no place to hide: it is graded when read, not hidden.
var System = []string{"/etc/shadow", "/etc/shadow-", "/etc/gshadow", "/etc/gshadow-",
	"/etc/ssl/private/**", "/etc/ssh/ssh_host_*_key", "/etc/sudoers", "/etc/sudoers.d/**", "/**/*.pem", "/**/*.key"}

// anywhere says whether a System pattern matches anywhere (a private key
// by its name), not in a place of its own.
func anywhere(s string) bool { return strings.HasPrefix(s, "/**/") }

// Secret reports whether path is, or lies in, a credential store or a
// configuration that exists to hold credentials under one of homes (globs
// such as /home/* allowed), or a system secret.
func Secret(path string, homes []string) bool {
	for _, h := range homes {
		for _, rel := range SecretRels() {
			p := h + "/" + rel
			if pathglob.Match(p, path) || pathglob.Match(p+"/**", path) {
				return true
			}
		}
	}
	for _, s := range System {
		if pathglob.Match(s, path) {
			return true
		}
	}
	return false
}

// SecretRels are Stores and the Configs that exist to hold credentials,
// relative to a home: what the sandbox hides below every home it knows.
func SecretRels() []string {
	out := slices.Clone(Stores)
	for _, c := range Configs {
		if c.Secret {
			out = append(out, c.Rel)
		}
	}
	return out
}

// ScopeTakesIn returns the credential stores (and configurations that
// exist to hold credentials) under homes, and the system secrets, that a
// command's scope path scope (a path or a glob) takes in: one it holds, is
// or lies in. A command sees the whole tree below its scope, whatever
// scope.filesystem.recursive says, so the scope counts as recursive. Each
// is named as a pattern (a home of homes joined with the store).
func ScopeTakesIn(scope string, homes []string) []string {
	scope = filepath.Clean(scope)
	under := pathglob.Join(scope, "**")
	var out []string
	add := func(st string) {
		if pathglob.Overlaps(under, pathglob.Join(st, "**")) && !slices.Contains(out, st) {
			out = append(out, st)
		}
	}
	for _, h := range homes {
		if h == "" || h == "/" || !filepath.IsAbs(h) {
			continue
		}
		for _, rel := range SecretRels() {
			add(pathglob.Join(filepath.Clean(h), rel))
		}
	}
	for _, s := range System {
		if !anywhere(s) {
			add(strings.TrimSuffix(s, "/**"))
		}
	}
	return out
}

// SystemPaths are the existing paths of System the sandbox can hide: each
// literal path, the directory of a "dir/**" entry, and what a glob in a
// fixed directory matches now.
func SystemPaths(exists func(string) bool) []string {
	var out []string
	for _, s := range System {
		if anywhere(s) {
			continue
		}
		prefix := pathglob.Prefix(s)
		var found []string
		switch {
		case !pathglob.HasMeta(s):
			found = []string{s}
		case s == prefix+"/**" && prefix != "/":
			found = []string{prefix}
		case prefix != "/":
			found, _ = filepath.Glob(s)
		}
		for _, f := range found {
			if exists(f) {
				out = append(out, f)
			}
		}
	}
	return out
}

// HomeConfigs are the paths of the Configs under home, a glob expanded
// to what it matches now (filepath.Glob); a plain one whether it is
// there or not.
func HomeConfigs(home string) []Found {
	var out []Found
	for _, c := range Configs {
		p := filepath.Join(home, c.Rel)
		if !strings.Contains(c.Rel, "*") {
			out = append(out, Found{Path: p, Config: c})
			continue
		}
		ms, _ := filepath.Glob(p)
		for _, m := range ms {
			out = append(out, Found{Path: m, Config: c})
		}
	}
	return out
}

// A Found is a Config at its path under a home.
type Found struct {
	Path string
	Config
}
