package policy

import (
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/act-project/act/descriptors"
	"github.com/act-project/act/internal/problem"
)

// Rule ids of the blocks [Policy.Decide] reports.
const (
	RuleDeny           = "policy.deny"
	RuleOutsideRoots   = "policy.outside-allowed-roots"
	RuleResourceCap    = "policy.resource-cap"
	RuleUIAutomation   = "policy.ui-automation"
	RuleNetworkHost    = "policy.network-host"
	RuleSandboxNetwork = "policy.sandbox-network"
	RuleStaleIntent    = "policy.stale-intent"
)

// A Decision is what the host's policy says about one descriptor.
type Decision struct {
	// Mode is the strictest mode of the action and, for a composite, of its
	// steps. It is reported even when the action is blocked.
	Mode Mode `json:"mode"`
	// Source is where Mode comes from: SourceTypeOverride or
	// SourceRiskDefault.
	Source string `json:"source"`
	// Reason says in one sentence why the mode is Mode.
	Reason string `json:"reason"`
	// Blocked lists every reason the action may not run (layer
	// problem.Policy), without file positions. Empty when nothing blocks.
	Blocked problem.List `json:"blocked,omitempty"`
}

// element is the descriptor itself or one step, with what the policy needs.
type element struct {
	path      []string // field path of the element: nil, or steps.0...
	typ       descriptors.ActionType
	risk      descriptors.RiskLevel
	riskField []string // where risk is written (a step may inherit it)
	op        descriptors.Operation
}

func (e element) field(names ...string) []string {
	return append(e.path[:len(e.path):len(e.path)], names...)
}

// Decide returns the mode of d under p, where it comes from, and every block.
// now is the current time, for the stale-intent check of created_at.
//
// The mode is the type override for the action type if the policy has one,
// else the risk default; a composite's mode is the strictest of its own and
// each step's, recursively (a step without risk_level takes its parent's).
// The blocks are, in this order: deny mode (policy.deny), a scope path
// outside every allowed root (policy.outside-allowed-roots), a resource
// above its cap (policy.resource-cap), UI_AUTOMATION (policy.ui-automation),
// a NETWORK_REQUEST host not allow-listed (policy.network-host), network in
// the sandbox where the policy gives none (policy.sandbox-network) and a
// created_at older than the plan expiry (policy.stale-intent). Steps count
// for the type-specific blocks.
func (p *Policy) Decide(d *descriptors.Descriptor, now time.Time) Decision {
	if p.floor == nil {
		return p.decide(d, now)
	}
	// Under a system policy, p's values are the enforced ones; deciding
	// by each layer as it was read gives the same mode and blocks, and
	// says which layer decided.
	dec := p.user.decide(d, now)
	// Bounded by the system policy: the stricter mode, every block of
	// either (once).
	sys := p.floor.decide(d, now)
	if sys.Mode.Rank() > dec.Mode.Rank() {
		dec.Mode, dec.Source, dec.Reason = sys.Mode, sys.Source+" (system policy)", sys.Reason+" (the system policy)"
	}
	seen := map[string]bool{}
	for _, b := range dec.Blocked {
		seen[b.Rule+"\x00"+b.Field] = true
	}
	for _, b := range sys.Blocked {
		if !seen[b.Rule+"\x00"+b.Field] {
			b.Message += " (the system policy)"
			dec.Blocked = append(dec.Blocked, b)
		}
	}
	return dec
}

// decide is Decide for this layer alone.
func (p *Policy) decide(d *descriptors.Descriptor, now time.Time) Decision {
	elems := elements(d)
	var dec Decision
	var b blocks

	for i, e := range elems {
		m, src := p.ModeFor(e.typ, e.risk)
		if i == 0 || m.Rank() > dec.Mode.Rank() {
			dec.Mode, dec.Source, dec.Reason = m, src, reason(e, m, src)
		}
		if m.Rank() >= Deny.Rank() {
			if src == SourceTypeOverride {
				b.add(RuleDeny, e.field("action_type"), "the host policy denies action type %s", e.typ)
			} else {
				b.add(RuleDeny, e.riskField, "the host policy denies risk level %s", e.risk)
			}
		}
	}

	for i, sp := range d.Scope.Filesystem.Paths {
		if !p.underOwnRoot(sp) {
			b.add(RuleOutsideRoots, []string{"scope", "filesystem", "paths", strconv.Itoa(i)},
				"%s is outside every root the host policy allows (%s)", sp, rootsList(p.AllowedRoots))
		}
	}

	r, c := d.Resources, p.ResourceCaps
	for _, rc := range []struct {
		name       string
		value, cap int64
	}{
		{"max_cpu_ms", r.MaxCPUMs, c.MaxCPUMs},
		{"max_memory_mb", r.MaxMemoryMB, c.MaxMemoryMB},
		{"max_disk_mb", r.MaxDiskMB, c.MaxDiskMB},
		{"max_duration_ms", r.MaxDurationMs, c.MaxDurationMs},
	} {
		if rc.value > rc.cap {
			b.add(RuleResourceCap, []string{"resources", rc.name},
				"%s is %d, above the host policy's cap of %d", rc.name, rc.value, rc.cap)
		}
	}

	for _, e := range elems {
		if e.typ == descriptors.UIAutomation {
			b.add(RuleUIAutomation, e.field("action_type"),
				"no UI actuator on this host: UI automation is always blocked")
		}
	}

	for _, e := range elems {
		if e.typ != descriptors.NetworkRequest {
			continue
		}
		op, ok := e.op.(descriptors.NetworkRequestOp)
		if !ok {
			continue // the schema and rules report a missing or bad operation
		}
		u, err := url.Parse(op.URL)
		if err != nil || u.Hostname() == "" {
			b.add(RuleNetworkHost, e.field("operation", "url"),
				"the URL has no host the host policy could allow")
			continue
		}
		if !p.ownHostAllowed(u.Hostname()) {
			b.add(RuleNetworkHost, e.field("operation", "url"),
				"host %s is not in the host policy's network.allowed_hosts (%s)", u.Hostname(), hostsList(p.Network.AllowedHosts))
		}
	}

	if !p.Network.SandboxNetwork {
		runsCommands := d.Verification != nil && len(d.Verification.Commands) > 0
		for _, e := range elems {
			switch e.typ {
			case descriptors.CommandExecution:
				runsCommands = true
			case descriptors.PackageInstall, descriptors.PackageRemove:
				b.add(RuleSandboxNetwork, e.field("action_type"),
					"%s needs network in the sandbox, and the host policy gives sandboxed commands none (network.sandbox_network is false)", e.typ)
			}
		}
		if d.Sandbox.AllowNetwork && runsCommands {
			b.add(RuleSandboxNetwork, []string{"sandbox", "allow_network"},
				"the host policy gives sandboxed commands no network (network.sandbox_network is false)")
		}
	}

	if created, err := time.Parse(time.RFC3339, d.CreatedAt); err == nil {
		if age := now.Sub(created); age > p.PlanExpiry {
			b.add(RuleStaleIntent, []string{"created_at"},
				"the descriptor was created %s ago, longer than the host policy's plan expiry of %s: the intent is stale",
				FormatDuration(age.Truncate(time.Second)), FormatDuration(p.PlanExpiry))
		}
	}

	dec.Blocked = b.list
	return dec
}

// blocks collects policy problems, once per rule and field.
type blocks struct {
	list problem.List
	seen map[string]bool
}

func (b *blocks) add(rule string, field []string, format string, args ...any) {
	f := problem.FieldPath(field...)
	if b.seen == nil {
		b.seen = map[string]bool{}
	}
	if b.seen[rule+"\x00"+f] {
		return
	}
	b.seen[rule+"\x00"+f] = true
	b.list = append(b.list, problem.Problem{
		Rule:    rule,
		Field:   f,
		Message: fmt.Sprintf(format, args...),
		Layer:   problem.Policy,
	})
}

// elements lists d and its steps, depth first, in document order.
func elements(d *descriptors.Descriptor) []element {
	top := element{
		typ:       d.ActionType,
		risk:      d.RiskLevel,
		riskField: []string{"risk_level"},
		op:        d.Op,
	}
	if top.op == nil && len(d.Operation) > 0 {
		top.op, _ = descriptors.DecodeOperation(d.ActionType, d.Operation)
	}
	out := []element{top}
	return appendSteps(out, top, d.Steps)
}

func appendSteps(out []element, parent element, steps []descriptors.Step) []element {
	for i, s := range steps {
		e := element{
			path:      parent.field("steps", strconv.Itoa(i)),
			typ:       s.ActionType,
			risk:      parent.risk,
			riskField: parent.riskField,
			op:        s.Op,
		}
		if s.RiskLevel != "" {
			e.risk = s.RiskLevel
			e.riskField = e.field("risk_level")
		}
		if e.op == nil && len(s.Operation) > 0 {
			e.op, _ = descriptors.DecodeOperation(s.ActionType, s.Operation)
		}
		out = append(out, e)
		out = appendSteps(out, e, s.Steps)
	}
	return out
}

// reason says why element e has mode m from src.
func reason(e element, m Mode, src string) string {
	var s string
	if src == SourceTypeOverride {
		s = fmt.Sprintf("the host policy sets action type %s to %s", e.typ, m)
	} else {
		s = fmt.Sprintf("the host policy sets risk level %s to %s", e.risk, m)
	}
	if len(e.path) > 0 {
		s = "step " + problem.FieldPath(e.path...) + ": " + s
	}
	return s
}

func rootsList(roots []string) string {
	if len(roots) == 0 {
		return "none"
	}
	return strings.Join(roots, ", ")
}

func hostsList(hosts []string) string {
	if len(hosts) == 0 {
		return "empty"
	}
	return strings.Join(hosts, ", ")
}
