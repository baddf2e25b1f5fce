package sshsig

import (
	"bufio"
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/agent"
)

const principal = "alice@example.com"

// digest is what act signs: the plan's digest, as a file's content.
var digest = []byte("sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08\n")

func needKeygen(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("ssh-keygen"); err != nil {
		t.Skip("ssh-keygen (OpenSSH) is not installed")
	}
}

// keygen makes a fresh key with ssh-keygen and returns its private key path
// and a signer for it.
func keygen(t *testing.T, args ...string) (string, ssh.Signer) {
	t.Helper()
	needKeygen(t)
	path := filepath.Join(t.TempDir(), "id")
	out, err := exec.Command("ssh-keygen", append([]string{"-q", "-N", "", "-C", "test", "-f", path}, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("ssh-keygen %v: %v\n%s", args, err, out)
	}
	pem, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	s, err := ssh.ParsePrivateKey(pem)
	if err != nil {
		t.Fatal(err)
	}
	return path, s
}

// allowedLine is an allowed_signers line for key.
func allowedLine(name, options string, key ssh.PublicKey) string {
	if options != "" {
		options += " "
	}
	return name + " " + options + strings.TrimSpace(string(ssh.MarshalAuthorizedKey(key))) + " a comment\n"
}

func mustParse(t *testing.T, text string) []AllowedSigner {
	t.Helper()
	s, err := ParseAllowedSigners(strings.NewReader(text))
	if err != nil {
		t.Fatalf("ParseAllowedSigners(%q): %v", text, err)
	}
	return s
}

// keygenVerify runs ssh-keygen -Y verify and returns its error and output.
func keygenVerify(t *testing.T, allowed string, sig, message []byte, namespace string) (error, string) {
	t.Helper()
	dir := t.TempDir()
	as, sf := filepath.Join(dir, "allowed_signers"), filepath.Join(dir, "sig")
	if err := os.WriteFile(as, []byte(allowed), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(sf, sig, 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("ssh-keygen", "-Y", "verify", "-f", as, "-I", principal, "-n", namespace, "-s", sf)
	cmd.Stdin = bytes.NewReader(message)
	out, err := cmd.CombinedOutput()
	return err, string(out)
}

var keyKinds = []struct {
	name    string
	args    []string
	keyType string
	sigAlg  string
}{
	{"ed25519", []string{"-t", "ed25519"}, "ssh-ed25519", "ssh-ed25519"},
	{"ecdsa-p256", []string{"-t", "ecdsa", "-b", "256"}, "ecdsa-sha2-nistp256", "ecdsa-sha2-nistp256"},
	{"ecdsa-p384", []string{"-t", "ecdsa", "-b", "384"}, "ecdsa-sha2-nistp384", "ecdsa-sha2-nistp384"},
	{"rsa-2048", []string{"-t", "rsa", "-b", "2048"}, "ssh-rsa", "rsa-sha2-512"},
}

// A signature ssh-keygen makes verifies with Verify, and the approval says
// who and with what.
func TestKeygenSignsVerifyAccepts(t *testing.T) {
	for _, k := range keyKinds {
		t.Run(k.name, func(t *testing.T) {
			path, signer := keygen(t, k.args...)
			sig, err := SignWithKeygen(context.Background(), path, digest, Namespace, nil)
			if err != nil {
				t.Fatal(err)
			}
			signers := mustParse(t, allowedLine(principal, `namespaces="act-approval"`, signer.PublicKey()))
			a, err := Verify(sig, digest, Namespace, signers)
			if err != nil {
				t.Fatalf("Verify: %v\n%s", err, sig)
			}
			want := Approval{
				Principal: principal, Principals: []string{principal},
				KeyFingerprint: ssh.FingerprintSHA256(signer.PublicKey()), KeyType: k.keyType,
				SignatureAlgorithm: k.sigAlg, HashAlgorithm: "sha512", Line: 1,
			}
			if fmt.Sprint(*a) != fmt.Sprint(want) {
				t.Errorf("approval\n got %+v\nwant %+v", *a, want)
			}
			// The same signature over another digest is refused.
			if _, err := Verify(sig, append(digest, 'x'), Namespace, signers); !errors.Is(err, ErrBadSignature) {
				t.Errorf("altered message: got %v, want ErrBadSignature", err)
			}
		})
	}
}

// A signature Sign makes verifies with ssh-keygen -Y verify against an
// allowed_signers file, and ssh-keygen refuses it over another message.
func TestSignKeygenVerifies(t *testing.T) {
	for _, k := range keyKinds {
		t.Run(k.name, func(t *testing.T) {
			_, signer := keygen(t, k.args...)
			sig, err := Sign(signer, digest, Namespace)
			if err != nil {
				t.Fatal(err)
			}
			allowed := allowedLine(principal, `namespaces="act-approval"`, signer.PublicKey())
			if err, out := keygenVerify(t, allowed, sig, digest, Namespace); err != nil {
				t.Fatalf("ssh-keygen -Y verify: %v\n%s\n%s", err, out, sig)
			}
			if err, out := keygenVerify(t, allowed, sig, append(digest, 'x'), Namespace); err == nil {
				t.Fatalf("ssh-keygen -Y verify accepted an altered message:\n%s", out)
			}
			if _, err := Verify(sig, digest, Namespace, mustParse(t, allowed)); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// envelopeArgs builds a signature envelope with any field, signed properly
// by signer, to show Verify refuses what is wrong even when signed.
type envelopeArgs struct {
	version   uint32
	namespace string
	hashAlg   string
	hash      []byte
	sigAlg    string
}

func buildSigned(t *testing.T, signer ssh.Signer, e envelopeArgs) []byte {
	t.Helper()
	data := append([]byte(magic), ssh.Marshal(signedData{e.namespace, nil, e.hashAlg, e.hash})...)
	var sig *ssh.Signature
	var err error
	if e.sigAlg != "" {
		sig, err = signer.(ssh.AlgorithmSigner).SignWithAlgorithm(rand.Reader, data, e.sigAlg)
	} else {
		sig, err = signer.Sign(rand.Reader, data)
	}
	if err != nil {
		t.Fatal(err)
	}
	return armor(append([]byte(magic), ssh.Marshal(envelope{
		Version: e.version, PublicKey: signer.PublicKey().Marshal(), Namespace: e.namespace,
		HashAlgorithm: e.hashAlg, Signature: ssh.Marshal(sig),
	})...))
}

func sha512Of(b []byte) []byte { h, _ := messageHash("sha512", b); return h }

func TestVerifyRefuses(t *testing.T) {
	_, priv, _ := ed25519.GenerateKey(rand.Reader)
	signer, _ := ssh.NewSignerFromKey(priv)
	_, otherPriv, _ := ed25519.GenerateKey(rand.Reader)
	other, _ := ssh.NewSignerFromKey(otherPriv)
	rsaKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	rsaSigner, _ := ssh.NewSignerFromKey(rsaKey)

	good, err := Sign(signer, digest, Namespace)
	if err != nil {
		t.Fatal(err)
	}
	signers := mustParse(t, allowedLine(principal, "", signer.PublicKey())+allowedLine("bob", "", rsaSigner.PublicKey()))
	if _, err := Verify(good, digest, Namespace, signers); err != nil {
		t.Fatalf("the good signature: %v", err)
	}
	flip := func(b []byte, i int) []byte {
		blob, err := parseBlob(b)
		if err != nil {
			t.Fatal(err)
		}
		blob[i] ^= 0x01
		return armor(blob)
	}
	goodBlob, _ := parseBlob(good)
	otherNS, _ := Sign(signer, digest, "git")
	byOther, _ := Sign(other, digest, Namespace)
	sha1Hash := sha1.Sum(digest)

	cases := []struct {
		name      string
		sig       []byte
		message   []byte
		namespace string
		signers   []AllowedSigner
		want      error
	}{
		{"wrong namespace", otherNS, digest, Namespace, signers, ErrNamespace},
		{"expected namespace other", good, digest, "git", signers, ErrNamespace},
		{"empty expected namespace", good, digest, "", signers, ErrNamespace},
		{"altered message", good, []byte("sha256:0000\n"), Namespace, signers, ErrBadSignature},
		{"altered last signature byte", flip(good, len(goodBlob)-1), digest, Namespace, signers, ErrBadSignature},
		{"altered first signature byte", flip(good, len(goodBlob)-64), digest, Namespace, signers, ErrBadSignature},
		{"altered magic", flip(good, 0), digest, Namespace, signers, ErrMalformed},
		{"key not allowed", byOther, digest, Namespace, signers, ErrUnknownSigner},
		{"no signers", good, digest, Namespace, nil, ErrUnknownSigner},
		{"namespaces excludes act-approval", good, digest, Namespace,
			mustParse(t, allowedLine(principal, `namespaces="git,file"`, signer.PublicKey())), ErrNamespaceNotAllowed},
		{"valid-before passed", good, digest, Namespace,
			mustParse(t, allowedLine(principal, `valid-before="20200101Z"`, signer.PublicKey())), ErrNotValidNow},
		{"valid-after to come", good, digest, Namespace,
			mustParse(t, allowedLine(principal, `valid-after="29990101Z"`, signer.PublicKey())), ErrNotValidNow},
		{"truncated armor", good[:len(good)/2], digest, Namespace, signers, ErrMalformed},
		{"armor without end", bytes.TrimSuffix(bytes.TrimSpace(good), []byte(armorEnd)), digest, Namespace, signers, ErrMalformed},
		{"truncated blob", armor(goodBlob[:len(goodBlob)-3]), digest, Namespace, signers, ErrMalformed},
		{"trailing bytes", armor(append(slicesClone(goodBlob), 0)), digest, Namespace, signers, ErrMalformed},
		{"text after armor", append(slicesClone(good), "more\n"...), digest, Namespace, signers, ErrMalformed},
		{"bad base64", bytes.Replace(good, []byte("U1NI"), []byte("U1N!"), 1), digest, Namespace, signers, ErrMalformed},
		{"garbage", []byte("hello"), digest, Namespace, signers, ErrMalformed},
		{"empty", nil, digest, Namespace, signers, ErrMalformed},
		{"armor only", []byte(armorBegin + "\n" + armorEnd + "\n"), digest, Namespace, signers, ErrMalformed},
		{"version 2", buildSigned(t, signer, envelopeArgs{2, Namespace, "sha512", sha512Of(digest), ""}), digest, Namespace, signers, ErrMalformed},
		{"version 0", buildSigned(t, signer, envelopeArgs{0, Namespace, "sha512", sha512Of(digest), ""}), digest, Namespace, signers, ErrMalformed},
		{"sha1 hash", buildSigned(t, signer, envelopeArgs{1, Namespace, "sha1", sha1Hash[:], ""}), digest, Namespace, signers, ErrHashAlgorithm},
		{"unknown hash", buildSigned(t, signer, envelopeArgs{1, Namespace, "md5", sha1Hash[:16], ""}), digest, Namespace, signers, ErrHashAlgorithm},
		{"RSA ssh-rsa SHA-1 signature", buildSigned(t, rsaSigner, envelopeArgs{1, Namespace, "sha512", sha512Of(digest), ssh.KeyAlgoRSA}), digest, Namespace, signers, ErrBadSignature},
		{"huge", bytes.Repeat([]byte("A"), maxArmoredSize+1), digest, Namespace, signers, ErrMalformed},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			a, err := Verify(c.sig, c.message, c.namespace, c.signers)
			if !errors.Is(err, c.want) {
				t.Fatalf("got %v (approval %+v), want %v", err, a, c.want)
			}
			if a != nil {
				t.Fatalf("an approval with an error: %+v", a)
			}
		})
	}
	// The RSA key does sign with rsa-sha2-256, which is accepted.
	ok256 := buildSigned(t, rsaSigner, envelopeArgs{1, Namespace, "sha256", sha256Sum(digest), ssh.KeyAlgoRSASHA256})
	if a, err := Verify(ok256, digest, Namespace, signers); err != nil || a.Principal != "bob" || a.SignatureAlgorithm != "rsa-sha2-256" {
		t.Fatalf("rsa-sha2-256 over sha256: %+v, %v", a, err)
	}
}

func sha256Sum(b []byte) []byte { h := sha256.Sum256(b); return h[:] }

func slicesClone(b []byte) []byte { return append([]byte(nil), b...) }

// parseBlob removes the armor of a signature.
func parseBlob(armored []byte) ([]byte, error) {
	if _, err := parse(armored); err != nil {
		return nil, err
	}
	s := strings.TrimSpace(string(armored))
	s = strings.TrimSuffix(strings.TrimPrefix(s, armorBegin), armorEnd)
	return base64.StdEncoding.DecodeString(strings.Join(strings.Fields(s), ""))
}

// skSigner is a software stand-in for a FIDO security key: it signs what
// PROTOCOL.u2f says an authenticator signs, SHA256(application) || flags ||
// counter || SHA256(data), with the flags it is given.
type skSigner struct {
	ed      ed25519.PrivateKey
	ec      *ecdsa.PrivateKey
	pub     ssh.PublicKey
	flags   byte
	counter uint32
}

const skApplication = "ssh:"

func newSKSigner(t *testing.T, ecdsaKey bool, flags byte) *skSigner {
	t.Helper()
	s := &skSigner{flags: flags, counter: 42}
	var blob []byte
	if ecdsaKey {
		k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		s.ec = k
		blob = ssh.Marshal(struct {
			Name, Curve string
			Key         []byte
			App         string
		}{ssh.KeyAlgoSKECDSA256, "nistp256", elliptic.Marshal(elliptic.P256(), k.X, k.Y), skApplication})
	} else {
		pub, priv, _ := ed25519.GenerateKey(rand.Reader)
		s.ed = priv
		blob = ssh.Marshal(struct {
			Name string
			Key  []byte
			App  string
		}{ssh.KeyAlgoSKED25519, pub, skApplication})
	}
	pub, err := ssh.ParsePublicKey(blob)
	if err != nil {
		t.Fatal(err)
	}
	s.pub = pub
	return s
}

func (s *skSigner) PublicKey() ssh.PublicKey { return s.pub }

func (s *skSigner) Sign(_ io.Reader, data []byte) (*ssh.Signature, error) {
	app, msg := sha256.Sum256([]byte(skApplication)), sha256.Sum256(data)
	var fc [5]byte
	fc[0] = s.flags
	binary.BigEndian.PutUint32(fc[1:], s.counter)
	signed := append(append(app[:], fc[:]...), msg[:]...)
	if s.ed != nil {
		return &ssh.Signature{Format: ssh.KeyAlgoSKED25519, Blob: ed25519.Sign(s.ed, signed), Rest: fc[:]}, nil
	}
	h := sha256.Sum256(signed)
	r, ss, err := ecdsa.Sign(rand.Reader, s.ec, h[:])
	if err != nil {
		return nil, err
	}
	return &ssh.Signature{Format: ssh.KeyAlgoSKECDSA256, Blob: ssh.Marshal(struct{ R, S *big.Int }{r, ss}), Rest: fc[:]}, nil
}

// A security-key signature approves only with the user-presence flag: a
// signature the key made without a touch (flags 0x00) is ErrNoUserPresence.
// ssh-keygen -Y verify accepts all of them, which shows the stand-in signs
// as a real authenticator does and that the flag alone is refused.
func TestSecurityKeyPresence(t *testing.T) {
	for _, kind := range []struct {
		name  string
		ecdsa bool
	}{{"sk-ssh-ed25519", false}, {"sk-ecdsa-sha2-nistp256", true}} {
		t.Run(kind.name, func(t *testing.T) {
			for _, flags := range []byte{0x01, 0x05, 0x00, 0x04} {
				s := newSKSigner(t, kind.ecdsa, flags)
				sig, err := Sign(s, digest, Namespace)
				if err != nil {
					t.Fatal(err)
				}
				allowed := allowedLine(principal, `namespaces="act-approval"`, s.PublicKey())
				signers := mustParse(t, allowed)
				a, err := Verify(sig, digest, Namespace, signers)
				present := flags&0x01 != 0
				if present {
					if err != nil {
						t.Fatalf("flags 0x%02x: %v", flags, err)
					}
					if !a.SecurityKey || !a.UserPresent || a.Flags != flags || a.Counter != 42 || a.KeyType != s.pub.Type() {
						t.Errorf("flags 0x%02x: approval %+v", flags, a)
					}
					// x/crypto checks the signature over flags and counter:
					// the same signature claiming another counter fails.
					forged := resignRest(t, sig, []byte{flags, 0, 0, 0, 43})
					if _, err := Verify(forged, digest, Namespace, signers); !errors.Is(err, ErrBadSignature) {
						t.Errorf("altered counter: got %v, want ErrBadSignature", err)
					}
				} else if !errors.Is(err, ErrNoUserPresence) || a != nil {
					t.Errorf("flags 0x%02x: got %+v, %v; want ErrNoUserPresence", flags, a, err)
				}
				// Setting the presence flag on a signature made without it
				// does not make it verify.
				if !present {
					lifted := resignRest(t, sig, []byte{flags | 0x01, 0, 0, 0, 42})
					if _, err := Verify(lifted, digest, Namespace, signers); !errors.Is(err, ErrBadSignature) {
						t.Errorf("flag set after signing: got %v, want ErrBadSignature", err)
					}
				}
				// ssh-keygen -Y verify (OpenSSH 9.2) accepts both: the
				// signature is valid either way, and only the missing
				// flag makes Verify refuse it. ssh-keygen does not
				// require presence, so act cannot hand the check to it.
				if _, err := exec.LookPath("ssh-keygen"); err == nil {
					if err, out := keygenVerify(t, allowed, sig, digest, Namespace); err != nil {
						t.Errorf("flags 0x%02x: ssh-keygen -Y verify refused: %v\n%s", flags, err, out)
					}
				}
			}
		})
	}
}

// resignRest replaces the flags and counter after an sk signature, keeping
// the authenticator's signature bytes.
func resignRest(t *testing.T, armored, rest []byte) []byte {
	t.Helper()
	env, err := parse(armored)
	if err != nil {
		t.Fatal(err)
	}
	var sig ssh.Signature
	if err := ssh.Unmarshal(env.Signature, &sig); err != nil {
		t.Fatal(err)
	}
	sig.Rest = rest
	env.Signature = ssh.Marshal(sig)
	return armor(append([]byte(magic), ssh.Marshal(env)...))
}

func TestParseAllowedSigners(t *testing.T) {
	_, priv, _ := ed25519.GenerateKey(rand.Reader)
	signer, _ := ssh.NewSignerFromKey(priv)
	key := strings.TrimSpace(string(ssh.MarshalAuthorizedKey(signer.PublicKey())))
	keyType, b64, _ := strings.Cut(key, " ")

	text := "# approvers\n\n" +
		"alice@example.com " + key + "\n" +
		`"bob,carol" namespaces="act-approval,git",valid-after="20240101",valid-before="20991231235959Z" ` + key + " bob's laptop\n" +
		"\t dave  cert-authority-not " + key + "\n"
	_, err := ParseAllowedSigners(strings.NewReader(text))
	if err == nil || !strings.Contains(err.Error(), "line 5") {
		t.Fatalf("unknown option on line 5: got %v", err)
	}
	text = strings.Replace(text, "cert-authority-not ", "", 1)
	got := mustParse(t, text)
	if len(got) != 3 {
		t.Fatalf("got %d signers", len(got))
	}
	if g := got[0]; fmt.Sprintf("%v %v %v %v", g.Principals, g.Namespaces, g.Line, g.Comment) != "[alice@example.com] [] 3 " {
		t.Errorf("line 3: %+v", g)
	}
	g := got[1]
	after := time.Date(2024, 1, 1, 0, 0, 0, 0, time.Local)
	before := time.Date(2099, 12, 31, 23, 59, 59, 0, time.UTC)
	if fmt.Sprintf("%v %v %v %v", g.Principals, g.Namespaces, g.Line, g.Comment) != "[bob carol] [act-approval git] 4 bob's laptop" ||
		!g.ValidAfter.Equal(after) || !g.ValidBefore.Equal(before) || !bytes.Equal(g.Key.Marshal(), signer.PublicKey().Marshal()) {
		t.Errorf("line 4: %+v", g)
	}
	if g := got[2]; fmt.Sprintf("%v %v", g.Principals, g.Line) != "[dave] 5" {
		t.Errorf("line 5: %+v", g)
	}

	rsa1024, _ := rsa.GenerateKey(rand.Reader, 1024)
	weak, _ := ssh.NewPublicKey(&rsa1024.PublicKey)
	cert := &ssh.Certificate{Key: signer.PublicKey(), CertType: ssh.UserCert, ValidPrincipals: []string{"a"}, ValidBefore: ssh.CertTimeInfinity}
	if err := cert.SignCert(rand.Reader, signer); err != nil {
		t.Fatal(err)
	}
	bad := []struct{ line, want string }{
		{"a cert-authority " + key, "cert-authority is not supported"},
		{"a nope=\"x\" " + key, `option "nope" is not supported`},
		{"a namespaces=act-approval " + key, "double quotes"},
		{"a namespaces=\"\" " + key, "empty namespace"},
		{"a namespaces=\"act-*\" " + key, "patterns"},
		{"a namespaces=\"x\",namespaces=\"y\" " + key, "given twice"},
		{"a valid-after=\"2024\" " + key, "YYYYMMDD"},
		{"a valid-after=\"20240230\" " + key, "YYYYMMDD"},
		{"a valid-after=\"20250101\",valid-before=\"20240101\" " + key, "not before"},
		{"*@example.com " + key, "patterns"},
		{"!mallory,alice " + key, "patterns"},
		{"a,,b " + key, "empty principal"},
		{"a", "missing key"},
		{"a " + keyType, "missing base64"},
		{"a " + keyType + " !!!!", "bad base64"},
		{"a " + keyType + " " + b64[:20], "key:"},
		{"a ssh-rsa " + b64, "the line says"},
		{"a " + strings.TrimSpace(string(ssh.MarshalAuthorizedKey(weak))), "1024 bits"},
		{"a " + strings.TrimSpace(string(ssh.MarshalAuthorizedKey(cert))), "certificates are not supported"},
		{`"a ` + key, "unterminated quote"},
	}
	for _, b := range bad {
		_, err := ParseAllowedSigners(strings.NewReader("# first\n" + b.line + "\n"))
		if err == nil || !strings.Contains(err.Error(), "line 2:") || !strings.Contains(err.Error(), b.want) {
			t.Errorf("%q: got %v, want line 2 and %q", b.line, err, b.want)
		}
	}
}

// ssh-keygen accepts the allowed_signers lines act accepts, options and all.
func TestAllowedSignersKeygenAgrees(t *testing.T) {
	path, signer := keygen(t, "-t", "ed25519")
	sig, err := SignWithKeygen(context.Background(), path, digest, Namespace, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		options string
		ok      bool
	}{
		{`namespaces="act-approval"`, true},
		{`namespaces="git,act-approval",valid-after="20200101",valid-before="20991231Z"`, true},
		{`namespaces="git"`, false},
		{`valid-before="20200101Z"`, false},
		{`valid-after="29990101"`, false},
	} {
		allowed := allowedLine(principal, c.options, signer.PublicKey())
		_, ours := Verify(sig, digest, Namespace, mustParse(t, allowed))
		theirs, out := keygenVerify(t, allowed, sig, digest, Namespace)
		if (ours == nil) != c.ok || (theirs == nil) != c.ok {
			t.Errorf("%s: Verify %v, ssh-keygen %v %s; want ok=%v", c.options, ours, theirs, out, c.ok)
		}
	}
}

func TestSignWithKeygenFails(t *testing.T) {
	needKeygen(t)
	var stderr bytes.Buffer
	_, err := SignWithKeygen(context.Background(), filepath.Join(t.TempDir(), "absent"), digest, Namespace, &stderr)
	if err == nil || stderr.Len() == 0 || !strings.Contains(err.Error(), stderr.String()[:10]) {
		t.Fatalf("absent key: %v (stderr %q)", err, stderr.String())
	}
	if _, err := SignWithKeygen(context.Background(), "-D", digest, Namespace, nil); err == nil {
		t.Fatal("a key path like a flag was run")
	}
}

func FuzzVerify(f *testing.F) {
	_, priv, _ := ed25519.GenerateKey(rand.Reader)
	signer, _ := ssh.NewSignerFromKey(priv)
	good, _ := Sign(signer, digest, Namespace)
	signers := []AllowedSigner{{Principals: []string{principal}, Key: signer.PublicKey()}}
	f.Add(good, digest)
	f.Add(good[:100], digest)
	f.Add([]byte(armorBegin+"\nU1NIU0lHAAAAAQ==\n"+armorEnd), digest)
	f.Add([]byte("garbage"), []byte(""))
	blob, _ := parseBlob(good)
	f.Add(blob, digest)
	f.Fuzz(func(t *testing.T, armored, message []byte) {
		a, err := Verify(armored, message, Namespace, signers)
		if (a == nil) == (err == nil) {
			t.Fatalf("approval %+v with error %v", a, err)
		}
		if err == nil && (!bytes.Equal(message, digest) || a.Principal != principal) {
			t.Fatalf("accepted %q over %q", armored, message)
		}
	})
}

func FuzzParseAllowedSigners(f *testing.F) {
	_, priv, _ := ed25519.GenerateKey(rand.Reader)
	signer, _ := ssh.NewSignerFromKey(priv)
	f.Add(allowedLine(principal, `namespaces="act-approval",valid-before="20991231Z"`, signer.PublicKey()))
	f.Add(`"a b" cert-authority ssh-ed25519 AAAA`)
	f.Add("# c\n\n a,b x=\"\\\"\" ssh-rsa")
	f.Fuzz(func(t *testing.T, text string) {
		signers, err := ParseAllowedSigners(strings.NewReader(text))
		for _, s := range signers {
			if err == nil && (s.Key == nil || len(s.Principals) == 0 || s.Line < 1) {
				t.Fatalf("incomplete signer %+v", s)
			}
		}
	})
}

func TestMessage(t *testing.T) {
	if got := string(Message("  sha256:abc\n")); got != "sha256:abc\n" {
		t.Fatalf("Message = %q", got)
	}
}

// TestAsNobody runs this package's tests again as uid 65534: nothing here
// needs root.
func TestAsNobody(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("not root: the tests already run as an ordinary user")
	}
	if _, err := exec.LookPath("setpriv"); err != nil {
		t.Skip("setpriv (util-linux) is not installed")
	}
	dir, err := os.MkdirTemp("", "sshsig-nobody-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(exe)
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "sshsig.test")
	if err := os.WriteFile(bin, b, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--", bin, "-test.skip=^TestAsNobody$", "-test.count=1", "-test.v")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "TMPDIR="+dir, "HOME="+dir)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("as nobody: %v\n%s", err, out)
	}
	if !bytes.Contains(out, []byte("--- PASS: TestKeygenSignsVerifyAccepts")) {
		t.Fatalf("as nobody, the ssh-keygen tests did not run:\n%s", out)
	}
	t.Logf("as nobody:\n%s", out)
}

// startAgent runs ssh-agent for the test and returns its socket.
func startAgent(t *testing.T) string {
	t.Helper()
	if _, err := exec.LookPath("ssh-agent"); err != nil {
		t.Skip("ssh-agent is not installed")
	}
	sock := filepath.Join(t.TempDir(), "agent.sock")
	cmd := exec.Command("ssh-agent", "-D", "-a", sock)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	// ssh-agent prints SSH_AUTH_SOCK once its socket listens (the socket
	// exists between bind and listen, so its presence proves nothing).
	said := make(chan string, 1)
	go func() {
		line, _ := bufio.NewReader(stdout).ReadString('\n')
		said <- line
	}()
	select {
	case line := <-said:
		if want := "SSH_AUTH_SOCK=" + sock + ";"; !strings.HasPrefix(line, want) {
			t.Fatalf("ssh-agent said %q, want a line starting %q", line, want)
		}
	case <-time.After(2 * time.Minute): // a liveness bound, not a speed one
		t.Fatalf("hung: ssh-agent did not say it listens on %s in two minutes", sock)
	}
	return sock
}

// A key held only by ssh-agent signs approvals, through the Go agent client
// (RSA with rsa-sha2-512) and through ssh-keygen given the public key.
func TestAgentSigns(t *testing.T) {
	for _, k := range []struct {
		name string
		args []string
	}{{"ed25519", []string{"-t", "ed25519"}}, {"rsa", []string{"-t", "rsa", "-b", "2048"}}} {
		t.Run(k.name, func(t *testing.T) {
			path, signer := keygen(t, k.args...)
			sock := startAgent(t)
			t.Setenv("SSH_AUTH_SOCK", sock)
			if out, err := exec.Command("ssh-add", "-q", path).CombinedOutput(); err != nil {
				t.Fatalf("ssh-add: %v\n%s", err, out)
			}
			// Only the public key is left on disk.
			if err := os.Remove(path); err != nil {
				t.Fatal(err)
			}
			signers := mustParse(t, allowedLine(principal, "", signer.PublicKey()))

			conn, err := net.Dial("unix", sock)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			agentSigners, err := agent.NewClient(conn).Signers()
			if err != nil || len(agentSigners) != 1 {
				t.Fatalf("agent signers: %v, %v", agentSigners, err)
			}
			sig, err := Sign(agentSigners[0], digest, Namespace)
			if err != nil {
				t.Fatal(err)
			}
			a, err := Verify(sig, digest, Namespace, signers)
			if err != nil {
				t.Fatalf("Verify agent signature: %v", err)
			}
			if k.name == "rsa" && a.SignatureAlgorithm != ssh.KeyAlgoRSASHA512 {
				t.Errorf("agent RSA signature is %s", a.SignatureAlgorithm)
			}

			sig, err = SignWithKeygen(context.Background(), path+".pub", digest, Namespace, nil)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := Verify(sig, digest, Namespace, signers); err != nil {
				t.Fatalf("Verify ssh-keygen agent signature: %v", err)
			}
		})
	}
}
