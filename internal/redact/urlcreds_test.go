package redact

import (
	"strings"
	"testing"
)

// TestURLCredentials: a registry's credentials in a URL — in a package
// manager's setting, its output, or a lock file it wrote — never survive.
func TestURLCredentials(t *testing.T) {
	for _, s := range []string{
		"GOPROXY=https://u:secret@proxy.example/x",
		`"resolved": "https://user:secret@registry.example/pkg/-/pkg-1.0.0.tgz"`,
		"pip install --index-url https://alice:secret@pypi.example/simple pkg",
		"npm_config_registry=https://bob:secret@npm.example/",
	} {
		if got := String(s); strings.Contains(got, "secret") {
			t.Errorf("String(%q) = %q: the password is still there", s, got)
		}
	}
}
