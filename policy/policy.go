// Package policy loads the host's policy and decides, for an Action
// Descriptor, the mode it runs in (allow, confirm or deny) and what blocks it
// (docs/policy.md).
//
// # Loading
//
// [Load] resolves the policy file in the order --policy, ACT_POLICY,
// <home>/policy.yaml, and falls back to the embedded default
// ([DefaultSource]). A policy file is YAML, validated against the CUE schema
// #Policy (schema/policy.cue). Every field is optional: a field left out takes
// the default's value (maps merge key by key, lists replace). An invalid
// file is a [*LoadError] naming the file and the line of each problem, never a
// silent fallback.
//
// [Policy.Marshal] prints a policy in the format [Load] reads, so a saved
// `act policy` output loads back as an equal policy.
//
// # Deciding
//
// [Policy.Decide] takes the mode from the policy's type override for the
// action type, else from its risk default; a MULTI_STEP_COMPOSITE takes the
// strictest mode of itself and each step. It then lists every block: deny
// mode, a scope path outside the allowed roots, a resource above a cap,
// UI_AUTOMATION, a network host not allow-listed, network in the sandbox
// where the policy gives none, and a stale intent. Blocks are problems of
// layer [problem.Policy] with a field path but no file position: the caller
// attaches positions.
//
// Nothing here prints, prompts or writes; only [Load] reads files.
package policy

import (
	"encoding/json"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"time"

	"github.com/act-project/act/descriptors"
	"github.com/act-project/act/internal/pathglob"
)

// Mode is what the host does with an action: run it, ask first, or refuse.
type Mode string

// The modes, least strict first.
const (
	Allow   Mode = "allow"
	Confirm Mode = "confirm"
	Deny    Mode = "deny"
)

// Modes lists the modes, least strict first.
var Modes = []Mode{Allow, Confirm, Deny}

// Rank orders modes by strictness: allow 0, confirm 1, deny 2. An unknown
// mode ranks as deny, so that it fails closed.
func (m Mode) Rank() int {
	switch m {
	case Allow:
		return 0
	case Confirm:
		return 1
	}
	return 2
}

// Where a decision's mode comes from (docs/policy.md: type override → risk default).
const (
	SourceTypeOverride = "type override"
	SourceRiskDefault  = "risk default"
)

// A Policy is the host's effective policy: a policy file merged over the
// embedded default, with "~" in allowed roots expanded.
type Policy struct {
	// AllowedRoots are absolute, clean paths; every scope path must lie
	// under one of them.
	AllowedRoots []string `json:"allowed_roots"`
	// Workspaces are absolute, clean paths: where a plan may be LOW
	// (docs/risk.md).
	Workspaces []string `json:"workspaces"`
	// ResourceCaps are the most a descriptor may request.
	ResourceCaps ResourceCaps `json:"resource_caps"`
	// Resources says how the sandbox enforces the caps.
	Resources Resources `json:"resources"`
	// Modes gives the mode of an action by risk level and action type.
	Modes ModeTable `json:"modes"`
	// Network holds the host allow-list and the sandbox's network switch.
	Network Network `json:"network"`
	// Cooldown is how long the same action is refused after a rollback.
	Cooldown time.Duration `json:"cooldown"`
	// PlanExpiry is how long a pending plan lives; a descriptor whose
	// created_at is older is a stale intent.
	PlanExpiry time.Duration `json:"plan_expiry"`
	// IdlePeriod is how long without terminal input the user_idle
	// precondition requires.
	IdlePeriod time.Duration `json:"idle_period"`
	// Audit holds the retention of the audit log.
	Audit Audit `json:"audit"`
	// MaxChanges is the most changes one plan may hold.
	MaxChanges int64 `json:"max_changes"`
	// MaxPending is the most plans that may wait for a person.
	MaxPending int64 `json:"max_pending"`
	// MaxLayersMB is the most MiB the layers of the plans not yet applied
	// may hold together.
	MaxLayersMB int64 `json:"max_layers_mb"`
	// CommandRules are invocations a person pre-approves (or refuses):
	// a plan whose every command one of them matches, whole, has the
	// rules' mode instead of the mode a command would get, but only while
	// everything else of it is LOW by act's allow-list; a deny rule,
	// matched also through wrappers, always blocks (docs/policy.md,
	// "Command rules"; command_rules.go).
	CommandRules []CommandRule `json:"command_rules"`
	// Risk tunes act's own risk assessment.
	Risk Risk `json:"risk"`
	// Redact says what else is redacted from captured output.
	Redact Redact `json:"redact"`
	// Sandbox holds what the sandbox hides besides its defaults.
	Sandbox SandboxPolicy `json:"sandbox"`
	// Confirmation says what counts as a person's confirmation.
	Confirmation Confirmation `json:"confirmation"`
	// Hooks says what an agent's hook answers where act cannot decide
	// by a dry run (docs/agents.md).
	Hooks Hooks `json:"hooks"`

	// System is the system layer's own settings, when there is one.
	System *System `json:"-"`
	// Sources names, under a system policy, the layer each setting came
	// from: OriginSystem where the system decided (it was stricter than
	// the user's), else the user layer's origin (OriginDefault, ...).
	Sources map[string]string `json:"-"`
	// UserApproversIgnored: the system policy asks for signed
	// confirmations, and the user layer's approvers (or approvers_file),
	// which do not count, were dropped.
	UserApproversIgnored bool `json:"-"`
	// floor is the system policy this one is bounded by: Decide,
	// UnderAllowedRoot and HostAllowed consult it too.
	floor *Policy
	// user is the user layer as it was read, under a system policy:
	// Decide decides by it and by floor, and says which layer decided.
	user *Policy
}

// The ways a person can confirm, least strict first.
const (
	ViaFlag     = "flag"
	ViaTerminal = "terminal"
	ViaSigned   = "signed"
)

// Confirmation is the policy's confirmation section.
type Confirmation struct {
	// Via is ViaFlag, ViaTerminal or ViaSigned.
	Via string `json:"via"`
	// Approvers are allowed_signers lines: the list, then the file's.
	Approvers     []string `json:"approvers"`
	ApproversFile string   `json:"approvers_file,omitempty"`
}

// Hooks is the policy's hooks section.
type Hooks struct {
	// CannotDryRun is HookAsk or HookDeny: the answer of act hook to a
	// command whose dry run did not finish in the hook's time (it may
	// wait on the network the sandbox lacks, or on a local service).
	CannotDryRun string `json:"cannot_dry_run"`
}

// The answers of hooks.cannot_dry_run.
const (
	HookAsk  = "ask"
	HookDeny = "deny"
)

// Risk is the policy's risk section: more deleted paths than MaxDeletes,
// or a change under one of SensitivePaths (globs, "~" expanded), grade a
// plan HIGH; Commands says how a command is graded.
type Risk struct {
	MaxDeletes     int64    `json:"max_deletes"`
	SensitivePaths []string `json:"sensitive_paths"`
	// Commands is CommandsByDiff or CommandsAlwaysMedium (docs/risk.md,
	// "Commands").
	Commands string `json:"commands"`
}

// The values of risk.commands: a command is graded by what its dry run
// did (no network and every change LOW: LOW), or always at least MEDIUM
// (a person per command, as the default modes go).
const (
	CommandsByDiff       = "by_diff"
	CommandsAlwaysMedium = "always_medium"
)

// CommandsGradedByDiff reports whether a command's risk is what its dry
// run did (risk.commands: by_diff, the default).
func (p *Policy) CommandsGradedByDiff() bool { return p.Risk.Commands != CommandsAlwaysMedium }

// Redact is the policy's redact section.
type Redact struct {
	// PII also redacts e-mail addresses and phone numbers.
	PII bool `json:"pii"`
}

// SandboxPolicy is the policy's sandbox section.
type SandboxPolicy struct {
	// HidePaths are more paths the sandbox hides from commands: absolute,
	// with "~" expanded.
	HidePaths []string `json:"hide_paths"`
	// HomeVisible are what builds need below the user's home ("~/…"),
	// shown read-only to commands while the rest of every home is masked:
	// git's configuration, toolchains, read-only module caches — never a
	// credential store (docs/sandbox-filesystem.md).
	HomeVisible []string `json:"home_visible"`
	// Caches are where tools keep their caches below the user's home
	// ("~/…"): the sandbox shows the user's own there, read-only under a
	// throwaway layer counted against the disk cap; nothing a dry run
	// writes there outlives it (docs/sandbox-filesystem.md, "Caches").
	Caches []string `json:"caches"`
	// PersistentCaches are those of Caches (absolute) where act keeps a
	// cache of its own across dry runs, over the user's: an opt-in with
	// a risk, bounded, checked and, for Go's module cache, verified
	// (docs/sandbox-filesystem.md, "A persistent cache of act's own").
	PersistentCaches []string `json:"persistent_caches,omitempty"`
	// PersistentCachesMB bounds what act's own caches hold together, in
	// MiB: a dry run's addition past it is not kept.
	PersistentCachesMB int64 `json:"persistent_caches_mb"`
	// Loopback lets commands without the network make IPv4 and IPv6
	// sockets in the sandbox's own network namespace (loopback only).
	Loopback bool `json:"loopback"`
}

// ResourceCaps are the policy's caps on a descriptor's resources.
type ResourceCaps struct {
	MaxCPUMs      int64 `json:"max_cpu_ms"`
	MaxMemoryMB   int64 `json:"max_memory_mb"`
	MaxDiskMB     int64 `json:"max_disk_mb"`
	MaxDurationMs int64 `json:"max_duration_ms"`
}

// Within is r with each resource lowered to the cap where the policy
// sets one (0: no cap): what a door asks for a descriptor it builds.
func (c ResourceCaps) Within(r descriptors.Resources) descriptors.Resources {
	lower := func(a, b int64) int64 {
		if b > 0 && b < a {
			return b
		}
		return a
	}
	return descriptors.Resources{
		MaxCPUMs:      lower(r.MaxCPUMs, c.MaxCPUMs),
		MaxMemoryMB:   lower(r.MaxMemoryMB, c.MaxMemoryMB),
		MaxDiskMB:     lower(r.MaxDiskMB, c.MaxDiskMB),
		MaxDurationMs: lower(r.MaxDurationMs, c.MaxDurationMs),
	}
}

// Resources is the policy's resources section: how the sandbox enforces
// a command's caps.
type Resources struct {
	// MemoryEnforcement is MemoryTotal or MemoryPerProcess: whether a
	// memory cap must bound all the command's processes together (a
	// memory cgroup), or may fall back, where no memory cgroup is
	// writable, to RLIMIT_AS per process, labelled as such
	// (docs/sandbox-process.md).
	MemoryEnforcement string `json:"memory_enforcement"`
}

// The values of resources.memory_enforcement.
const (
	MemoryTotal      = "total"
	MemoryPerProcess = "per_process"
)

// MemoryTotalDemanded says whether the policy demands a total memory cap.
func (p *Policy) MemoryTotalDemanded() bool { return p.Resources.MemoryEnforcement == MemoryTotal }

// ModeTable is the policy's "modes": a mode for every risk level, and
// per-action-type overrides. A type's override is one mode (Types) or a
// mode for each risk level (TypeRisk; a level it leaves out takes the risk
// default): the file writes both under "types", as FILE_WRITE: confirm or
// FILE_WRITE: {LOW: allow, HIGH: deny}.
type ModeTable struct {
	Risk     map[descriptors.RiskLevel]Mode
	Types    map[descriptors.ActionType]Mode
	TypeRisk map[descriptors.ActionType]map[descriptors.RiskLevel]Mode
}

// modeTableJSON is a ModeTable as the file writes it.
type modeTableJSON struct {
	Risk  map[descriptors.RiskLevel]Mode `json:"risk"`
	Types map[descriptors.ActionType]any `json:"types"`
}

// MarshalJSON writes m as the file does.
func (m ModeTable) MarshalJSON() ([]byte, error) {
	j := modeTableJSON{Risk: nonNilMap(m.Risk), Types: map[descriptors.ActionType]any{}}
	for t, v := range m.Types {
		j.Types[t] = v
	}
	for t, v := range m.TypeRisk {
		j.Types[t] = v
	}
	return json.Marshal(j)
}

// UnmarshalJSON reads what MarshalJSON writes.
func (m *ModeTable) UnmarshalJSON(data []byte) error {
	var j struct {
		Risk  map[descriptors.RiskLevel]Mode             `json:"risk"`
		Types map[descriptors.ActionType]json.RawMessage `json:"types"`
	}
	if err := json.Unmarshal(data, &j); err != nil {
		return err
	}
	*m = ModeTable{Risk: nonNilMap(j.Risk), Types: map[descriptors.ActionType]Mode{}}
	for t, raw := range j.Types {
		var one Mode
		if err := json.Unmarshal(raw, &one); err == nil {
			m.Types[t] = one
			continue
		}
		var byRisk map[descriptors.RiskLevel]Mode
		if err := json.Unmarshal(raw, &byRisk); err != nil {
			return fmt.Errorf("modes.types.%s: %w", t, err)
		}
		if m.TypeRisk == nil {
			m.TypeRisk = map[descriptors.ActionType]map[descriptors.RiskLevel]Mode{}
		}
		m.TypeRisk[t] = byRisk
	}
	return nil
}

// overrides reports whether m has an override for type t.
func (m ModeTable) overrides(t descriptors.ActionType) bool {
	_, one := m.Types[t]
	_, byRisk := m.TypeRisk[t]
	return one || byRisk
}

// mode is the mode of type t at risk r by this table alone.
func (m ModeTable) mode(t descriptors.ActionType, r descriptors.RiskLevel) Mode {
	if mm, ok := m.TypeRisk[t][r]; ok {
		return mm
	}
	if mm, ok := m.Types[t]; ok {
		return mm
	}
	if mm, ok := m.Risk[r]; ok {
		return mm
	}
	return Deny
}

// Network is the policy's network section.
type Network struct {
	// AllowedHosts are the hosts NETWORK_REQUEST may reach: an exact host,
	// or "*.example.org" for any subdomain of example.org (not example.org
	// itself). Matching ignores case. An entry that is an IP address or a
	// CIDR range ("127.0.0.1", "::1", "10.0.0.0/8") allows the IP literals
	// in it and names its range ([Policy.NamedRanges]): a host's addresses
	// are checked after its name is resolved, and a loopback, link-local,
	// private or cloud metadata address is reached only where such an
	// entry names it (docs/sandbox.md, "Network: the egress proxy").
	AllowedHosts []string `json:"allowed_hosts"`
	// SandboxNetwork is whether commands in the sandbox may have network
	// access; without it, PACKAGE_INSTALL and PACKAGE_REMOVE are blocked.
	SandboxNetwork bool `json:"sandbox_network"`
	// CredentialHosts are the hosts (as AllowedHosts writes them, and
	// allowed there too) to which the egress proxy may give the person's
	// credentials: a registry token of ~/.npmrc, a password of ~/.netrc,
	// which the sandbox sees only as placeholders (docs/sandbox.md,
	// "Credentials"). Empty: the placeholders go out as they are.
	CredentialHosts []string `json:"credential_hosts"`
}

// Audit is the policy's audit section. Retention is the host's alone.
type Audit struct {
	RetainDays int64 `json:"retain_days"`
	// Witnesses cosign the log's checkpoints (docs/audit.md, "Witnesses").
	Witnesses []Witness `json:"witnesses"`
	// Quorum is how many of Witnesses must cosign: all of them when the
	// file leaves it out, 0 for none.
	Quorum int64 `json:"quorum"`
	// WitnessGrace is how long a record may wait for the quorum.
	WitnessGrace time.Duration `json:"witness_grace"`
	// WitnessAfter asks the witnesses to cosign after each apply and
	// rollback.
	WitnessAfter bool `json:"witness_after"`
}

// A Witness is one witness of the policy: act's name for it, its note
// verifier key (cosignature/v1) and its submission URL.
type Witness struct {
	Name string `json:"name"`
	Key  string `json:"key"`
	URL  string `json:"url"`
}

// A WitnessQuorum asks that K of the witnesses named cosign.
type WitnessQuorum struct {
	Witnesses []string
	K         int64
}

// WitnessQuorums are the quorums act audit verify requires: the policy's
// quorum of all its witnesses and, under a system policy, the system's
// own quorum of its own witnesses, which a user layer's witnesses do not
// count towards (docs/policy.md).
func (p *Policy) WitnessQuorums() []WitnessQuorum {
	var out []WitnessQuorum
	for _, l := range []*Policy{p, p.floor} {
		if l == nil || l.Audit.Quorum == 0 {
			continue
		}
		q := WitnessQuorum{K: l.Audit.Quorum}
		for _, w := range l.Audit.Witnesses {
			q.Witnesses = append(q.Witnesses, w.Name)
		}
		out = append(out, q)
	}
	return out
}

// auditJSON is Audit as the file writes it: the grace a duration string,
// the quorum absent for all witnesses.
type auditJSON struct {
	RetainDays   int64     `json:"retain_days"`
	Witnesses    []Witness `json:"witnesses"`
	Quorum       *int64    `json:"quorum,omitempty"`
	WitnessGrace string    `json:"witness_grace,omitempty"`
	WitnessAfter bool      `json:"witness_after"`
}

func (a Audit) toJSON() auditJSON {
	q := a.Quorum
	return auditJSON{RetainDays: a.RetainDays, Witnesses: nonNil(a.Witnesses), Quorum: &q, WitnessGrace: FormatDuration(a.WitnessGrace), WitnessAfter: a.WitnessAfter}
}

func (j auditJSON) audit() (Audit, error) {
	a := Audit{RetainDays: j.RetainDays, Witnesses: nonNil(j.Witnesses), WitnessAfter: j.WitnessAfter, Quorum: int64(len(j.Witnesses))}
	if j.Quorum != nil {
		a.Quorum = *j.Quorum
	}
	if j.WitnessGrace != "" {
		d, err := time.ParseDuration(j.WitnessGrace)
		if err != nil {
			return a, err
		}
		a.WitnessGrace = d
	}
	return a, nil
}

// policyJSON is Policy with durations as Go duration strings ("1h"), the
// form of the policy file.
type policyJSON struct {
	AllowedRoots []string      `json:"allowed_roots"`
	Workspaces   []string      `json:"workspaces"`
	ResourceCaps ResourceCaps  `json:"resource_caps"`
	Resources    Resources     `json:"resources"`
	Modes        ModeTable     `json:"modes"`
	Network      Network       `json:"network"`
	Cooldown     string        `json:"cooldown"`
	PlanExpiry   string        `json:"plan_expiry"`
	IdlePeriod   string        `json:"idle_period"`
	Audit        auditJSON     `json:"audit"`
	MaxChanges   int64         `json:"max_changes"`
	MaxPending   int64         `json:"max_pending"`
	MaxLayersMB  int64         `json:"max_layers_mb"`
	CommandRules []CommandRule `json:"command_rules"`
	Risk         Risk          `json:"risk"`
	Redact       Redact        `json:"redact"`
	Sandbox      SandboxPolicy `json:"sandbox"`
	Confirmation Confirmation  `json:"confirmation"`
	Hooks        Hooks         `json:"hooks"`
}

// MarshalJSON encodes p with the field names of the policy file and
// durations as strings such as "1h30m".
func (p *Policy) MarshalJSON() ([]byte, error) {
	return json.Marshal(policyJSON{
		AllowedRoots: nonNil(p.AllowedRoots),
		Workspaces:   nonNil(p.Workspaces),
		ResourceCaps: p.ResourceCaps,
		Resources:    p.Resources,
		Modes:        ModeTable{Risk: nonNilMap(p.Modes.Risk), Types: nonNilMap(p.Modes.Types), TypeRisk: p.Modes.TypeRisk},
		Network:      Network{AllowedHosts: nonNil(p.Network.AllowedHosts), SandboxNetwork: p.Network.SandboxNetwork, CredentialHosts: nonNil(p.Network.CredentialHosts)},
		Cooldown:     FormatDuration(p.Cooldown),
		PlanExpiry:   FormatDuration(p.PlanExpiry),
		IdlePeriod:   FormatDuration(p.IdlePeriod),
		Audit:        p.Audit.toJSON(),
		MaxChanges:   p.MaxChanges,
		MaxPending:   p.MaxPending,
		MaxLayersMB:  p.MaxLayersMB,
		CommandRules: nonNil(p.CommandRules),
		Risk:         Risk{MaxDeletes: p.Risk.MaxDeletes, SensitivePaths: nonNil(p.Risk.SensitivePaths), Commands: p.Risk.Commands},
		Redact:       p.Redact,
		Sandbox: SandboxPolicy{HidePaths: nonNil(p.Sandbox.HidePaths), HomeVisible: p.Sandbox.HomeVisible, Caches: p.Sandbox.Caches, Loopback: p.Sandbox.Loopback,
			PersistentCaches: p.Sandbox.PersistentCaches, PersistentCachesMB: p.Sandbox.PersistentCachesMB},
		Confirmation: Confirmation{Via: p.Confirmation.Via, Approvers: nonNil(p.Confirmation.Approvers), ApproversFile: p.Confirmation.ApproversFile},
		Hooks:        p.Hooks,
	})
}

// UnmarshalJSON decodes what [Policy.MarshalJSON] encodes. It does not
// validate: [Load] and [Parse] do.
func (p *Policy) UnmarshalJSON(data []byte) error {
	var j policyJSON
	if err := json.Unmarshal(data, &j); err != nil {
		return err
	}
	var durs [3]time.Duration
	for i, s := range []string{j.Cooldown, j.PlanExpiry, j.IdlePeriod} {
		if s == "" {
			continue
		}
		d, err := time.ParseDuration(s)
		if err != nil {
			return err
		}
		durs[i] = d
	}
	audit, err := j.Audit.audit()
	if err != nil {
		return err
	}
	*p = Policy{
		AllowedRoots: nonNil(j.AllowedRoots),
		Workspaces:   nonNil(j.Workspaces),
		ResourceCaps: j.ResourceCaps,
		Resources:    j.Resources,
		Modes:        ModeTable{Risk: nonNilMap(j.Modes.Risk), Types: nonNilMap(j.Modes.Types), TypeRisk: j.Modes.TypeRisk},
		Network:      Network{AllowedHosts: nonNil(j.Network.AllowedHosts), SandboxNetwork: j.Network.SandboxNetwork, CredentialHosts: nonNil(j.Network.CredentialHosts)},
		Cooldown:     durs[0],
		PlanExpiry:   durs[1],
		IdlePeriod:   durs[2],
		Audit:        audit,
		MaxChanges:   j.MaxChanges,
		MaxPending:   j.MaxPending,
		MaxLayersMB:  j.MaxLayersMB,
		CommandRules: nonNil(j.CommandRules),
		Risk:         Risk{MaxDeletes: j.Risk.MaxDeletes, SensitivePaths: nonNil(j.Risk.SensitivePaths), Commands: j.Risk.Commands},
		Redact:       j.Redact,
		Sandbox: SandboxPolicy{HidePaths: nonNil(j.Sandbox.HidePaths), HomeVisible: j.Sandbox.HomeVisible, Caches: j.Sandbox.Caches, Loopback: j.Sandbox.Loopback,
			PersistentCaches: j.Sandbox.PersistentCaches, PersistentCachesMB: j.Sandbox.PersistentCachesMB},
		Confirmation: Confirmation{Via: j.Confirmation.Via, Approvers: nonNil(j.Confirmation.Approvers), ApproversFile: j.Confirmation.ApproversFile},
		Hooks:        j.Hooks,
	}
	return nil
}

// ModeFor returns the mode of an action of type t and risk r and where it
// comes from: the type override for t if the policy has one, else the risk
// default for r. A risk level the policy has no mode for is denied.
func (p *Policy) ModeFor(t descriptors.ActionType, r descriptors.RiskLevel) (Mode, string) {
	if m, ok := p.Modes.TypeRisk[t][r]; ok {
		return m, SourceTypeOverride
	}
	if m, ok := p.Modes.Types[t]; ok {
		return m, SourceTypeOverride
	}
	if m, ok := p.Modes.Risk[r]; ok {
		return m, SourceRiskDefault
	}
	return Deny, SourceRiskDefault
}

// UnderAllowedRoot reports whether the absolute path p lies under (or is)
// one of the allowed roots, comparing whole path elements: /tmpx is not
// under /tmp.
func (p *Policy) UnderAllowedRoot(path string) bool {
	if p.floor != nil && !p.floor.UnderAllowedRoot(path) {
		return false
	}
	return p.underOwnRoot(path)
}

// underOwnRoot is UnderAllowedRoot for this layer alone.
func (p *Policy) underOwnRoot(path string) bool {
	for _, root := range p.AllowedRoots {
		if pathglob.Within(path, root) {
			return true
		}
	}
	return false
}

// HostAllowed reports whether NETWORK_REQUEST may reach host, per
// network.allowed_hosts: host matches an entry by name, or host is an IP
// address (or a CIDR range) that an IP or CIDR entry holds.
func (p *Policy) HostAllowed(host string) bool {
	if p.floor != nil && !p.floor.HostAllowed(host) {
		return false
	}
	return p.ownHostAllowed(host)
}

// CredentialHostAllowed reports whether the egress proxy may give the
// person's credentials to host: network.credential_hosts names it (as
// allowed_hosts names hosts, and under a system policy the system layer
// too), and network.allowed_hosts allows it.
func (p *Policy) CredentialHostAllowed(host string) bool {
	if !p.HostAllowed(host) {
		return false
	}
	if p.floor != nil && !(&Policy{Network: Network{AllowedHosts: p.floor.Network.CredentialHosts}}).ownHostAllowed(host) {
		return false
	}
	return (&Policy{Network: Network{AllowedHosts: p.Network.CredentialHosts}}).ownHostAllowed(host)
}

// ownHostAllowed is HostAllowed for this layer alone.
func (p *Policy) ownHostAllowed(host string) bool {
	host = strings.ToLower(strings.TrimSuffix(host, "."))
	if host == "" {
		return false
	}
	if r, ok := parseRange(host); ok {
		for _, h := range p.Network.AllowedHosts {
			if e, ok := parseRange(h); ok && e.Bits() <= r.Bits() && e.Contains(r.Addr()) {
				return true
			}
		}
	}
	for _, h := range p.Network.AllowedHosts {
		h = strings.ToLower(strings.TrimSuffix(h, "."))
		if suffix, ok := strings.CutPrefix(h, "*."); ok {
			if strings.HasSuffix(host, "."+suffix) {
				return true
			}
			continue
		}
		if host == h {
			return true
		}
	}
	return false
}

// NamedRanges are the address ranges network.allowed_hosts names: each
// entry that is an IP address (a range of one) or a CIDR range, masked,
// IPv4-mapped ranges as IPv4. Under a system policy a range counts only if
// the system layer allows it too (it names a range holding it). Only these
// may be loopback, link-local, private or cloud metadata addresses when a
// host's addresses are checked (internal/egress, Policy.Named).
func (p *Policy) NamedRanges() []netip.Prefix {
	out := []netip.Prefix{}
	for _, h := range p.Network.AllowedHosts {
		r, ok := parseRange(h)
		if !ok || slices.Contains(out, r) {
			continue
		}
		if p.floor != nil && !p.floor.HostAllowed(r.String()) {
			continue
		}
		out = append(out, r)
	}
	return out
}

// parseRange reads an allowed_hosts entry, or a host, that is an IP
// address ("10.0.0.5", "::1", "[::1]") or a CIDR range ("10.0.0.0/8") as a
// masked range, an IPv4-mapped one as IPv4.
func parseRange(s string) (netip.Prefix, bool) {
	s = strings.TrimSuffix(strings.TrimPrefix(s, "["), "]")
	var r netip.Prefix
	if a, err := netip.ParseAddr(s); err == nil {
		if a.Zone() != "" {
			return netip.Prefix{}, false
		}
		r = netip.PrefixFrom(a, a.BitLen())
	} else if r, err = netip.ParsePrefix(s); err != nil {
		return netip.Prefix{}, false
	}
	if a := r.Addr(); a.Is4In6() {
		if r.Bits() < 96 {
			return netip.Prefix{}, false
		}
		r = netip.PrefixFrom(a.Unmap(), r.Bits()-96)
	}
	return r.Masked(), true
}

// FormatDuration renders d the way a policy file writes durations: "1h",
// "1h30m", "90s", "1s500ms", "0s". [time.ParseDuration] reads it back to d.
func FormatDuration(d time.Duration) string {
	if d == 0 {
		return "0s"
	}
	var b strings.Builder
	if d < 0 {
		b.WriteByte('-')
		d = -d
	}
	for _, u := range []struct {
		unit time.Duration
		name string
	}{
		{time.Hour, "h"}, {time.Minute, "m"}, {time.Second, "s"},
		{time.Millisecond, "ms"}, {time.Microsecond, "us"}, {time.Nanosecond, "ns"},
	} {
		if n := d / u.unit; n > 0 {
			fmt.Fprintf(&b, "%d%s", n, u.name)
			d -= n * u.unit
		}
	}
	return b.String()
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

func nonNilMap[K comparable, V any](m map[K]V) map[K]V {
	if m == nil {
		return map[K]V{}
	}
	return m
}
