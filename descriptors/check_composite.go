package descriptors

// Composite rules (docs/descriptor.md):
//   - each step is checked on its own, against the scope, resources,
//     sandbox and rollback it inherits from the descriptor;
//   - the descriptor is depth 1, its steps depth 2; no step may stand deeper
//     than MaxStepDepth;
//   - a step's risk_level, when given, is at most its parent's;
//   - every effect a step declares lies within an effect of the same kind
//     its parent declares: the parent's effects cover what its children
//     declare (effects.network and system_state_change included).
//
// Declaring more on the parent than its steps do is not an error here: the
// plan warns about declared effects that did not happen.

import "github.com/act-project/act/internal/pathglob"

func (c *checker) checkSteps(n node, depth int) {
	sets := newEffectSets(n.effects.Filesystem)
	sets.effects = n.effects
	for i, s := range n.steps {
		ch := n.child(i)
		if depth+1 > MaxStepDepth {
			c.add("composite.too-deep", ch.path,
				"this step stands at depth %d, deeper than the limit of %d", depth+1, MaxStepDepth)
			continue
		}
		if s.IntentSummary != "" {
			c.checkIntent(field(ch.path, "intent_summary"), s.IntentSummary)
		}
		if s.RiskLevel != "" && s.RiskLevel.Rank() > n.risk.Rank() {
			c.add("composite.step-risk-above-parent", field(ch.path, "risk_level"),
				"the step's risk_level %s is above its parent's %s", s.RiskLevel, n.risk)
		}
		c.checkStepSandbox(n, ch, s)
		c.checkStepEffects(sets, ch)
		c.checkNode(ch, depth+1)
	}
}

// checkStepSandbox reports a step that needs a sandbox its descriptor does
// not ask for. A risk inherited from the parent is reported at the parent.
func (c *checker) checkStepSandbox(parent, ch node, s Step) {
	if c.d.Sandbox.Required {
		return
	}
	if why := sandboxReason(ch.typ, ""); why != "" {
		c.add("sandbox.required", field(ch.path, "action_type"),
			"sandbox.required is false, but this step is %s, which must run in a sandbox", why)
		return
	}
	if s.RiskLevel != "" && sandboxReason("", s.RiskLevel) != "" && sandboxReason("", parent.risk) == "" {
		c.add("sandbox.required", field(ch.path, "risk_level"),
			"sandbox.required is false, but this step is of risk %s, which must run in a sandbox", s.RiskLevel)
	}
}

// checkStepEffects reports every effect of ch its parent does not cover.
// sets are the parent's effects.
func (c *checker) checkStepEffects(sets *effectSets, ch node) {
	cfs := ch.effects.Filesystem
	for _, kind := range []string{"create", "modify", "delete"} {
		for i, e := range effectList(cfs, kind) {
			if c.tooManyGlobs || CheckPath(e) != nil || pathTooLong(e) != "" || pathglob.Valid(e) != nil {
				continue // reported by checkEffects
			}
			if !sets.cover([]string{kind}, e) {
				c.add("composite.step-effects-outside-parent", field(ch.path, "effects", "filesystem", kind, idx(i)),
					"the step declares %s %q, which no %s effect of its parent covers", kind, e, kind)
			}
		}
	}
	parent := sets.effects
	if ch.effects.Network && !parent.Network {
		c.add("composite.step-effects-outside-parent", field(ch.path, "effects", "network"),
			"the step declares effects.network true but its parent declares false")
	}
	if ch.effects.SystemStateChange && !parent.SystemStateChange {
		c.add("composite.step-effects-outside-parent", field(ch.path, "effects", "system_state_change"),
			"the step declares effects.system_state_change true but its parent declares false")
	}
}
