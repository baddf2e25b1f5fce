package policy

import (
	"crypto/ed25519"
	"crypto/rand"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/crypto/ssh"
)

// signerLine returns an allowed_signers line of a fresh ed25519 key.
func signerLine(t *testing.T, principal string) string {
	t.Helper()
	pub, _, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	k, err := ssh.NewPublicKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	return principal + " " + strings.TrimSpace(string(ssh.MarshalAuthorizedKey(k)))
}

// TestUserApproversUnderSystemSigned: under a system policy asking for
// signed confirmations, approvers a user layer names — in approvers or an
// approvers_file — do not count; with none of the system's, nothing
// approves, and act policy says so.
func TestUserApproversUnderSystemSigned(t *testing.T) {
	agent := signerLine(t, "agent@example.org")
	own := writeFile(t, t.TempDir(), "signers", agent+"\n")
	user := writeFile(t, t.TempDir(), "user.yaml", "confirmation: {approvers: [\""+agent+"\"], approvers_file: "+own+"}\n")

	asSystem(t, writeFile(t, trustedDir(t), "policy.yaml", "confirmation: {via: signed}\n"))
	p, _, err := Load(LoadOptions{Flag: user})
	if err != nil {
		t.Fatal(err)
	}
	text, err := p.AllowedSigners()
	if !errors.Is(err, ErrNoSystemApprovers) || strings.Contains(text, "agent") {
		t.Fatalf("AllowedSigners() = %q, %v; want %v", text, err, ErrNoSystemApprovers)
	}
	if !strings.Contains(err.Error(), "the system policy asks for signed confirmations but names no approvers") {
		t.Errorf("error %q", err)
	}
	if len(p.Confirmation.Approvers) != 0 || p.Confirmation.ApproversFile != "" || !p.UserApproversIgnored {
		t.Errorf("the effective confirmation keeps the user's approvers: %+v", p.Confirmation)
	}
	out := string(p.Marshal())
	for _, want := range []string{"the user policy's approvers and approvers_file are ignored", "It names none, so nothing approves", "approvers: [] # system policy"} {
		if !strings.Contains(out, want) {
			t.Errorf("act policy does not say %q:\n%s", want, out)
		}
	}

	// The system's approvers count, the user's still not.
	alice := signerLine(t, "alice@example.org")
	asSystem(t, writeFile(t, trustedDir(t), "policy.yaml", "confirmation: {via: signed, approvers: [\""+alice+"\"]}\n"))
	p, _, err = Load(LoadOptions{Flag: user})
	if err != nil {
		t.Fatal(err)
	}
	if text, err := p.AllowedSigners(); err != nil || !strings.Contains(text, "alice@") || strings.Contains(text, "agent@") {
		t.Errorf("AllowedSigners() = %q, %v; want alice's alone", text, err)
	}
}

// TestApproversFileOwnership: an approvers_file counts only if it and
// every directory above it belong to root and no one else can write them;
// a refusal names the path and why.
func TestApproversFileOwnership(t *testing.T) {
	old := SystemOwner
	defer func() { SystemOwner = old }()
	SystemOwner = uint32(os.Geteuid())
	line := signerLine(t, "alice@example.org")

	open := t.TempDir()
	os.Chmod(open, 0o777) // the agent's to write
	inOpen := writeFile(t, open, "signers", line+"\n")
	os.Chmod(open, 0o777)
	good := writeFile(t, trustedDir(t), "signers", line+"\n")
	groupW := writeFile(t, trustedDir(t), "signers", line+"\n")
	os.Chmod(groupW, 0o664)
	for _, tt := range []struct {
		file, why string
	}{
		{inOpen, inOpen + ": " + open + " is a directory others can write (mode 0777)"},
		{groupW, groupW + " is writable by others (mode 0664)"},
		{good, ""},
	} {
		p, err := Parse("p.yaml", []byte("confirmation: {via: signed, approvers_file: "+tt.file+"}\n"), userHome)
		if err != nil {
			t.Fatal(err)
		}
		text, err := p.AllowedSigners()
		if tt.why == "" {
			if err != nil || !strings.Contains(text, "alice@") {
				t.Errorf("%s: %q, %v", tt.file, text, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tt.why) || !strings.Contains(err.Error(), "approvers_file is refused") {
			t.Errorf("%s: AllowedSigners() = %q, %v; want refused, saying %q", tt.file, text, err, tt.why)
		}
	}
	if _, err := os.Stat(filepath.Join(open, "signers")); err != nil {
		t.Fatal(err)
	}
}
