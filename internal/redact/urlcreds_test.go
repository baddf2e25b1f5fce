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

func TestPII(t *testing.T) {
	for _, s := range []string{
		"contact alice.smith+act@example.co.uk for access",
		"call +1 415-555-0132 now",
		"tel (030) 1234 5678",
	} {
		got := PII(s)
		for _, secret := range []string{"alice.smith", "555-0132", "1234 5678"} {
			if strings.Contains(got, secret) {
				t.Errorf("PII(%q) = %q: %q is still there", s, got, secret)
			}
		}
		if !strings.Contains(got, Mask) {
			t.Errorf("PII(%q) = %q: nothing masked", s, got)
		}
	}
	for _, s := range []string{"build 2026 took 12 ms, exit 0", "on 2026-11-24 at 10.0.0.1", "version 1.2.3"} {
		if got := PII(s); got != s {
			t.Errorf("PII masked ordinary output: %q", got)
		}
	}
}
