package policy

import (
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strings"

	"github.com/act-project/act/descriptors"
	"github.com/act-project/act/internal/pathglob"
)

// SystemFile is the system policy: when it exists it is authoritative, and
// every other layer may only tighten it (docs/policy.md). Only the tests'
// act (testdata/testcli) changes it; the shipped binary reads no flag or
// variable for it.
var SystemFile = "/etc/act/policy.yaml"

// SystemOwner is the uid the system policy and its directory must belong
// to. Only the tests' act (testdata/testcli) changes it.
var SystemOwner uint32 = 0

// OriginSystem is the source of a setting the system policy decided.
const OriginSystem = "system"

// System is the system layer of a policy: the keys only it may set.
type System struct {
	// File is the system policy's path ("" when there is none).
	File string `json:"file,omitempty"`
	// StateDir pins act's state directory; "" leaves it to the user.
	StateDir string `json:"state_dir,omitempty"`
	// UserPolicy false forbids per-user policies (--policy, ACT_POLICY,
	// <home>/policy.yaml).
	UserPolicy bool `json:"user_policy"`
}

// loadSystem reads the system policy, if there is one. It, and every
// directory on the way to it, must belong to root and be writable by no one
// else, and no link on the way may sit in a directory others can write
// ([ReadTrusted]): a system policy the user (or an agent running as the
// user) could edit or swap would bound nothing, so act refuses to run.
func loadSystem(h home) (*Policy, *System, error) {
	data, err := ReadTrusted(SystemFile)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil, nil
	}
	var ue *UntrustedError
	if errors.As(err, &ue) {
		err = fmt.Errorf("%w: act will not run under a system policy others could change (it and every directory above it must be owned by root and writable by no one else)", err)
	}
	if err != nil {
		return nil, nil, &LoadError{File: SystemFile, Source: OriginSystem, Err: err}
	}
	p, err := parse(SystemFile, data, h, true)
	if err != nil {
		var le *LoadError
		if errors.As(err, &le) {
			le.Source = OriginSystem
		}
		return nil, nil, err
	}
	return p, p.System, nil
}

// tighten returns user bounded by sys, setting by setting: the stricter
// value wins, so no user layer can loosen the system policy. The result
// holds the enforced values themselves — the mode table, the allowed
// roots and hosts are the stricter of both — so that printing it shows
// what is enforced (Decide, UnderAllowedRoot and HostAllowed consult the
// system layer too, and agree). Sources names, for every setting, the
// layer it came from: OriginSystem where the system decided, else the
// user layer's origin.
func tighten(sys, user *Policy, origin Origin) *Policy {
	p := *user
	p.floor = sys
	p.System = sys.System
	p.user = user
	src := map[string]string{}
	for _, name := range settingNames {
		src[name] = origin.Source
	}
	set := func(name string, tighter bool) {
		if tighter {
			src[name] = OriginSystem
		}
	}
	c, sc := &p.ResourceCaps, sys.ResourceCaps
	for _, f := range []struct {
		name string
		v    *int64
		s    int64
	}{{"resource_caps.max_cpu_ms", &c.MaxCPUMs, sc.MaxCPUMs}, {"resource_caps.max_memory_mb", &c.MaxMemoryMB, sc.MaxMemoryMB},
		{"resource_caps.max_disk_mb", &c.MaxDiskMB, sc.MaxDiskMB}, {"resource_caps.max_duration_ms", &c.MaxDurationMs, sc.MaxDurationMs}} {
		if f.s < *f.v {
			*f.v = f.s
			set(f.name, true)
		}
	}
	if sys.Resources.MemoryEnforcement == MemoryTotal && p.Resources.MemoryEnforcement != MemoryTotal {
		p.Resources.MemoryEnforcement = MemoryTotal
		set("resources.memory_enforcement", true)
	}
	if sys.Cooldown > p.Cooldown {
		p.Cooldown = sys.Cooldown
		set("cooldown", true)
	}
	if sys.PlanExpiry < p.PlanExpiry {
		p.PlanExpiry = sys.PlanExpiry
		set("plan_expiry", true)
	}
	if sys.IdlePeriod > p.IdlePeriod {
		p.IdlePeriod = sys.IdlePeriod
		set("idle_period", true)
	}
	if !sys.Network.SandboxNetwork && p.Network.SandboxNetwork {
		p.Network.SandboxNetwork = false
		set("network.sandbox_network", true)
	}
	if !sys.Sandbox.Loopback && p.Sandbox.Loopback {
		p.Sandbox.Loopback = false
		set("sandbox.loopback", true)
	}
	if sys.MaxChanges < p.MaxChanges {
		p.MaxChanges = sys.MaxChanges
		set("max_changes", true)
	}
	if sys.MaxPending < p.MaxPending {
		p.MaxPending = sys.MaxPending
		set("max_pending", true)
	}
	// Command rules: under a system policy only its own count, and the
	// user's deny rules (a refusal only tightens).
	rules := slices.Clone(sys.CommandRules)
	for _, r := range p.CommandRules {
		if r.Mode == Deny && !slices.ContainsFunc(rules, r.Equal) {
			rules = append(rules, r)
		}
	}
	set("command_rules", !slices.EqualFunc(rules, p.CommandRules, CommandRule.Equal))
	p.CommandRules = rules
	if sys.MaxLayersMB < p.MaxLayersMB {
		p.MaxLayersMB = sys.MaxLayersMB
		set("max_layers_mb", true)
	}
	if sys.Risk.MaxDeletes < p.Risk.MaxDeletes {
		p.Risk.MaxDeletes = sys.Risk.MaxDeletes
		set("risk.max_deletes", true)
	}
	if sys.Risk.Commands == CommandsAlwaysMedium && p.Risk.Commands != CommandsAlwaysMedium {
		p.Risk.Commands = CommandsAlwaysMedium
		set("risk.commands", true)
	}
	p.Risk.SensitivePaths = slices.Clone(p.Risk.SensitivePaths)
	for _, s := range sys.Risk.SensitivePaths {
		if !slices.Contains(p.Risk.SensitivePaths, s) {
			p.Risk.SensitivePaths = append(p.Risk.SensitivePaths, s)
			set("risk.sensitive_paths", true)
		}
	}
	if sys.Redact.PII && !p.Redact.PII {
		p.Redact.PII = true
		set("redact.pii", true)
	}
	if sys.Audit.RetainDays > p.Audit.RetainDays {
		p.Audit.RetainDays = sys.Audit.RetainDays
		set("audit.retain_days", true)
	}
	tightenWitnesses(&p, sys, set)
	p.Sandbox.HidePaths = slices.Clone(p.Sandbox.HidePaths)
	for _, h := range sys.Sandbox.HidePaths {
		if !slices.Contains(p.Sandbox.HidePaths, h) {
			p.Sandbox.HidePaths = append(p.Sandbox.HidePaths, h)
			set("sandbox.hide_paths", true)
		}
	}
	// What commands see of the home: only what both layers show.
	visible := slices.DeleteFunc(slices.Clone(p.Sandbox.HomeVisible), func(h string) bool {
		return !slices.Contains(sys.Sandbox.HomeVisible, h)
	})
	set("sandbox.home_visible", len(visible) != len(p.Sandbox.HomeVisible))
	p.Sandbox.HomeVisible = visible
	caches := slices.DeleteFunc(slices.Clone(p.Sandbox.Caches), func(h string) bool {
		return !slices.Contains(sys.Sandbox.Caches, h)
	})
	set("sandbox.caches", len(caches) != len(p.Sandbox.Caches))
	p.Sandbox.Caches = caches
	// A persistent cache only where both layers opt in, bounded by the
	// smaller bound.
	persistent := slices.DeleteFunc(slices.Clone(p.Sandbox.PersistentCaches), func(h string) bool {
		return !slices.Contains(sys.Sandbox.PersistentCaches, h) || !slices.Contains(caches, h)
	})
	set("sandbox.persistent_caches", len(persistent) != len(p.Sandbox.PersistentCaches))
	p.Sandbox.PersistentCaches = persistent
	if sys.Sandbox.PersistentCachesMB < p.Sandbox.PersistentCachesMB {
		p.Sandbox.PersistentCachesMB = sys.Sandbox.PersistentCachesMB
		set("sandbox.persistent_caches_mb", true)
	}
	if viaRank(sys.Confirmation.Via) > viaRank(p.Confirmation.Via) {
		p.Confirmation.Via = sys.Confirmation.Via
		set("confirmation.via", true)
	}
	switch {
	case sys.Confirmation.Via == ViaSigned:
		// Only the approvers the system names count: a user layer (which
		// an agent running as the user can write) appoints none.
		p.UserApproversIgnored = len(p.Confirmation.Approvers) > 0 || p.Confirmation.ApproversFile != ""
		p.Confirmation.Approvers, p.Confirmation.ApproversFile = nonNil(sys.Confirmation.Approvers), sys.Confirmation.ApproversFile
		src["confirmation.approvers"], src["confirmation.approvers_file"] = OriginSystem, OriginSystem
	case len(sys.Confirmation.Approvers) > 0 || sys.Confirmation.ApproversFile != "":
		p.Confirmation.Approvers, p.Confirmation.ApproversFile = sys.Confirmation.Approvers, sys.Confirmation.ApproversFile
		src["confirmation.approvers"], src["confirmation.approvers_file"] = OriginSystem, OriginSystem
	}
	if sys.Hooks.CannotDryRun == HookDeny && p.Hooks.CannotDryRun != HookDeny {
		p.Hooks.CannotDryRun = HookDeny
		set("hooks.cannot_dry_run", true)
	}
	// Modes: each action is decided by both layers, the stricter winning;
	// the table that says so is the enforced one.
	p.Modes = enforcedModes(user, sys)
	for _, r := range descriptors.RiskLevels {
		if m, _ := user.ModeFor("", r); p.Modes.Risk[r] != m {
			set("modes.risk."+string(r), true)
		}
	}
	for _, t := range descriptors.ActionTypes {
		if !user.Modes.overrides(t) && !sys.Modes.overrides(t) {
			continue
		}
		for _, r := range descriptors.RiskLevels {
			if m, _ := user.ModeFor(t, r); m != p.Modes.mode(t, r) {
				set("modes.types."+string(t), true)
			}
		}
	}
	p.AllowedRoots = intersectRoots(user.AllowedRoots, sys.AllowedRoots)
	set("allowed_roots", !slices.Equal(p.AllowedRoots, user.AllowedRoots))
	p.Workspaces = intersectRoots(user.Workspaces, sys.Workspaces)
	set("workspaces", !slices.Equal(p.Workspaces, user.Workspaces))
	p.Network.AllowedHosts = intersectHosts(user.Network.AllowedHosts, sys.Network.AllowedHosts)
	set("network.allowed_hosts", !slices.Equal(p.Network.AllowedHosts, user.Network.AllowedHosts))
	p.Network.CredentialHosts = intersectHosts(user.Network.CredentialHosts, sys.Network.CredentialHosts)
	set("network.credential_hosts", !slices.Equal(p.Network.CredentialHosts, nonNil(user.Network.CredentialHosts)))
	p.Sources = src
	return &p
}

// settingNames are the settings Sources names.
var settingNames = func() []string {
	names := []string{"allowed_roots", "workspaces",
		"resource_caps.max_cpu_ms", "resource_caps.max_memory_mb", "resource_caps.max_disk_mb", "resource_caps.max_duration_ms",
		"resources.memory_enforcement", "network.allowed_hosts", "network.sandbox_network", "network.credential_hosts", "cooldown", "plan_expiry", "idle_period", "audit.retain_days",
		"audit.witnesses", "audit.quorum", "audit.witness_grace", "audit.witness_after",
		"max_changes", "max_pending", "max_layers_mb", "command_rules", "risk.max_deletes", "risk.sensitive_paths", "risk.commands", "redact.pii",
		"confirmation.via", "confirmation.approvers", "confirmation.approvers_file", "sandbox.hide_paths", "sandbox.home_visible", "sandbox.caches", "sandbox.persistent_caches", "sandbox.persistent_caches_mb", "sandbox.loopback", "hooks.cannot_dry_run"}
	for _, r := range descriptors.RiskLevels {
		names = append(names, "modes.risk."+string(r))
	}
	for _, t := range descriptors.ActionTypes {
		names = append(names, "modes.types."+string(t))
	}
	return names
}()

// enforcedModes is the mode table of user bounded by sys: for every action
// type and risk level, the stricter of the two layers' modes. A type's
// modes that are those of the risk table need no override; the same mode
// at every level is a plain override; else the type gets one mode a level.
func enforcedModes(user, sys *Policy) ModeTable {
	out := ModeTable{Risk: map[descriptors.RiskLevel]Mode{}, Types: map[descriptors.ActionType]Mode{}, TypeRisk: map[descriptors.ActionType]map[descriptors.RiskLevel]Mode{}}
	stricter := func(a, b Mode) Mode {
		if b.Rank() > a.Rank() {
			return b
		}
		return a
	}
	for _, r := range descriptors.RiskLevels {
		u, _ := user.ModeFor("", r)
		s, _ := sys.ModeFor("", r)
		out.Risk[r] = stricter(u, s)
	}
	for _, t := range descriptors.ActionTypes {
		byRisk := map[descriptors.RiskLevel]Mode{}
		asRisk, same := true, true
		for _, r := range descriptors.RiskLevels {
			u, _ := user.ModeFor(t, r)
			s, _ := sys.ModeFor(t, r)
			m := stricter(u, s)
			byRisk[r] = m
			asRisk = asRisk && m == out.Risk[r]
			same = same && m == byRisk[descriptors.RiskLevels[0]]
		}
		switch {
		case asRisk:
		case same:
			out.Types[t] = byRisk[descriptors.RiskLevels[0]]
		default:
			out.TypeRisk[t] = byRisk
		}
	}
	return out
}

// intersectRoots returns the roots a path must lie under to lie under a
// root of user and a root of sys: a root of either that lies under a root
// of the other, without one that lies under another.
func intersectRoots(user, sys []string) []string {
	var both []string
	add := func(r string) {
		if !slices.Contains(both, r) {
			both = append(both, r)
		}
	}
	for _, u := range user {
		for _, s := range sys {
			switch {
			case pathglob.Within(u, s):
				add(u)
			case pathglob.Within(s, u):
				add(s)
			}
		}
	}
	out := []string{}
	for _, r := range both {
		if !slices.ContainsFunc(both, func(o string) bool { return o != r && pathglob.Within(r, o) }) {
			out = append(out, r)
		}
	}
	return out
}

// intersectHosts returns the host entries that allow exactly the hosts
// both user and sys allow.
func intersectHosts(user, sys []string) []string {
	one := func(h string) *Policy { return &Policy{Network: Network{AllowedHosts: []string{h}}} }
	out := []string{}
	add := func(h string) {
		if !slices.Contains(out, h) {
			out = append(out, h)
		}
	}
	for _, pair := range [][2][]string{{user, sys}, {sys, user}} {
		for _, h := range pair[0] {
			if !strings.HasPrefix(h, "*.") {
				if (&Policy{Network: Network{AllowedHosts: pair[1]}}).ownHostAllowed(h) {
					add(h)
				}
				continue
			}
			// A wildcard stands when the other layer has a wildcard as
			// wide or wider: *.a.example.org under *.example.org.
			for _, o := range pair[1] {
				if strings.HasPrefix(o, "*.") && (strings.EqualFold(o, h) || one(o).ownHostAllowed(h[2:])) {
					add(h)
				}
			}
		}
	}
	return out
}

func modeOr(m Mode) Mode {
	if m == "" {
		return Deny
	}
	return m
}

// rootsWithin reports whether every root of user lies under one of sys.
func rootsWithin(user, sys []string) bool {
	for _, r := range user {
		if !slices.ContainsFunc(sys, func(s string) bool { return pathglob.Within(r, s) }) {
			return false
		}
	}
	return true
}

// viaRank orders confirmation kinds: flag 0, terminal 1, signed 2.
func viaRank(v string) int {
	switch v {
	case ViaTerminal:
		return 1
	case ViaSigned:
		return 2
	}
	return 0
}

// SystemStateDir returns the state directory the system policy pins, or
// "" when it pins none (or there is no system policy).
func SystemStateDir() (string, error) {
	sys, _, err := loadSystem(realHome())
	if err != nil || sys == nil {
		return "", err
	}
	return sys.System.StateDir, nil
}
