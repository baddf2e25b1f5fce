// Package sshsig makes and checks the SSH signatures of `ssh-keygen -Y sign`
// (OpenSSH's PROTOCOL.sshsig), the way a person approves a plan in act's
// `signed` confirmation mode: a signature in namespace "act-approval" over
// the plan's digest, by a key listed in the host policy's approvers (the
// allowed_signers format of ssh-keygen and git). docs/approvals.md says how a
// person signs and what a security key's touch stops.
//
// The envelope is small and written here against PROTOCOL.sshsig; the keys
// and signatures inside it (Ed25519, ECDSA, RSA with SHA-2, and the FIDO
// sk-ssh-ed25519@openssh.com and sk-ecdsa-sha2-nistp256@openssh.com) are
// parsed and verified by golang.org/x/crypto/ssh. For a security key, Verify
// requires the user-presence flag: only a touch approves.
package sshsig

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"errors"
	"fmt"
	"hash"
	"slices"
	"strings"
	"time"

	"golang.org/x/crypto/ssh"
)

// Namespace is the namespace act's approvals are signed in.
const Namespace = "act-approval"

const (
	magic      = "SSHSIG"
	version    = 1
	armorBegin = "-----BEGIN SSH SIGNATURE-----"
	armorEnd   = "-----END SSH SIGNATURE-----"
	// maxArmoredSize caps what Verify reads; an RSA-16384 signature armored
	// is under 6 KiB.
	maxArmoredSize = 64 << 10
	// flagUserPresence is the FIDO "user present" flag of an sk signature
	// (PROTOCOL.u2f).
	flagUserPresence = 0x01
)

// Errors Verify returns, wrapped with detail; test with errors.Is.
var (
	// ErrMalformed: the armor or the envelope inside it is not a
	// PROTOCOL.sshsig version 1 signature.
	ErrMalformed = errors.New("malformed SSH signature")
	// ErrNamespace: the signature was made for another namespace.
	ErrNamespace = errors.New("signature namespace mismatch")
	// ErrHashAlgorithm: the message hash is not sha256 or sha512.
	ErrHashAlgorithm = errors.New("unsupported signature hash algorithm")
	// ErrUnknownSigner: the key is not among the allowed signers.
	ErrUnknownSigner = errors.New("key is not an allowed signer")
	// ErrNamespaceNotAllowed: the key is an allowed signer, but its
	// namespaces= option does not include the namespace.
	ErrNamespaceNotAllowed = errors.New("allowed signer may not sign in this namespace")
	// ErrNotValidNow: the key's valid-after/valid-before window excludes now.
	ErrNotValidNow = errors.New("allowed signer is outside its validity window")
	// ErrNoUserPresence: a security-key signature without the user-presence
	// flag, made without a touch. It is refused before the signature itself
	// is checked.
	ErrNoUserPresence = errors.New("security key signature without user presence (no touch)")
	// ErrBadSignature: the signature does not verify over the message.
	ErrBadSignature = errors.New("signature does not verify")
)

// An Approval is what a verified signature establishes.
type Approval struct {
	// Principal is the first principal of the allowed_signers line whose key
	// signed; Principals are all of them.
	Principal  string
	Principals []string
	// KeyFingerprint is ssh.FingerprintSHA256 of the key ("SHA256:...").
	KeyFingerprint string
	// KeyType is the key's type, e.g. "ssh-ed25519".
	KeyType string
	// SignatureAlgorithm is the signature's format, e.g. "rsa-sha2-512".
	SignatureAlgorithm string
	// HashAlgorithm is the message hash named in the envelope.
	HashAlgorithm string
	// SecurityKey is true for sk-* keys; Flags, Counter and UserPresent are
	// then from the authenticator (PROTOCOL.u2f), and UserPresent is always
	// true in an Approval Verify returns.
	SecurityKey bool
	Flags       byte
	Counter     uint32
	UserPresent bool
	// Line is the allowed_signers line that matched.
	Line int
}

// Message is the message an approval signs for a plan digest: the digest as
// act prints it, followed by one newline, which is what `echo "$DIGEST" >
// plan.digest` writes for a person to sign with ssh-keygen -Y sign.
func Message(planDigest string) []byte {
	return []byte(strings.TrimSpace(planDigest) + "\n")
}

// envelope is PROTOCOL.sshsig's blob after the 6-byte magic.
type envelope struct {
	Version       uint32
	PublicKey     []byte
	Namespace     string
	Reserved      []byte
	HashAlgorithm string
	Signature     []byte
}

// signedData is what the key signs: the magic, then these fields.
type signedData struct {
	Namespace     string
	Reserved      []byte
	HashAlgorithm string
	Hash          []byte
}

func messageHash(alg string, message []byte) ([]byte, error) {
	var h hash.Hash
	switch alg {
	case "sha256":
		h = sha256.New()
	case "sha512":
		h = sha512.New()
	default:
		return nil, fmt.Errorf("%w: %q (want sha256 or sha512)", ErrHashAlgorithm, alg)
	}
	h.Write(message)
	return h.Sum(nil), nil
}

func toSign(namespace string, reserved []byte, hashAlg string, message []byte) ([]byte, error) {
	h, err := messageHash(hashAlg, message)
	if err != nil {
		return nil, err
	}
	return append([]byte(magic), ssh.Marshal(signedData{namespace, reserved, hashAlg, h})...), nil
}

// Verify checks that armored is an `ssh-keygen -Y sign` signature over
// message in namespace by a key of signers that may sign in namespace now,
// and returns who approved. It checks, in order: the armor; the magic
// "SSHSIG" and version 1 with no trailing bytes; the namespace; the hash
// algorithm (sha256 or sha512); that the key is an allowed signer for the
// namespace and valid now; for a security key, the user-presence flag; and
// the signature over the signed data, by golang.org/x/crypto/ssh. RSA
// signatures must be rsa-sha2-256 or rsa-sha2-512, never SHA-1 ssh-rsa.
// Every failure is an error wrapping one of the Err values; no input panics.
func Verify(armored, message []byte, namespace string, signers []AllowedSigner) (*Approval, error) {
	return verifyAt(armored, message, namespace, signers, time.Now())
}

func verifyAt(armored, message []byte, namespace string, signers []AllowedSigner, now time.Time) (*Approval, error) {
	if namespace == "" {
		return nil, fmt.Errorf("%w: empty expected namespace", ErrNamespace)
	}
	env, err := parse(armored)
	if err != nil {
		return nil, err
	}
	if env.Namespace != namespace {
		return nil, fmt.Errorf("%w: signed for %q, want %q", ErrNamespace, env.Namespace, namespace)
	}
	data, err := toSign(env.Namespace, env.Reserved, env.HashAlgorithm, message)
	if err != nil {
		return nil, err
	}
	key, err := ssh.ParsePublicKey(env.PublicKey)
	if err != nil {
		return nil, fmt.Errorf("%w: public key: %v", ErrMalformed, err)
	}
	if err := checkKey(key); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrUnknownSigner, err)
	}
	signer, err := findSigner(key, namespace, signers, now)
	if err != nil {
		return nil, err
	}
	var sig ssh.Signature
	if err := ssh.Unmarshal(env.Signature, &sig); err != nil {
		return nil, fmt.Errorf("%w: signature: %v", ErrMalformed, err)
	}
	a := &Approval{
		Principal:          signer.Principals[0],
		Principals:         slices.Clone(signer.Principals),
		KeyFingerprint:     ssh.FingerprintSHA256(key),
		KeyType:            key.Type(),
		SignatureAlgorithm: sig.Format,
		HashAlgorithm:      env.HashAlgorithm,
		Line:               signer.Line,
	}
	switch key.Type() {
	case ssh.KeyAlgoSKED25519, ssh.KeyAlgoSKECDSA256:
		var sk struct {
			Flags   byte
			Counter uint32
		}
		if err := ssh.Unmarshal(sig.Rest, &sk); err != nil {
			return nil, fmt.Errorf("%w: security key flags and counter: %v", ErrMalformed, err)
		}
		a.SecurityKey, a.Flags, a.Counter = true, sk.Flags, sk.Counter
		a.UserPresent = sk.Flags&flagUserPresence != 0
		if !a.UserPresent {
			return nil, fmt.Errorf("%w: key %s, flags 0x%02x", ErrNoUserPresence, a.KeyFingerprint, sk.Flags)
		}
	case ssh.KeyAlgoRSA:
		if sig.Format != ssh.KeyAlgoRSASHA256 && sig.Format != ssh.KeyAlgoRSASHA512 {
			return nil, fmt.Errorf("%w: RSA signature algorithm %q (want rsa-sha2-256 or rsa-sha2-512)", ErrBadSignature, sig.Format)
		}
		fallthrough
	default:
		if len(sig.Rest) != 0 {
			return nil, fmt.Errorf("%w: %d trailing bytes in the signature", ErrMalformed, len(sig.Rest))
		}
	}
	if err := key.Verify(data, &sig); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadSignature, err)
	}
	return a, nil
}

// findSigner returns the first allowed signer with key that may sign in
// namespace at now, or an error saying why none may.
func findSigner(key ssh.PublicKey, namespace string, signers []AllowedSigner, now time.Time) (*AllowedSigner, error) {
	blob := key.Marshal()
	var why error
	for i := range signers {
		s := &signers[i]
		if s.Key == nil || len(s.Principals) == 0 || !bytes.Equal(s.Key.Marshal(), blob) {
			continue
		}
		switch {
		case len(s.Namespaces) > 0 && !slices.Contains(s.Namespaces, namespace):
			why = fmt.Errorf("%w: key %s (line %d) may sign in %s, not %q", ErrNamespaceNotAllowed, ssh.FingerprintSHA256(key), s.Line, strings.Join(s.Namespaces, ","), namespace)
		case !s.ValidAfter.IsZero() && now.Before(s.ValidAfter):
			why = fmt.Errorf("%w: key %s (line %d) is valid after %s", ErrNotValidNow, ssh.FingerprintSHA256(key), s.Line, s.ValidAfter.Format(time.RFC3339))
		case !s.ValidBefore.IsZero() && now.After(s.ValidBefore):
			why = fmt.Errorf("%w: key %s (line %d) was valid before %s", ErrNotValidNow, ssh.FingerprintSHA256(key), s.Line, s.ValidBefore.Format(time.RFC3339))
		default:
			return s, nil
		}
	}
	if why != nil {
		return nil, why
	}
	return nil, fmt.Errorf("%w: %s %s", ErrUnknownSigner, key.Type(), ssh.FingerprintSHA256(key))
}

// parse removes the armor and decodes the envelope.
func parse(armored []byte) (*envelope, error) {
	if len(armored) > maxArmoredSize {
		return nil, fmt.Errorf("%w: larger than %d bytes", ErrMalformed, maxArmoredSize)
	}
	s := strings.TrimSpace(string(armored))
	body, ok := strings.CutPrefix(s, armorBegin)
	if !ok {
		return nil, fmt.Errorf("%w: does not begin with %s", ErrMalformed, armorBegin)
	}
	body, ok = strings.CutSuffix(body, armorEnd)
	if !ok {
		return nil, fmt.Errorf("%w: does not end with %s", ErrMalformed, armorEnd)
	}
	body = strings.Join(strings.Fields(body), "")
	blob, err := base64.StdEncoding.Strict().DecodeString(body)
	if err != nil {
		return nil, fmt.Errorf("%w: base64: %v", ErrMalformed, err)
	}
	rest, ok := bytes.CutPrefix(blob, []byte(magic))
	if !ok {
		return nil, fmt.Errorf("%w: no %s magic", ErrMalformed, magic)
	}
	var env envelope
	if err := ssh.Unmarshal(rest, &env); err != nil {
		return nil, fmt.Errorf("%w: envelope: %v", ErrMalformed, err)
	}
	if env.Version != version {
		return nil, fmt.Errorf("%w: version %d (want %d)", ErrMalformed, env.Version, version)
	}
	return &env, nil
}

// Sign signs message in namespace with signer, hashing with sha512 as
// ssh-keygen does, and returns the armored signature `ssh-keygen -Y verify`
// accepts. An RSA key signs with rsa-sha2-512, which needs signer to be an
// ssh.AlgorithmSigner (those of ssh.NewSignerFromKey and of an ssh-agent
// are). A crypto.Signer is wrapped with ssh.NewSignerFromSigner.
func Sign(signer ssh.Signer, message []byte, namespace string) ([]byte, error) {
	if namespace == "" {
		return nil, errors.New("sshsig: empty namespace")
	}
	const hashAlg = "sha512"
	data, err := toSign(namespace, nil, hashAlg, message)
	if err != nil {
		return nil, err
	}
	pub := signer.PublicKey()
	var sig *ssh.Signature
	if pub.Type() == ssh.KeyAlgoRSA {
		as, ok := signer.(ssh.AlgorithmSigner)
		if !ok {
			return nil, errors.New("sshsig: an RSA signer must be an ssh.AlgorithmSigner to sign with rsa-sha2-512")
		}
		sig, err = as.SignWithAlgorithm(rand.Reader, data, ssh.KeyAlgoRSASHA512)
	} else {
		sig, err = signer.Sign(rand.Reader, data)
	}
	if err != nil {
		return nil, fmt.Errorf("sshsig: sign: %w", err)
	}
	blob := append([]byte(magic), ssh.Marshal(envelope{
		Version:       version,
		PublicKey:     pub.Marshal(),
		Namespace:     namespace,
		HashAlgorithm: hashAlg,
		Signature:     ssh.Marshal(sig),
	})...)
	return armor(blob), nil
}

// armor wraps blob as ssh-keygen does: base64 in lines of 70 characters.
func armor(blob []byte) []byte {
	b64 := base64.StdEncoding.EncodeToString(blob)
	var buf bytes.Buffer
	buf.WriteString(armorBegin + "\n")
	for len(b64) > 70 {
		buf.WriteString(b64[:70] + "\n")
		b64 = b64[70:]
	}
	buf.WriteString(b64 + "\n")
	buf.WriteString(armorEnd + "\n")
	return buf.Bytes()
}
