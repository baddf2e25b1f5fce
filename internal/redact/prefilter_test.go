package redact

import (
	"math/rand/v2"
	"strings"
	"testing"
)

// reference is String without its prefilters: every pattern on all of s.
func reference(s string) string {
	p := patterns()
	s = p.privateKey.ReplaceAllString(s, Mask)
	s = p.authHeader.ReplaceAllStringFunc(s, func(m string) string {
		sub := p.authHeader.FindStringSubmatch(m)
		if isPlaceholder(sub[2]) {
			return m
		}
		return sub[1] + Mask
	})
	s = p.urlCreds.ReplaceAllStringFunc(s, func(m string) string {
		sub := p.urlCreds.FindStringSubmatch(m)
		if isPlaceholder(sub[2]) {
			return m
		}
		return sub[1] + Mask + sub[3]
	})
	s = p.keyed.ReplaceAllStringFunc(s, func(m string) string {
		sub := p.keyed.FindStringSubmatch(m)
		if sub[2] == Mask || sub[2] == `"`+Mask+`"` || isPlaceholder(sub[2]) || strings.HasPrefix(sub[2], "${") {
			return m
		}
		return m[:len(m)-len(sub[1])-len(sub[2])] + sub[1] + Mask
	})
	for _, re := range p.shapes {
		s = re.ReplaceAllString(s, Mask)
	}
	return s
}

// fragments are pieces of secrets, of their keys and of what is near
// them, in every case, with the two non-ASCII runes (?i) folds to ASCII.
var fragments = []string{
	"password", "PASSWORD", "pa\u017fsword", "Passwd", "passphrase", "secret", "SeCrEt", "token", "to\u212Aen", "TOKEN",
	"api_key", "API-KEY", "apikey", "access_key", "private-key", "client_secret", "credentials", "credential",
	"=", ":", " ", "\n", "\"", "'", "${", "}", ",", ";", "/", "@", "://", "https", "user", "hunter2", "x",
	"Authorization:", "AUTHORIZATION:", "authori\u017fation: ", "Bearer ", "Basic ", "token ",
	"-----BEGIN RSA PRIVATE KEY-----", "-----END RSA PRIVATE KEY-----", "MIIE",
	"AKIAABCDEFGHIJKLMNOP", "ASIA", "ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_", "xoxb-", "xoxp-", "sk_live_", "rk_test_",
	"AIza", "npm_", "eyJ", "eyJhbGciOiJIUzI1", ".", "_", "-", "0123456789abcdefABCDEF0123456789abcdef",
	"[REDACTED]", Mask,
}

// TestPrefilters: String with its prefilters redacts exactly what every
// pattern on the whole text does, over random texts made of fragments of
// secrets and keys.
func TestPrefilters(t *testing.T) {
	if len(shapeLiterals) != len(patterns().shapes) {
		t.Fatalf("%d shapes, literals for %d", len(patterns().shapes), len(shapeLiterals))
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range 20000 {
		var b strings.Builder
		for range 1 + rng.IntN(12) {
			b.WriteString(fragments[rng.IntN(len(fragments))])
		}
		s := b.String()
		if got, want := String(s), reference(s); got != want {
			t.Fatalf("text %d %q:\nString    %q\nreference %q", i, s, got, want)
		}
	}
}

func FuzzPrefilters(f *testing.F) {
	for _, s := range fragments {
		f.Add(s)
	}
	f.Add("password=hunter2 Authorization: Bearer abc https://u:p@h ghp_" + strings.Repeat("a", 36))
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := String(s), reference(s); got != want {
			t.Fatalf("%q:\nString    %q\nreference %q", s, got, want)
		}
	})
}
