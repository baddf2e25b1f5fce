package gate

import (
	"crypto/ed25519"
	"crypto/rand"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/crypto/ssh"

	"github.com/act-project/act/internal/sshsig"
	"github.com/act-project/act/plan"
	"github.com/act-project/act/policy"
)

// TestSelfAppointedApprover: under a system policy asking for signed
// confirmations and naming no approvers, an agent that lists its own key
// in the user's policy and signs the plan's digest with it does not
// approve the plan: only the system's approvers count, and it names none.
func TestSelfAppointedApprover(t *testing.T) {
	signer, line := newSigner(t, "agent@example.org")

	dir := t.TempDir()
	os.Chmod(dir, 0o755)
	sys := filepath.Join(dir, "policy.yaml")
	user := filepath.Join(dir, "user.yaml")
	os.WriteFile(sys, []byte("confirmation: {via: signed}\n"), 0o644)
	os.WriteFile(user, []byte("confirmation: {approvers: [\""+line+"\"]}\n"), 0o644)
	oldFile, oldOwner := policy.SystemFile, policy.SystemOwner
	defer func() { policy.SystemFile, policy.SystemOwner = oldFile, oldOwner }()
	policy.SystemFile, policy.SystemOwner = sys, uint32(os.Geteuid())
	pol, _, err := policy.Load(policy.LoadOptions{Flag: user})
	if err != nil {
		t.Fatal(err)
	}
	g := &Gate{Policy: pol}
	p := &plan.Plan{ID: "0123456789abcdef", ActionID: "a", DescriptorDigest: strings.Repeat("ab", 32)}
	digest := PlanDigest(p)
	sig, err := sshsig.Sign(signer, sshsig.Message(digest), sshsig.Namespace)
	if err != nil {
		t.Fatal(err)
	}
	ap := NewApproval(ViaSigned)
	ap.Signature, ap.Digest = sig, digest
	_, err = g.Approve([]string{"the policy mode is confirm"}, p, ap)
	var need *ConfirmationRequired
	if !errors.As(err, &need) {
		t.Fatalf("Approve() = %v: the agent's own signature approved its plan", err)
	}
	if !strings.Contains(need.Refused, "the system policy asks for signed confirmations but names no approvers") {
		t.Errorf("refused %q", need.Refused)
	}

	// The same signature, with no system policy and the key in the user's
	// own signed policy, does approve: the check above is the system's.
	policy.SystemFile = filepath.Join(dir, "none.yaml")
	os.WriteFile(user, []byte("confirmation: {via: signed, approvers: [\""+line+"\"]}\n"), 0o644)
	if pol, _, err = policy.Load(policy.LoadOptions{Flag: user}); err != nil {
		t.Fatal(err)
	}
	g.Policy = pol
	if _, err := g.Approve([]string{"the policy mode is confirm"}, p, ap); err != nil {
		t.Fatalf("Approve() with the user's own approvers and no system policy: %v", err)
	}
}

// newSigner makes a fresh ed25519 key: its signer, and its allowed_signers
// line for principal.
func newSigner(t *testing.T, principal string) (ssh.Signer, string) {
	t.Helper()
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	signer, err := ssh.NewSignerFromKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	k, err := ssh.NewPublicKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	return signer, principal + " " + strings.TrimSpace(string(ssh.MarshalAuthorizedKey(k)))
}
