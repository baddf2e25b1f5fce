package credstore

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestSecret: a store and what lies in it, a configuration that exists to
// hold credentials, and a host secret are secrets; a settings file and its
// neighbours are not.
func TestSecret(t *testing.T) {
	homes := []string{"/home/u", "/home/*"}
	for p, want := range map[string]bool{
		"/home/u/.ssh": true, "/home/u/.ssh/id_ed25519": true, "/home/x/.aws/credentials": true,
		"/home/u/.npmrc": true, "/home/u/.netrc": true, "/home/u/.config/git/credentials": true,
		"/home/u/.claude/.credentials.json": true, "/etc/shadow": true, "/srv/tls/site.key": true,
		"/home/u/.gitconfig": false, "/home/u/.config/pip/pip.conf": false, "/home/u/.config": false,
		"/home/u/.sshrc": false, "/home/u/proj/.npmrc": false,
	} {
		if got := Secret(p, homes); got != want {
			t.Errorf("Secret(%s) = %v, want %v", p, got, want)
		}
	}
}

// TestScopeTakesIn: a scope that is, holds or lies in a store takes it in,
// a glob too; one beside it does not; a private key by its name anywhere
// is graded, not a place a scope takes in.
func TestScopeTakesIn(t *testing.T) {
	homes := []string{"/home/u"}
	for scope, want := range map[string]bool{
		"/home/u/.ssh": true, "/home/u/.ssh/keys": true, "/home/u/.config": true, "/home/u/.*": true,
		"/home/u/.cargo": true, "/home/u/proj": false, "/home/u/.config/nvim": false, "/srv/app": false,
		"/etc/ssl": true, "/etc/nginx": false,
	} {
		if got := len(ScopeTakesIn(scope, homes)) > 0; got != want {
			t.Errorf("ScopeTakesIn(%s) = %v, want %v", scope, ScopeTakesIn(scope, homes), want)
		}
	}
}

// TestHomeConfigs: plain paths whether there or not, globs as they match
// now.
func TestHomeConfigs(t *testing.T) {
	home := t.TempDir()
	for _, rel := range []string{".nvm/versions/node/v20.1.0/etc/npmrc", ".nvm/versions/node/v22.0.0/etc/npmrc", ".pyenv/versions/3.12.0/pip.conf"} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(home, rel)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(home, rel), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var got []string
	for _, f := range HomeConfigs(home) {
		rel, _ := filepath.Rel(home, f.Path)
		got = append(got, rel)
	}
	for _, want := range []string{".npmrc", ".gitconfig", ".nvm/versions/node/v20.1.0/etc/npmrc", ".nvm/versions/node/v22.0.0/etc/npmrc", ".pyenv/versions/3.12.0/pip.conf"} {
		if !slices.Contains(got, want) {
			t.Errorf("HomeConfigs has no %s: %q", want, got)
		}
	}
	if slices.Contains(got, ".pyenv/versions/*/envs/*/pip.conf") {
		t.Errorf("an unmatched glob is listed: %q", got)
	}
}
