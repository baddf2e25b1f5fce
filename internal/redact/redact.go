// Package redact removes secrets from captured command output before it is
// stored in a plan, shown or written to the audit log (docs/lifecycle.md): values
// whose key names a secret ("password=…", "api_key: …", "Authorization:
// Bearer …"), and well-known token shapes wherever they stand (private key
// blocks, AWS access keys, GitHub, Slack, Stripe and Google tokens, JWTs,
// credentials in URLs).
//
// Redaction is line-oriented and never fails; what it removes is replaced
// by [Mask], so a reader sees that something was there.
package redact

import (
	"regexp"
	"strings"
	"sync"
)

// Mask replaces every secret.
const Mask = "[REDACTED]"

// patterns are compiled on first use, not at start-up: every act process
// links this package, few redact anything, and compiling them costs a
// quarter of a millisecond.
var patterns = sync.OnceValue(func() *pats {
	return &pats{
		// A PEM private key block, across lines.
		privateKey: regexp.MustCompile(`(?s)-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----.*?(-----END [A-Z0-9 ]*PRIVATE KEY-----|\z)`),

		// key = value, key: value, "key": "value", KEY=value — where the key
		// names a secret. The value runs to the end of a quoted string, or to
		// whitespace, a comma, a semicolon or a closing brace.
		// A key right after a "/" is the end of a path ("/etc/passwd: …"), not
		// a key: the leading group keeps it out.
		keyed: regexp.MustCompile(`(?i)(?:^|[^/a-z0-9_.-])((?:[a-z0-9_.-]*(?:passw(?:or)?d|passphrase|secret|token|api[_-]?key|apikey|access[_-]?key|private[_-]?key|client[_-]?secret|credentials?)[a-z0-9_.-]*)["']?\s*[:=]\s*)("[^"\n]*"|'[^'\n]*'|[^\s,;}"']+)`),

		// HTTP authorization headers.
		authHeader: regexp.MustCompile(`(?i)(authorization:\s*(?:bearer|basic|token)?\s*)([^\s,;]+)`),

		// Credentials in URLs: scheme://user:password@host.
		urlCreds: regexp.MustCompile(`([a-zA-Z][a-zA-Z0-9+.-]*://[^\s:/@]+:)([^\s@/]+)(@)`),

		// Token shapes that are secrets wherever they appear.
		shapes: []*regexp.Regexp{
			regexp.MustCompile(`\b(?:AKIA|ASIA)[0-9A-Z]{16}\b`),                                     // AWS access key id
			regexp.MustCompile(`\bgh[pousr]_[A-Za-z0-9]{36,}\b`),                                    // GitHub
			regexp.MustCompile(`\bgithub_pat_[A-Za-z0-9_]{22,}\b`),                                  // GitHub fine-grained
			regexp.MustCompile(`\bxox[abposr]-[A-Za-z0-9-]{10,}\b`),                                 // Slack
			regexp.MustCompile(`\b[sr]k_(?:live|test)_[A-Za-z0-9]{16,}\b`),                          // Stripe
			regexp.MustCompile(`\bAIza[0-9A-Za-z_-]{35}\b`),                                         // Google API key
			regexp.MustCompile(`\bnpm_[A-Za-z0-9]{36}\b`),                                           // npm
			regexp.MustCompile(`\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\b`), // JWT
		},
	}
})

type pats struct {
	privateKey, keyed, authHeader, urlCreds *regexp.Regexp
	shapes                                  []*regexp.Regexp
}

// String returns s with every secret replaced by [Mask].
func String(s string) string {
	p := patterns()
	privateKey, keyed, authHeader, urlCreds, shapes := p.privateKey, p.keyed, p.authHeader, p.urlCreds, p.shapes
	// Each pattern runs only on text holding what any match of it must
	// hold (a literal of it, case folded as (?i) folds): most text holds
	// no secret, and the patterns scan at some hundred bytes a
	// microsecond (a plan of 10,000 files spent 92% of act show here).
	// Folded once: what the replacements below put in (Mask, between
	// what they keep) makes no new key word or header name.
	f := folded(s)
	if strings.Contains(s, "PRIVATE KEY-----") {
		s = privateKey.ReplaceAllString(s, Mask)
	}
	// A placeholder (NewPlaceholder) stands for a secret: it is none.
	if strings.Contains(f, "authorization") {
		s = authHeader.ReplaceAllStringFunc(s, func(m string) string {
			sub := authHeader.FindStringSubmatch(m)
			if isPlaceholder(sub[2]) {
				return m
			}
			return sub[1] + Mask
		})
	}
	if strings.Contains(s, "://") {
		s = urlCreds.ReplaceAllStringFunc(s, func(m string) string {
			sub := urlCreds.FindStringSubmatch(m)
			if isPlaceholder(sub[2]) {
				return m
			}
			return sub[1] + Mask + sub[3]
		})
	}
	if strings.ContainsAny(s, ":=") && containsAny(f, keyedWords) {
		s = keyed.ReplaceAllStringFunc(s, func(m string) string {
			sub := keyed.FindStringSubmatch(m)
			// Nor is the name of a variable a tool expands (${NPM_TOKEN}).
			if sub[2] == Mask || sub[2] == `"`+Mask+`"` || isPlaceholder(sub[2]) || strings.HasPrefix(sub[2], "${") {
				return m
			}
			// m starts with the character before the key, if any.
			return m[:len(m)-len(sub[1])-len(sub[2])] + sub[1] + Mask
		})
	}
	for i, re := range shapes {
		if containsAny(s, shapeLiterals[i]) {
			s = re.ReplaceAllString(s, Mask)
		}
	}
	return s
}

// keyedWords are what a key the keyed pattern matches holds, case
// folded: one of them is in every match.
var keyedWords = []string{"passw", "passphrase", "secret", "token", "api", "access", "private", "credential"}

// shapeLiterals are, for each of the token shapes in order, the strings
// one of which every match holds.
var shapeLiterals = [][]string{
	{"AKIA", "ASIA"},
	{"ghp_", "gho_", "ghu_", "ghs_", "ghr_"},
	{"github_pat_"},
	{"xoxa-", "xoxb-", "xoxp-", "xoxo-", "xoxs-", "xoxr-"},
	{"k_live_", "k_test_"},
	{"AIza"},
	{"npm_"},
	{"eyJ"},
}

func containsAny(s string, subs []string) bool {
	for _, sub := range subs {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}

// folded is s with every letter that (?i) matches to an ASCII letter
// made that lowercase letter: A–Z, and the two other runes Unicode folds
// to one, ſ (to s) and the Kelvin sign (to k).
func folded(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case 'A' <= r && r <= 'Z':
			return r + 'a' - 'A'
		case r == 'ſ':
			return 's'
		case r == '\u212A':
			return 'k'
		}
		return r
	}, s)
}

// Bytes is [String] for byte slices.
func Bytes(b []byte) []byte { return []byte(String(string(b))) }

var piiPatterns = sync.OnceValue(func() []*regexp.Regexp {
	return []*regexp.Regexp{
		// E-mail addresses.
		regexp.MustCompile(`[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}`),
		// Phone numbers: an optional +country code, an area code in
		// parentheses and groups of digits, or groups of three or four
		// digits after the first (so that dates, versions and addresses
		// such as 2026-11-24, 1.2.3 or 10.0.0.1 stay).
		regexp.MustCompile(`(?:\+\d{1,3}[ .-]?)?\(\d{2,5}\)[ .-]?\d{2,4}(?:[ .-]?\d{2,4}){1,3}\b|(?:\+\d{1,3}[ .-]?)?\b\d{2,4}(?:[ .-]\d{3,4}){2,3}\b`),
	}
})

// PII returns s with e-mail addresses and phone numbers replaced by [Mask]
// as well as every secret [String] removes: for captured output, where the
// host policy asks for it (redact.pii).
func PII(s string) string {
	s = String(s)
	for _, re := range piiPatterns() {
		s = re.ReplaceAllString(s, Mask)
	}
	return s
}
