package policy

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/act-project/act/descriptors"
)

// TestTighten: every setting of a user layer that is looser than the
// system policy's gives way to it, and every stricter one stands.
func TestTighten(t *testing.T) {
	sys, err := parse("sys.yaml", []byte(`
allowed_roots: [/srv]
resource_caps: {max_cpu_ms: 1000, max_memory_mb: 100, max_disk_mb: 10, max_duration_ms: 2000}
resources: {memory_enforcement: total}
modes: {risk: {LOW: confirm, CRITICAL: deny}, types: {NETWORK_REQUEST: deny}}
network: {allowed_hosts: [example.org], sandbox_network: false}
cooldown: 2h
plan_expiry: 1h
idle_period: 10m
audit: {retain_days: 365}
confirmation: {via: terminal}
hooks: {cannot_dry_run: deny}
risk: {commands: always_medium}
sandbox: {hide_paths: [/srv/secret]}
max_layers_mb: 100
state_dir: /var/lib/act
user_policy: true
`), homeOf("/home/u"), true)
	if err != nil {
		t.Fatal(err)
	}
	loose, err := Parse("user.yaml", []byte(`
allowed_roots: [/, /srv/x]
resource_caps: {max_cpu_ms: 99999999, max_memory_mb: 50, max_disk_mb: 99999, max_duration_ms: 99999}
modes: {risk: {LOW: allow, MEDIUM: allow, HIGH: allow, CRITICAL: allow}, types: {NETWORK_REQUEST: allow, FILE_READ: allow}}
network: {allowed_hosts: [example.org, evil.example], sandbox_network: true}
cooldown: 0s
plan_expiry: 9999h
idle_period: 1s
audit: {retain_days: 1}
confirmation: {via: flag}
max_layers_mb: 99999
resources: {memory_enforcement: per_process}
hooks: {cannot_dry_run: ask}
risk: {commands: by_diff}
`), "/home/u")
	if err != nil {
		t.Fatal(err)
	}
	p := tighten(sys, loose, Origin{Source: OriginFlag})
	for name, ok := range map[string]bool{
		"cpu cap":                               p.ResourceCaps.MaxCPUMs == 1000,
		"memory cap (stricter user stands)":     p.ResourceCaps.MaxMemoryMB == 50,
		"disk cap":                              p.ResourceCaps.MaxDiskMB == 10,
		"cooldown":                              p.Cooldown == 2*time.Hour,
		"plan expiry":                           p.PlanExpiry == time.Hour,
		"idle period":                           p.IdlePeriod == 10*time.Minute,
		"sandbox network":                       !p.Network.SandboxNetwork,
		"retention":                             p.Audit.RetainDays == 365,
		"layers":                                p.MaxLayersMB == 100 && p.Sources["max_layers_mb"] == OriginSystem,
		"confirmation":                          p.Confirmation.Via == ViaTerminal,
		"hide paths":                            len(p.Sandbox.HidePaths) == 1 && p.Sandbox.HidePaths[0] == "/srv/secret",
		"root outside":                          !p.UnderAllowedRoot("/etc"),
		"root inside both":                      p.UnderAllowedRoot("/srv/x/y"),
		"root under both (user /, system /srv)": p.UnderAllowedRoot("/srv/y"),
		"host of both":                          p.HostAllowed("example.org"),
		"host of user only":                     !p.HostAllowed("evil.example"),
		"state dir pinned":                      p.System.StateDir == "/var/lib/act",
		"sources say system":                    p.Sources["plan_expiry"] == OriginSystem && p.Sources["confirmation.via"] == OriginSystem,
		"sources, user stood":                   p.Sources["resource_caps.max_memory_mb"] == OriginFlag,
		"total memory cap binds the user":       p.MemoryTotalDemanded() && p.Sources["resources.memory_enforcement"] == OriginSystem,
		"hooks deny what cannot be dry-run":     p.Hooks.CannotDryRun == HookDeny && p.Sources["hooks.cannot_dry_run"] == OriginSystem,
		"a person per command binds the user":   !p.CommandsGradedByDiff() && p.Sources["risk.commands"] == OriginSystem,
	} {
		if !ok {
			t.Errorf("%s: not tightened as it should be", name)
		}
	}
	now := time.Date(2026, 11, 22, 0, 10, 0, 0, time.UTC)
	for _, c := range []struct {
		typ  descriptors.ActionType
		risk descriptors.RiskLevel
		want Mode
	}{
		{descriptors.FileWrite, descriptors.RiskLow, Confirm},    // system's LOW: confirm beats the user's allow
		{descriptors.FileRead, descriptors.RiskLow, Confirm},     // a user type override cannot loosen it
		{descriptors.NetworkRequest, descriptors.RiskLow, Deny},  // the system's type override
		{descriptors.FileWrite, descriptors.RiskCritical, Deny},  // the system's CRITICAL: deny
		{descriptors.FileWrite, descriptors.RiskMedium, Confirm}, // the system's default table
	} {
		d := &descriptors.Descriptor{ActionType: c.typ, RiskLevel: c.risk, CreatedAt: "2026-11-22T00:00:00Z"}
		if got := p.Decide(d, now).Mode; got != c.want {
			t.Errorf("%s %s: mode %s, want %s", c.typ, c.risk, got, c.want)
		}
	}
}

// TestSystemPolicyOwnership: a system policy others could write is refused.
func TestSystemPolicyOwnership(t *testing.T) {
	dir := t.TempDir()
	f := filepath.Join(dir, "policy.yaml")
	if err := os.WriteFile(f, []byte("cooldown: 1h\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	old, oldOwner := SystemFile, SystemOwner
	defer func() { SystemFile, SystemOwner = old, oldOwner }()
	SystemFile, SystemOwner = f, uint32(os.Geteuid())
	if _, _, err := Load(LoadOptions{}); err != nil {
		t.Fatalf("a proper system policy: %v", err)
	}
	os.Chmod(f, 0o664)
	if _, _, err := Load(LoadOptions{}); err == nil {
		t.Fatal("a group-writable system policy was accepted")
	}
	os.Chmod(f, 0o644)
	os.Chmod(dir, 0o777)
	if _, _, err := Load(LoadOptions{}); err == nil {
		t.Fatal("a system policy in a world-writable directory was accepted")
	}
	os.Chmod(dir, 0o755)
	SystemOwner = uint32(os.Geteuid()) + 1
	if _, _, err := Load(LoadOptions{}); err == nil {
		t.Fatal("a system policy owned by another user was accepted")
	}
}

// TestSystemRiskCommands: risk.commands only tightens under a system
// policy: a user layer's always_medium stands over the system's by_diff,
// and its by_diff does not loosen the system's always_medium.
func TestSystemRiskCommands(t *testing.T) {
	for _, c := range []struct {
		sys, user string
		byDiff    bool
		source    string
	}{
		{"by_diff", "always_medium", false, OriginFlag},
		{"always_medium", "by_diff", false, OriginSystem},
		{"by_diff", "by_diff", true, OriginFlag},
		{"always_medium", "always_medium", false, OriginFlag},
	} {
		sys, err := parse("/etc/act/policy.yaml", []byte("risk: {commands: "+c.sys+"}\n"), homeOf("/home/u"), true)
		if err != nil {
			t.Fatal(err)
		}
		user, err := Parse("user.yaml", []byte("risk: {commands: "+c.user+"}\n"), "/home/u")
		if err != nil {
			t.Fatal(err)
		}
		p := tighten(sys, user, Origin{Source: OriginFlag})
		if p.CommandsGradedByDiff() != c.byDiff || p.Sources["risk.commands"] != c.source {
			t.Errorf("system %s, user %s: by diff %v from %s, want %v from %s", c.sys, c.user, p.CommandsGradedByDiff(), p.Sources["risk.commands"], c.byDiff, c.source)
		}
	}
	if _, err := Parse("user.yaml", []byte("risk: {commands: sometimes}\n"), "/home/u"); err == nil || !strings.Contains(err.Error(), "risk.commands") {
		t.Errorf("an unknown risk.commands: %v", err)
	}
}

// TestPersistentCachesOptIn: a persistent cache is one of sandbox.caches
// (another is left out), "~" the home; under a system policy only where
// both layers opt in, bounded by the smaller persistent_caches_mb.
func TestPersistentCachesOptIn(t *testing.T) {
	user, err := Parse("u.yaml", []byte("sandbox:\n  persistent_caches: [~/go/pkg/mod, ~/elsewhere/pkg/mod]\n  persistent_caches_mb: 4096\n"), "/home/u")
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"/home/u/go/pkg/mod"}; !slices.Equal(user.Sandbox.PersistentCaches, want) || user.Sandbox.PersistentCachesMB != 4096 {
		t.Errorf("persistent caches %q (%d MiB), want %q (4096)", user.Sandbox.PersistentCaches, user.Sandbox.PersistentCachesMB, want)
	}
	// Only Go's module cache, the one act verifies on use, may persist.
	if _, err := Parse("u.yaml", []byte("sandbox:\n  persistent_caches: [~/go/pkg/mod, ~/.cache/go-build]\n"), "/home/u"); err == nil ||
		!strings.Contains(err.Error(), `sandbox.persistent_caches[1]: "~/.cache/go-build" is not Go's module cache`) {
		t.Errorf("a build cache made persistent: %v, want a refusal", err)
	}
	for _, c := range []struct {
		sys  string
		want []string
	}{
		{"[~/go/pkg/mod]", []string{"/home/u/go/pkg/mod"}},
		{"[]", nil},
	} {
		sys, err := Parse("s.yaml", []byte("sandbox:\n  persistent_caches: "+c.sys+"\n  persistent_caches_mb: 512\n"), "/home/u")
		if err != nil {
			t.Fatal(err)
		}
		p := tighten(sys, user, Origin{Source: OriginFlag})
		if !slices.Equal(p.Sandbox.PersistentCaches, c.want) || p.Sandbox.PersistentCachesMB != 512 {
			t.Errorf("under the system policy %s: %q (%d MiB), want %q (512)", c.sys, p.Sandbox.PersistentCaches, p.Sandbox.PersistentCachesMB, c.want)
		}
	}
	def, err := Default("/home/u")
	if err != nil {
		t.Fatal(err)
	}
	if len(def.Sandbox.PersistentCaches) != 0 {
		t.Errorf("the default opts in %q, want nothing", def.Sandbox.PersistentCaches)
	}
}
