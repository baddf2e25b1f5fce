package policy

import "github.com/act-project/act/descriptors"

// ModeOf is the mode p gives action type t at risk r, bounded by the
// system policy as [Policy.Decide] bounds it, with its source and reason
// and no blocks: the gate decides a plan by the action types its changes
// amount to with it (docs/risk.md).
func (p *Policy) ModeOf(t descriptors.ActionType, r descriptors.RiskLevel) Decision {
	if p.floor != nil {
		// As Decide: each layer as it was read, the stricter winning.
		dec := p.user.ModeOf(t, r)
		if sys := p.floor.ModeOf(t, r); sys.Mode.Rank() > dec.Mode.Rank() {
			dec.Mode, dec.Source, dec.Reason = sys.Mode, sys.Source+" (system policy)", sys.Reason+" (the system policy)"
		}
		return dec
	}
	m, src := p.ModeFor(t, r)
	return Decision{Mode: m, Source: src, Reason: reason(element{typ: t, risk: r}, m, src)}
}
