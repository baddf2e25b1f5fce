package redact

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"unicode/utf8"
)

// A ConfigFormat is how a tool's configuration file is written; it
// decides what of the file is a secret (docs/sandbox-filesystem.md,
// "Configurations with secrets").
type ConfigFormat string

// The formats Config reads.
const (
	// Npmrc: npm's key=value lines. A key whose last part (after the
	// ":" of "//host/path/:key") is _authToken, _auth, _password,
	// password or names a token or secret holds one; so does a URL's
	// user information in any value.
	Npmrc ConfigFormat = "npmrc"
	// INI: pip.conf, .pypirc: a key naming a password, token or secret,
	// and a URL's user information in any value or continuation line.
	INI ConfigFormat = "ini"
	// Netrc: the token after "password" or "account".
	Netrc ConfigFormat = "netrc"
	// TOML: cargo's config.toml: a key naming a token, password or
	// secret, and a URL's user information.
	TOML ConfigFormat = "toml"
	// Gitconfig: git's config: a URL's user information in a section
	// name or a value, the credential of an http.extraHeader, a key
	// naming a password or token.
	Gitconfig ConfigFormat = "gitconfig"
)

// A Secret is one value Config took out of a configuration file.
type Secret struct {
	// Placeholder stands for the value: the copy holds it (or, for
	// npm's _password, its base64), and the tool sends it where it would
	// send the value.
	Placeholder string
	// Value is the real value, as the tool sends it in Placeholder's
	// place: an HTTP Authorization header's credential, or the password
	// inside a Basic one.
	Value string
	// Host is the host the file gives the value to (a registry, a
	// netrc machine), "" when it names none.
	Host string
	// Key says where in the file it was ("//registry.npmjs.org/:_authToken",
	// "password", "url userinfo").
	Key string
}

// PlaceholderPrefix starts every placeholder: redaction leaves one alone,
// so a copy keeps it through String.
const PlaceholderPrefix = "act-placeholder-"

// NewPlaceholder returns a fresh placeholder: PlaceholderPrefix and 128
// random bits in hex, which match no real value and which a command
// cannot guess.
func NewPlaceholder() string {
	var b [16]byte
	rand.Read(b[:])
	return PlaceholderPrefix + hex.EncodeToString(b[:])
}

// isPlaceholder says whether v is a placeholder, or npm's base64 of one.
func isPlaceholder(v string) bool {
	v = strings.Trim(v, `"'`)
	if strings.HasPrefix(v, PlaceholderPrefix) {
		return true
	}
	d, err := base64.StdEncoding.DecodeString(v)
	return err == nil && bytes.HasPrefix(d, []byte(PlaceholderPrefix))
}

// MaxConfig is the largest configuration file Config reads.
const MaxConfig = 256 << 10

// Config returns data, a configuration file of format, with each secret
// replaced by a placeholder that placeholder makes (NewPlaceholder when
// nil), and the secrets it replaced. What the format's structure does not
// name but String recognises (a token's shape, a private key block) is
// masked too. ok is false when data is not a text Config can read that way
// (larger than MaxConfig, a NUL byte, invalid UTF-8): nothing of it may
// be shown.
func Config(format ConfigFormat, data []byte, placeholder func() string) (out []byte, secrets []Secret, ok bool) {
	if len(data) > MaxConfig || bytes.IndexByte(data, 0) >= 0 || !utf8.Valid(data) {
		return nil, nil, false
	}
	if placeholder == nil {
		placeholder = NewPlaceholder
	}
	r := &configRedactor{placeholder: placeholder}
	text := string(data)
	switch format {
	case Npmrc:
		text = r.npmrc(text)
	case INI:
		text = r.ini(text)
	case Netrc:
		text = r.netrc(text)
	case TOML:
		text = r.toml(text)
	case Gitconfig:
		text = r.gitconfig(text)
	default:
		return nil, nil, false
	}
	return []byte(String(text)), r.secrets, true
}

// HoldsSecret reports whether data, a configuration file of format,
// holds a secret Config would replace; one it cannot read counts as
// holding one.
func HoldsSecret(format ConfigFormat, data []byte) bool {
	out, secrets, ok := Config(format, data, func() string { return PlaceholderPrefix })
	return !ok || len(secrets) > 0 || !bytes.Equal(out, data)
}

type configRedactor struct {
	placeholder func() string
	secrets     []Secret
}

// take records value as a secret for host and returns its placeholder.
func (r *configRedactor) take(key, value, host string) string {
	p := r.placeholder()
	r.secrets = append(r.secrets, Secret{Placeholder: p, Value: value, Host: host, Key: key})
	return p
}

var configPats = sync.OnceValue(func() *cpats {
	return &cpats{
		// scheme://userinfo@ — the user information of a URL.
		userinfo: regexp.MustCompile(`([a-zA-Z][a-zA-Z0-9+.-]*://)([^\s/@"']+)@([^\s/:"'?#]+)`),
		// a key that names a secret (as String's keyed pattern).
		secretKey: regexp.MustCompile(`(?i)(passw(?:or)?d|passphrase|secret|token|api[_-]?key|apikey|access[_-]?key|private[_-]?key|credentials?)`),
		// TOML: a registry's index in an inline table, and a key naming
		// a secret with its quoted value.
		tomlIndex: regexp.MustCompile(`\bindex\s*=\s*("[^"]*"|'[^']*')`),
		tomlKeyed: regexp.MustCompile(`(?i)(^|[\s{,])([a-z0-9_.-]*(?:passw(?:or)?d|secret|token)[a-z0-9_.-]*)(\s*=\s*)("[^"\n]*"|'[^'\n]*')`),
	}
})

type cpats struct{ userinfo, secretKey, tomlIndex, tomlKeyed *regexp.Regexp }

// urls replaces the user information of each URL in s: the password when
// there is one, else the user name, which such a URL uses as a token.
func (r *configRedactor) urls(s string) string {
	re := configPats().userinfo
	return re.ReplaceAllStringFunc(s, func(m string) string {
		sub := re.FindStringSubmatch(m)
		scheme, info, host := sub[1], sub[2], sub[3]
		user, pass, hasPass := strings.Cut(info, ":")
		if hasPass {
			if isPlaceholder(pass) {
				return m
			}
			v, err := url.PathUnescape(pass)
			if err != nil {
				v = pass
			}
			return scheme + user + ":" + r.take("url userinfo", v, strings.ToLower(host)) + "@" + host
		}
		if isPlaceholder(user) {
			return m
		}
		v, err := url.PathUnescape(user)
		if err != nil {
			v = user
		}
		return scheme + r.take("url userinfo", v, strings.ToLower(host)) + "@" + host
	})
}

// hostOf is the host name of a URL (a "sparse+" or "git+" prefix
// dropped), lower-case, "" if it has none.
func hostOf(raw string) string {
	raw = strings.Trim(strings.TrimSpace(raw), `"'`)
	if i := strings.Index(raw, "+"); i >= 0 && i < strings.Index(raw, "://") {
		raw = raw[i+1:]
	}
	u, err := url.Parse(raw)
	if err != nil {
		return ""
	}
	return strings.ToLower(u.Hostname())
}

// lines splits text into lines, each with its line ending.
func lines(text string) []string {
	return strings.SplitAfter(text, "\n")
}

// keyValue splits an ini-style line at its first sep into the key and
// the value with their spacing: key, the separator with its spacing, the
// value, and what follows it (its line ending). ok is false for a line
// without sep.
func keyValue(line, seps string) (key, mid, value, end string, ok bool) {
	body := strings.TrimRight(line, "\r\n")
	end = line[len(body):]
	i := strings.IndexAny(body, seps)
	if i < 0 {
		return "", "", "", "", false
	}
	key = body[:i]
	rest := body[i+1:]
	v := strings.TrimLeft(rest, " \t")
	mid = body[i : i+1+len(rest)-len(v)]
	trimmed := strings.TrimRight(v, " \t")
	return key, mid, trimmed, v[len(trimmed):] + end, true
}

// npmrc redacts an .npmrc.
func (r *configRedactor) npmrc(text string) string {
	registry := "registry.npmjs.org"
	for _, l := range lines(text) {
		k, _, v, _, ok := keyValue(l, "=")
		if ok && strings.TrimSpace(k) == "registry" {
			if h := hostOf(v); h != "" {
				registry = h
			}
		}
	}
	var b strings.Builder
	for _, l := range lines(text) {
		t := strings.TrimSpace(l)
		k, mid, v, end, ok := keyValue(l, "=")
		if t == "" || t[0] == ';' || t[0] == '#' || t[0] == '[' || !ok {
			b.WriteString(l)
			continue
		}
		key := strings.TrimSpace(k)
		host, base := registry, key
		if strings.HasPrefix(key, "//") {
			if i := strings.LastIndex(key, ":"); i > 0 {
				base = key[i+1:]
				host = hostOf("https:" + key[:i])
			}
		}
		quoted := len(v) >= 2 && v[0] == '"' && v[len(v)-1] == '"'
		inner := v
		if quoted {
			inner = v[1 : len(v)-1]
		}
		switch {
		case inner == "" || isPlaceholder(inner) || strings.HasPrefix(inner, "${"):
			// Empty, already a placeholder, or an environment
			// variable's name (npm expands it): nothing to hide.
		case base == "_password":
			// base64 of the password; npm decodes it, and sends the
			// placeholder inside a Basic credential.
			real := inner
			if d, err := base64.StdEncoding.DecodeString(inner); err == nil {
				real = string(d)
			}
			inner = base64.StdEncoding.EncodeToString([]byte(r.take(key, real, host)))
		case base == "_authToken" || base == "_auth" || base == "password" || base == "otp" ||
			configPats().secretKey.MatchString(base):
			inner = r.take(key, inner, host)
		default:
			inner = r.urls(inner)
		}
		if quoted {
			inner = `"` + inner + `"`
		}
		b.WriteString(k + mid + inner + end)
	}
	return b.String()
}

// iniSection is the name of a "[name]" line, and ok.
func iniSection(l string) (string, bool) {
	t := strings.TrimSpace(l)
	if len(t) < 2 || t[0] != '[' || !strings.HasSuffix(t, "]") {
		return "", false
	}
	return strings.TrimSpace(t[1 : len(t)-1]), true
}

// ini redacts pip.conf or .pypirc.
func (r *configRedactor) ini(text string) string {
	// A .pypirc section names its repository; its password is for that
	// host (pypi's and testpypi's by default).
	hosts := map[string]string{"pypi": "upload.pypi.org", "testpypi": "test.pypi.org"}
	section := ""
	for _, l := range lines(text) {
		if s, ok := iniSection(l); ok {
			section = s
			continue
		}
		if k, _, v, _, ok := keyValue(l, "=:"); ok && strings.TrimSpace(k) == "repository" {
			hosts[section] = hostOf(v)
		}
	}
	var b strings.Builder
	section = ""
	for _, l := range lines(text) {
		t := strings.TrimSpace(l)
		if s, ok := iniSection(l); ok {
			section = s
			b.WriteString(l)
			continue
		}
		if t == "" || t[0] == '#' || t[0] == ';' {
			b.WriteString(l)
			continue
		}
		if l[0] == ' ' || l[0] == '\t' {
			// A continuation line: more of the value above.
			b.WriteString(r.urls(l))
			continue
		}
		k, mid, v, end, ok := keyValue(l, "=:")
		if !ok {
			b.WriteString(r.urls(l))
			continue
		}
		if v != "" && !isPlaceholder(v) && configPats().secretKey.MatchString(k) {
			v = r.take(strings.TrimSpace(k), v, hosts[section])
		} else {
			v = r.urls(v)
		}
		b.WriteString(k + mid + v + end)
	}
	return b.String()
}

// netrc redacts a .netrc: the token after "password" or "account", for
// the machine it stands under ("default": none).
func (r *configRedactor) netrc(text string) string {
	var b strings.Builder
	host, want := "", ""
	i := 0
	for i < len(text) {
		c := text[i]
		if c == ' ' || c == '\t' || c == '\n' || c == '\r' {
			b.WriteByte(c)
			i++
			continue
		}
		j := i
		for j < len(text) && !strings.ContainsRune(" \t\r\n", rune(text[j])) {
			j++
		}
		tok := text[i:j]
		switch {
		case want == "machine":
			host, want = strings.ToLower(tok), ""
			b.WriteString(tok)
		case want == "secret":
			want = ""
			if isPlaceholder(tok) {
				b.WriteString(tok)
			} else {
				b.WriteString(r.take("password", tok, host))
			}
		case want == "skip":
			want = ""
			b.WriteString(tok)
		case tok == "machine":
			want = "machine"
			b.WriteString(tok)
		case tok == "default":
			host = ""
			b.WriteString(tok)
		case tok == "password" || tok == "account":
			want = "secret"
			b.WriteString(tok)
		case tok == "login" || tok == "macdef":
			want = "skip"
			b.WriteString(tok)
		default:
			b.WriteString(tok)
		}
		i = j
	}
	return b.String()
}

// toml redacts cargo's config.toml: a key naming a secret, for the
// registry its table names (crates.io for [registry]), and URLs' user
// information.
func (r *configRedactor) toml(text string) string {
	index := map[string]string{"registry": "crates.io"}
	section := ""
	for _, l := range lines(text) {
		if s, ok := iniSection(l); ok {
			section = strings.Trim(s, "[] ")
			continue
		}
		if k, _, v, _, ok := keyValue(l, "="); ok && strings.TrimSpace(k) == "index" {
			index[section] = hostOf(v)
		}
	}
	indexIn, keyed := configPats().tomlIndex, configPats().tomlKeyed
	var b strings.Builder
	section = ""
	for _, l := range lines(text) {
		if s, ok := iniSection(l); ok {
			section = strings.Trim(s, "[] ")
			b.WriteString(l)
			continue
		}
		t := strings.TrimSpace(l)
		if t == "" || t[0] == '#' {
			b.WriteString(l)
			continue
		}
		host := index[section]
		if k, _, _, _, ok := keyValue(l, "="); ok {
			// An inline table: name = { index = "…", token = "…" }.
			if m := indexIn.FindStringSubmatch(l); m != nil {
				host = hostOf(m[1])
			} else if h, ok := index[section+"."+strings.TrimSpace(k)]; ok {
				host = h
			}
		}
		l = keyed.ReplaceAllStringFunc(l, func(m string) string {
			sub := keyed.FindStringSubmatch(m)
			v := sub[4]
			inner := v[1 : len(v)-1]
			if inner == "" || isPlaceholder(inner) {
				return m
			}
			return sub[1] + sub[2] + sub[3] + v[:1] + r.take(sub[2], inner, host) + v[len(v)-1:]
		})
		b.WriteString(r.urls(l))
	}
	return b.String()
}

// gitconfig redacts git's config: user information of URLs in section
// names and values, an extraHeader's credential (for the URL of its
// http section), a key naming a password or token.
func (r *configRedactor) gitconfig(text string) string {
	var b strings.Builder
	host := ""
	for _, l := range lines(text) {
		t := strings.TrimSpace(l)
		if t == "" || t[0] == '#' || t[0] == ';' {
			b.WriteString(l)
			continue
		}
		if t[0] == '[' {
			host = ""
			if i, j := strings.Index(t, `"`), strings.LastIndex(t, `"`); i >= 0 && j > i {
				host = hostOf(t[i+1 : j])
			}
			b.WriteString(r.urls(l))
			continue
		}
		k, mid, v, end, ok := keyValue(l, "=")
		if !ok {
			b.WriteString(l)
			continue
		}
		key := strings.ToLower(strings.TrimSpace(k))
		switch {
		case v == "" || isPlaceholder(v):
		case key == "extraheader":
			v = r.header(v, host)
		case configPats().secretKey.MatchString(key):
			v = r.take(key, v, host)
		default:
			v = r.urls(v)
		}
		b.WriteString(k + mid + v + end)
	}
	return b.String()
}

// header redacts an HTTP header line "Name: [scheme] credential" as
// git's extraHeader holds it: the credential, for host.
func (r *configRedactor) header(v, host string) string {
	q := ""
	if len(v) >= 2 && v[0] == '"' && v[len(v)-1] == '"' {
		q, v = `"`, v[1:len(v)-1]
	}
	name, val, ok := strings.Cut(v, ":")
	if !ok {
		return q + r.urls(v) + q
	}
	val = strings.TrimLeft(val, " ")
	scheme, cred, two := strings.Cut(val, " ")
	if !two {
		scheme, cred = "", val
	}
	if cred == "" || isPlaceholder(cred) {
		return q + v + q
	}
	p := r.take("extraheader", cred, host)
	if scheme != "" {
		return q + name + ": " + scheme + " " + p + q
	}
	return q + name + ": " + p + q
}
