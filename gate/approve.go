package gate

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/user"
	"strconv"
	"strings"

	"github.com/act-project/act/diff"
	"github.com/act-project/act/internal/outcome"
	"github.com/act-project/act/internal/sshsig"
	"github.com/act-project/act/plan"
	"github.com/act-project/act/policy"
	"github.com/act-project/act/rollback"
)

// Approval: what the host counts as a person's confirmation, and the check
// of one offered (docs/approvals.md).

// An Approval is how a person confirmed: the record kept with the action
// (who, how; rollback.Approval) and what was offered to check it.
type Approval struct {
	rollback.Approval
	// Signature is the armored signature offered, checked by Approve
	// against its own PlanDigest of the plan it approves; Digest is what
	// the signer was given to sign, which the gate does not take.
	Signature []byte `json:"-"`
	Digest    string `json:"-"`
}

// The ways a person can confirm: the policy's, and none (no confirmation
// was needed).
const (
	ViaNone     = "none"
	ViaFlag     = policy.ViaFlag
	ViaTerminal = policy.ViaTerminal
	ViaSigned   = policy.ViaSigned
)

// Where a door was told a yes came from (Approval.Reported), when act
// did not see it given: a person at the agent's permission prompt, or a
// program answering that prompt (docs/agents.md, "Who answers").
const (
	ReportedAgentPrompt   = "agent-prompt"
	ReportedPromptProgram = "prompt-program"
)

// NewApproval returns an approval of kind via by the user running act.
func NewApproval(via string) Approval {
	a := Approval{Approval: rollback.Approval{Via: via, UID: os.Getuid()}}
	if u, err := user.LookupId(strconv.Itoa(a.UID)); err == nil {
		a.User = u.Username
	}
	return a
}

// ConfirmationRequired is the outcome of a promotion or forced rollback
// that needs a person's confirmation it did not get: the plan is pending.
type ConfirmationRequired struct {
	PlanID string
	// Why lists every reason, not the first.
	Why []string
	// Via is what the host counts as a confirmation.
	Via string
	// Refused says why an offered confirmation did not count; empty when
	// none was offered.
	Refused string
	// Approve is the command line that approves the plan (Gate.ActLine).
	Approve string
}

func (e *ConfirmationRequired) Error() string {
	msg := "confirmation required: " + strings.Join(e.Why, "; ")
	if e.Refused != "" {
		msg += "; " + e.Refused
	}
	if e.PlanID != "" {
		msg += "; the plan is pending: approve it with " + cmp.Or(e.Approve, "act apply "+e.PlanID+" --confirm")
	}
	return msg
}

// Rule is the rule id of the outcome.
func (e *ConfirmationRequired) Rule() string { return e.Outcome().Rule }

// Outcome is queued: confirm.required, or confirm.not-accepted when what
// was offered does not count.
func (e *ConfirmationRequired) Outcome() outcome.Outcome {
	if e.Refused != "" {
		return outcome.NotAccepted
	}
	return outcome.Queued
}

// Via is what the host's policy counts as a person's confirmation
// (loading a policy gives it its default, flag; an empty one counts
// nothing).
func (g *Gate) Via() string { return g.Policy.Confirmation.Via }

// PlanDigest is what a signed approval of p signs (as sshsig.Message of
// it): the sha256 of the plan's id, its descriptor's digest and its
// changes, so a signature approves exactly the reviewed diff.
func PlanDigest(p *plan.Plan) string {
	b, _ := json.Marshal(struct {
		PlanID           string        `json:"plan_id"`
		DescriptorDigest string        `json:"descriptor_digest"`
		Changes          []diff.Change `json:"changes"`
	}{p.ID, p.DescriptorDigest, p.Changes})
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// approvers returns the policy's allowed signers: only those that count
// (policy.Policy.AllowedSigners, docs/approvals.md).
func (g *Gate) approvers() ([]sshsig.AllowedSigner, error) {
	text, err := g.Policy.AllowedSigners()
	if err != nil {
		return nil, err
	}
	return sshsig.ParseAllowedSigners(strings.NewReader(text))
}

// verifySigned checks a signed approval of plan digest against the
// policy's approvers, and fills in who signed.
func (g *Gate) verifySigned(ap *Approval, digest string) error {
	signers, err := g.approvers()
	if err != nil {
		return err
	}
	if len(signers) == 0 {
		return errors.New("the host policy asks for signed confirmations but lists no approvers")
	}
	got, err := sshsig.Verify(ap.Signature, sshsig.Message(digest), sshsig.Namespace, signers)
	if err != nil {
		return err
	}
	ap.Principal, ap.KeyFingerprint = got.Principal, got.KeyFingerprint
	return nil
}

// Approve checks ap against what the host counts as a person's
// confirmation, when adm needs one; it returns the approval to record.
func (g *Gate) Approve(why []string, p *plan.Plan, ap Approval) (Approval, error) {
	if len(why) == 0 {
		if ap.Via == "" {
			ap = NewApproval(ViaNone)
		}
		return ap, nil
	}
	need := &ConfirmationRequired{Why: why, Via: g.Via()}
	if p != nil {
		need.PlanID, need.Approve = p.ID, g.actLine("apply", p.ID, "--confirm")
	}
	switch {
	case ap.Via == "" || ap.Via == ViaNone:
		return ap, need
	case g.Via() == ViaFlag && (ap.Via == ViaFlag || ap.Via == ViaTerminal):
		return ap, nil
	case g.Via() == ViaTerminal && ap.Via == ViaTerminal:
		return ap, nil
	case g.Via() == ViaSigned && ap.Via == ViaSigned:
		if p == nil {
			need.Refused = "a signed approval approves a plan, and there is none here"
			return ap, need
		}
		// The digest is the gate's own of this plan, never the one
		// offered with the signature: a signature of another plan
		// approves nothing here.
		if err := g.verifySigned(&ap, PlanDigest(p)); err != nil {
			need.Refused = "the signature does not approve this plan: " + err.Error()
			return ap, need
		}
		return ap, nil
	}
	need.Refused = fmt.Sprintf("the host policy counts only %s as a person's confirmation, and this was %s", viaWords(g.Via()), viaWords(ap.Via))
	return ap, need
}

func viaWords(via string) string {
	switch via {
	case ViaFlag:
		return "--confirm or a yes at the terminal"
	case ViaTerminal:
		return "a yes typed at the controlling terminal"
	case ViaSigned:
		return "an SSH signature by a listed approver"
	}
	return via
}
