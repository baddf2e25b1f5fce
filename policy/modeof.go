package policy

import "github.com/act-project/act/descriptors"

// ModeOf is the mode p gives action type t at risk r, bounded by the
// system policy as [Policy.Decide] bounds it, with its source and reason
// and no blocks: the gate decides a plan by the action types its changes
// amount to with it (docs/risk.md).
func (p *Policy) ModeOf(t descriptors.ActionType, r descriptors.RiskLevel) Decision {
	m, src := p.ModeFor(t, r)
	dec := Decision{Mode: m, Source: src, Reason: reason(element{typ: t, risk: r}, m, src)}
	if p.floor != nil {
		if sys := p.floor.ModeOf(t, r); sys.Mode == dec.Mode && p.userLayer().ModeOf(t, r).Mode.Rank() < dec.Mode.Rank() {
			dec.Mode, dec.Source, dec.Reason = sys.Mode, sys.Source+" (system policy)", sys.Reason+" (the system policy)"
		}
	}
	return dec
}
