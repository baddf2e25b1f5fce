package sshsig

import (
	"bufio"
	"bytes"
	"crypto/rsa"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"golang.org/x/crypto/ssh"
)

// An AllowedSigner is one line of an allowed_signers file: who may approve
// (Principals), in which namespaces, with which key, and when.
type AllowedSigner struct {
	// Principals are the identities the line names, in file order. act
	// treats them as literal names: ssh-keygen's wildcard patterns are
	// refused, since an approval reports who approved.
	Principals []string
	// Namespaces is the namespaces="..." option; empty means any namespace.
	Namespaces []string
	// ValidAfter and ValidBefore are the valid-after= and valid-before=
	// options; the zero time means unbounded. A signature is accepted only
	// while ValidAfter <= now <= ValidBefore, as ssh-keygen does.
	ValidAfter, ValidBefore time.Time
	// Key is the approver's public key. Certificates are never keys here.
	Key ssh.PublicKey
	// Comment is whatever follows the key on the line.
	Comment string
	// Line is the 1-based line number in the file the signer came from.
	Line int
}

// maxAllowedSignersSize caps what ParseAllowedSigners reads: the file is a
// list of people's keys, never megabytes.
const maxAllowedSignersSize = 1 << 20

// ParseAllowedSigners reads the allowed_signers format of ssh-keygen(1)
// (section ALLOWED SIGNERS), the one git's gpg.ssh.allowedSignersFile uses:
//
//	principals [options] keytype base64-key [comment]
//
// Empty lines and lines starting with '#' are skipped. principals is a
// comma-separated list of names, optionally in double quotes. options is a
// comma-separated list of namespaces="ns1,ns2", valid-after=TIME and
// valid-before=TIME, where TIME is YYYYMMDD[HHMM[SS]] with an optional
// trailing Z for UTC (local time otherwise). cert-authority is refused: act
// verifies a person's own key, never a certificate authority. Any other
// option, a wildcard principal, an unsupported key type or an RSA key under
// 2048 bits is an error naming the line.
func ParseAllowedSigners(r io.Reader) ([]AllowedSigner, error) {
	data, err := io.ReadAll(io.LimitReader(r, maxAllowedSignersSize+1))
	if err != nil {
		return nil, err
	}
	if len(data) > maxAllowedSignersSize {
		return nil, fmt.Errorf("allowed signers: larger than %d bytes", maxAllowedSignersSize)
	}
	var out []AllowedSigner
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 64*1024), maxAllowedSignersSize)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' {
			continue
		}
		s, err := parseAllowedSignerLine(line)
		if err != nil {
			return nil, fmt.Errorf("allowed signers line %d: %w", n, err)
		}
		s.Line = n
		out = append(out, s)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("allowed signers: %w", err)
	}
	return out, nil
}

func parseAllowedSignerLine(line string) (AllowedSigner, error) {
	var s AllowedSigner
	principals, rest, err := nextField(line)
	if err != nil {
		return s, err
	}
	principals = unquote(principals)
	for _, p := range strings.Split(principals, ",") {
		if p == "" {
			return s, errors.New("empty principal")
		}
		if strings.ContainsAny(p, "*?!") {
			return s, fmt.Errorf("principal %q: patterns (*, ?, !) are not supported; name each approver", p)
		}
		s.Principals = append(s.Principals, p)
	}
	if rest == "" {
		return s, errors.New("missing key")
	}
	field, after, err := nextField(rest)
	if err != nil {
		return s, err
	}
	if !isKeyTypeName(field) {
		if err := parseOptions(&s, field); err != nil {
			return s, err
		}
		rest = after
		if field, after, err = nextField(rest); err != nil {
			return s, err
		}
	}
	keyType := field
	b64, comment, err := nextField(after)
	if err != nil {
		return s, err
	}
	if b64 == "" {
		return s, fmt.Errorf("missing base64 key after %q", keyType)
	}
	blob, err := base64.StdEncoding.DecodeString(b64)
	if err != nil {
		return s, fmt.Errorf("key: bad base64: %v", err)
	}
	key, err := ssh.ParsePublicKey(blob)
	if err != nil {
		return s, fmt.Errorf("key: %v", err)
	}
	if key.Type() != keyType {
		return s, fmt.Errorf("key: the line says %q but the key is %q", keyType, key.Type())
	}
	if err := checkKey(key); err != nil {
		return s, err
	}
	s.Key = key
	s.Comment = strings.TrimSpace(comment)
	return s, nil
}

// supportedKeyTypes are the key types act accepts from an approver.
var supportedKeyTypes = map[string]bool{
	ssh.KeyAlgoED25519:    true,
	ssh.KeyAlgoECDSA256:   true,
	ssh.KeyAlgoECDSA384:   true,
	ssh.KeyAlgoECDSA521:   true,
	ssh.KeyAlgoRSA:        true,
	ssh.KeyAlgoSKED25519:  true,
	ssh.KeyAlgoSKECDSA256: true,
}

// isKeyTypeName says whether field is where the key type belongs rather than
// options: any name ending as OpenSSH key types and certificates do.
func isKeyTypeName(f string) bool {
	return supportedKeyTypes[f] || f == ssh.KeyAlgoDSA || strings.HasSuffix(f, "-cert-v01@openssh.com")
}

// minRSABits is the smallest RSA modulus act accepts.
const minRSABits = 2048

// checkKey refuses what act does not take as an approver's key: certificates,
// DSA, and RSA under minRSABits.
func checkKey(key ssh.PublicKey) error {
	if _, ok := key.(*ssh.Certificate); ok {
		return fmt.Errorf("key type %s: certificates are not supported; list the approver's own key", key.Type())
	}
	if !supportedKeyTypes[key.Type()] {
		return fmt.Errorf("key type %s is not supported", key.Type())
	}
	if ck, ok := key.(ssh.CryptoPublicKey); ok {
		if rk, ok := ck.CryptoPublicKey().(*rsa.PublicKey); ok && rk.N.BitLen() < minRSABits {
			return fmt.Errorf("RSA key of %d bits: at least %d are required", rk.N.BitLen(), minRSABits)
		}
	}
	return nil
}

// nextField splits s at the first run of spaces or tabs outside double
// quotes and returns the field and what follows it, trimmed.
func nextField(s string) (field, rest string, err error) {
	s = strings.TrimLeft(s, " \t")
	quoted := false
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '"':
			quoted = !quoted
		case !quoted && (c == ' ' || c == '\t'):
			return s[:i], strings.TrimLeft(s[i:], " \t"), nil
		}
	}
	if quoted {
		return "", "", errors.New("unterminated quote")
	}
	return s, "", nil
}

func unquote(s string) string {
	if len(s) >= 2 && s[0] == '"' && s[len(s)-1] == '"' {
		return s[1 : len(s)-1]
	}
	return s
}

// parseOptions parses the comma-separated options field into s.
func parseOptions(s *AllowedSigner, field string) error {
	var opts []string
	start, quoted := 0, false
	for i := 0; i < len(field); i++ {
		switch field[i] {
		case '"':
			quoted = !quoted
		case ',':
			if !quoted {
				opts = append(opts, field[start:i])
				start = i + 1
			}
		}
	}
	opts = append(opts, field[start:])
	seen := map[string]bool{}
	for _, o := range opts {
		name, value, hasValue := strings.Cut(o, "=")
		name = strings.ToLower(name)
		if seen[name] {
			return fmt.Errorf("option %s given twice", name)
		}
		seen[name] = true
		if name == "cert-authority" {
			return errors.New("cert-authority is not supported: act verifies an approver's own key; list it instead of a certificate authority")
		}
		if !hasValue {
			return fmt.Errorf("option %q is not supported (known: namespaces=, valid-after=, valid-before=)", o)
		}
		if len(value) < 2 || value[0] != '"' || value[len(value)-1] != '"' {
			return fmt.Errorf("option %s: value must be in double quotes", name)
		}
		value = value[1 : len(value)-1]
		switch name {
		case "namespaces":
			for _, ns := range strings.Split(value, ",") {
				if ns == "" {
					return errors.New(`option namespaces: empty namespace`)
				}
				if strings.ContainsAny(ns, "*?!") {
					return fmt.Errorf("option namespaces: %q: patterns are not supported", ns)
				}
				s.Namespaces = append(s.Namespaces, ns)
			}
		case "valid-after", "valid-before":
			t, err := parseTime(value)
			if err != nil {
				return fmt.Errorf("option %s: %v", name, err)
			}
			if name == "valid-after" {
				s.ValidAfter = t
			} else {
				s.ValidBefore = t
			}
		default:
			return fmt.Errorf("option %q is not supported (known: namespaces=, valid-after=, valid-before=)", name)
		}
	}
	if !s.ValidAfter.IsZero() && !s.ValidBefore.IsZero() && !s.ValidAfter.Before(s.ValidBefore) {
		return errors.New("valid-after is not before valid-before")
	}
	return nil
}

// parseTime parses an OpenSSH absolute time: YYYYMMDD, YYYYMMDDHHMM or
// YYYYMMDDHHMMSS, in UTC with a trailing Z (or z), in local time otherwise.
func parseTime(v string) (time.Time, error) {
	loc := time.Local
	if strings.HasSuffix(v, "Z") || strings.HasSuffix(v, "z") {
		loc, v = time.UTC, v[:len(v)-1]
	}
	var layout string
	switch len(v) {
	case 8:
		layout = "20060102"
	case 12:
		layout = "200601021504"
	case 14:
		layout = "20060102150405"
	default:
		return time.Time{}, fmt.Errorf("%q: want YYYYMMDD[HHMM[SS]][Z]", v)
	}
	t, err := time.ParseInLocation(layout, v, loc)
	if err != nil {
		return time.Time{}, fmt.Errorf("%q: want YYYYMMDD[HHMM[SS]][Z]", v)
	}
	return t, nil
}
