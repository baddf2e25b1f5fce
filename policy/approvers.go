package policy

import (
	"errors"
	"fmt"
	"strings"
)

// ErrNoSystemApprovers: the system policy asks for signed confirmations
// and names no approvers, so nothing approves.
var ErrNoSystemApprovers = errors.New("the system policy asks for signed confirmations but names no approvers (the user's policy cannot name them)")

// AllowedSigners returns the approvers of signed confirmations as
// allowed_signers text: the policy's approvers lines, then its
// approvers_file's. Under a system policy with confirmation.via: signed
// only the approvers the system layer names count — a user layer, which an
// agent running as the user can write, appoints none — and with none it is
// ErrNoSystemApprovers. An approvers_file counts only if root alone could
// have written it and every directory above it ([ReadTrusted]); else the
// error names the file and why (docs/approvals.md).
func (p *Policy) AllowedSigners() (string, error) {
	c := p.Confirmation
	if p.floor != nil && p.floor.Confirmation.Via == ViaSigned {
		c = p.floor.Confirmation
		if len(c.Approvers) == 0 && c.ApproversFile == "" {
			return "", ErrNoSystemApprovers
		}
	}
	text := strings.Join(c.Approvers, "\n")
	if f := c.ApproversFile; f != "" {
		b, err := ReadTrusted(f)
		var ue *UntrustedError
		switch {
		case errors.As(err, &ue):
			return "", fmt.Errorf("the policy's approvers_file is refused: %w (an approvers file counts only if it and every directory above it belong to root and no one else can write them)", err)
		case err != nil:
			return "", fmt.Errorf("the policy's approvers_file: %w", err)
		}
		text += "\n" + string(b)
	}
	return text, nil
}
