package policy

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"syscall"

	"github.com/act-project/act/descriptors"
	"github.com/act-project/act/internal/pathglob"
)

// SystemFile is the system policy: when it exists it is authoritative, and
// every other layer may only tighten it (docs/policy.md). Only the test
// binary changes it; the shipped binary reads no flag or variable for it.
var SystemFile = "/etc/act/policy.yaml"

// SystemOwner is the uid the system policy and its directory must belong
// to. Only the test binary changes it.
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

// loadSystem reads the system policy, if there is one. It must be owned by
// root and writable by nobody else, nor its directory: a system policy the
// user (or an agent running as the user) could edit would loosen nothing
// that matters, so act refuses to run.
func loadSystem(userHome string) (*Policy, *System, error) {
	_, err := os.Stat(SystemFile)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, &LoadError{File: SystemFile, Source: OriginSystem, Err: err}
	}
	for _, p := range []string{SystemFile, filepath.Dir(SystemFile)} {
		st, err := os.Stat(p)
		if err != nil {
			return nil, nil, &LoadError{File: SystemFile, Source: OriginSystem, Err: err}
		}
		sys := st.Sys().(*syscall.Stat_t)
		if sys.Uid != SystemOwner || st.Mode().Perm()&0o022 != 0 {
			return nil, nil, &LoadError{File: SystemFile, Source: OriginSystem, Err: fmt.Errorf(
				"%s must be owned by root and writable by no one else (it is uid %d, mode %04o): act will not run under a system policy others could change", p, sys.Uid, st.Mode().Perm())}
		}
	}
	data, err := os.ReadFile(SystemFile)
	if err != nil {
		return nil, nil, &LoadError{File: SystemFile, Source: OriginSystem, Err: err}
	}
	p, err := parse(SystemFile, data, userHome, true)
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
// value wins, so no user layer can loosen the system policy. The mode,
// the allowed roots, the caps and the network hosts are decided by both
// (Decide, UnderAllowedRoot, HostAllowed consult the floor); the rest are
// merged here. Sources records, for each setting the system decided, its
// name.
func tighten(sys, user *Policy) *Policy {
	p := *user
	p.floor = sys
	p.System = sys.System
	src := map[string]string{}
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
	if sys.Risk.MaxDeletes < p.Risk.MaxDeletes {
		p.Risk.MaxDeletes = sys.Risk.MaxDeletes
		set("risk.max_deletes", true)
	}
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
	for _, h := range sys.Sandbox.HidePaths {
		if !slices.Contains(p.Sandbox.HidePaths, h) {
			p.Sandbox.HidePaths = append(p.Sandbox.HidePaths, h)
			set("sandbox.hide_paths", true)
		}
	}
	if viaRank(sys.Confirmation.Via) > viaRank(p.Confirmation.Via) {
		p.Confirmation.Via = sys.Confirmation.Via
		set("confirmation.via", true)
	}
	if len(sys.Confirmation.Approvers) > 0 || sys.Confirmation.ApproversFile != "" {
		p.Confirmation.Approvers, p.Confirmation.ApproversFile = sys.Confirmation.Approvers, sys.Confirmation.ApproversFile
		set("confirmation.approvers", true)
	}
	// Modes, roots and hosts: both layers decide; say where the system's
	// is the stricter.
	for _, r := range descriptors.RiskLevels {
		if m, _ := sys.ModeFor("", r); m.Rank() > modeOr(p.Modes.Risk[r]).Rank() {
			set("modes.risk."+string(r), true)
		}
	}
	for t, m := range sys.Modes.Types {
		if um, ok := p.Modes.Types[t]; !ok || m.Rank() > um.Rank() {
			set("modes.types."+string(t), true)
		}
	}
	if !rootsWithin(p.AllowedRoots, sys.AllowedRoots) {
		set("allowed_roots", true)
	}
	if len(p.Network.AllowedHosts) > 0 {
		set("network.allowed_hosts", true)
	}
	p.Sources = src
	return &p
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
func SystemStateDir(userHome string) (string, error) {
	sys, _, err := loadSystem(cleanHome(userHome))
	if err != nil || sys == nil {
		return "", err
	}
	return sys.System.StateDir, nil
}
