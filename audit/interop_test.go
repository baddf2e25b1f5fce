package audit

import (
	"bytes"
	"context"
	"crypto"
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/secure-systems-lab/go-securesystemslib/dsse"
	"golang.org/x/mod/sumdb/note"
)

type edVerifier struct{ pub ed25519.PublicKey }

func (v edVerifier) Verify(_ context.Context, data, sig []byte) error {
	if !ed25519.Verify(v.pub, data, sig) {
		return errors.New("bad signature")
	}
	return nil
}
func (v edVerifier) KeyID() (string, error)   { return KeyID(v.pub), nil }
func (v edVerifier) Public() crypto.PublicKey { return v.pub }

// TestIndependentVerifiers checks every record with go-securesystemslib's
// DSSE verifier and every checkpoint with note.Open, implementations that
// share nothing with Verify.
func TestIndependentVerifiers(t *testing.T) {
	dir := fill(t, 3)
	pemb, _ := os.ReadFile(filepath.Join(dir, PublicKeyFile))
	pub, err := ParsePublicKeyPEM(pemb)
	if err != nil {
		t.Fatal(err)
	}
	ev, err := dsse.NewEnvelopeVerifier(edVerifier{pub})
	if err != nil {
		t.Fatal(err)
	}
	l, err := Open(dir, testOrigin)
	if err != nil {
		t.Fatal(err)
	}
	nv, err := note.NewVerifier(l.NoteVerifierKey())
	l.Close()
	if err != nil {
		t.Fatal(err)
	}
	for i, ln := range readLines(t, dir) {
		var env dsse.Envelope
		if err := json.Unmarshal(ln, &env); err != nil {
			t.Fatal(err)
		}
		accepted, payload, err := ev.VerifyAndDecode(context.Background(), &env)
		if err != nil || len(accepted) != 1 || accepted[0].KeyID != KeyID(pub) {
			t.Fatalf("record %d: dsse: %v %v", i, accepted, err)
		}
		var st map[string]any
		json.Unmarshal(payload, &st)
		if st["_type"] != StatementType || st["predicateType"] != PredicateType {
			t.Errorf("record %d: statement %v", i, st)
		}
		var withCP struct{ Checkpoint string }
		json.Unmarshal(ln, &withCP)
		n, err := note.Open([]byte(withCP.Checkpoint), note.VerifierList(nv))
		if err != nil || !strings.HasPrefix(n.Text, testOrigin+"\n") {
			t.Fatalf("record %d: checkpoint: %v", i, err)
		}
	}
	cp, _ := os.ReadFile(filepath.Join(dir, CheckpointFile))
	if n, err := note.Open(cp, note.VerifierList(nv)); err != nil || !strings.HasPrefix(n.Text, testOrigin+"\n3\n") {
		t.Fatalf("checkpoint file: %v %q", err, cp)
	}
}

// TestOpenSSL runs the README's commands ("Checking a record with
// openssl") on a real record.
func TestOpenSSL(t *testing.T) {
	openssl, err := exec.LookPath("openssl")
	if err != nil {
		t.Skip("no openssl")
	}
	for _, tool := range []string{"jq", "base64", "printf", "sh"} {
		if _, err := exec.LookPath(tool); err != nil && tool != "printf" {
			t.Skip("no " + tool)
		}
	}
	dir := fill(t, 2)
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	const start, end = "<!-- openssl-check -->\n```sh\n", "```\n"
	i := bytes.Index(readme, []byte(start))
	if i < 0 {
		t.Fatal("README has no openssl-check block")
	}
	script := readme[i+len(start):]
	script = script[:bytes.Index(script, []byte(end))]
	work := t.TempDir()
	run := func(script string) (string, error) {
		c := exec.Command("sh", "-euc", script)
		c.Dir = work
		c.Env = append(os.Environ(), "ACT_AUDIT="+dir, "SEQ=1", "PATH="+filepath.Dir(openssl)+":"+os.Getenv("PATH"))
		out, err := c.CombinedOutput()
		return string(out), err
	}
	out, err := run(string(script))
	if err != nil || !strings.Contains(out, "Signature Verified Successfully") {
		t.Fatalf("README openssl check failed: %v\n%s\n%s", err, script, out)
	}
	// The same commands on an altered record fail.
	lines := readLines(t, dir)
	lines[1] = bytes.Replace(lines[1], []byte(`"payload":"ey`), []byte(`"payload":"fy`), 1)
	writeLines(t, dir, lines)
	if out, err := run(string(script)); err == nil {
		t.Fatalf("altered record verified:\n%s", out)
	}
	// The key fingerprint the README shows is the keyid.
}
