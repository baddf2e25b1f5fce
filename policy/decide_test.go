package policy

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/act-project/act/descriptors"
	"github.com/act-project/act/internal/problem"
)

var now = time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)

// descriptor returns a small valid FILE_WRITE descriptor, changed by edit.
func descriptor(edit func(d *descriptors.Descriptor)) *descriptors.Descriptor {
	d := &descriptors.Descriptor{
		DescriptorVersion: "1.0",
		ActionID:          "7f0c2a52-8f43-4c4e-9a43-0c1c3f6f7c11",
		CreatedAt:         "2025-06-01T11:59:00Z",
		CreatedBy:         "ai",
		IntentSummary:     "Write a file.",
		ActionType:        descriptors.FileWrite,
		RiskLevel:         descriptors.RiskLow,
		Scope: descriptors.Scope{Filesystem: descriptors.FilesystemScope{
			Paths: []string{"/tmp/work"}, Recursive: true,
		}},
		Resources: descriptors.Resources{MaxCPUMs: 1000, MaxMemoryMB: 128, MaxDiskMB: 10, MaxDurationMs: 1000},
		Op:        descriptors.FileWriteOp{Path: "/tmp/work/a.txt"},
	}
	if edit != nil {
		edit(d)
	}
	return d
}

func block(rule, field, msg string) problem.Problem {
	return problem.Problem{Rule: rule, Field: field, Message: msg, Layer: problem.Policy}
}

func network(url string) descriptors.NetworkRequestOp {
	return descriptors.NetworkRequestOp{Method: "GET", URL: url, SaveTo: "/tmp/work/out"}
}

func TestDecide(t *testing.T) {
	const (
		riskLow      = "the host policy sets risk level LOW to allow"
		riskMedium   = "the host policy sets risk level MEDIUM to confirm"
		sandboxNone  = "the host policy gives sandboxed commands no network (network.sandbox_network is false)"
		uiBlocked    = "no UI actuator on this host: UI automation is always blocked"
		notInHostsOf = "is not in the host policy's network.allowed_hosts"
	)
	tests := []struct {
		name   string
		policy func(p *Policy)
		desc   func(d *descriptors.Descriptor)
		want   Decision
	}{
		{
			name: "low risk is allowed",
			want: Decision{Mode: Allow, Source: SourceRiskDefault, Reason: riskLow},
		},
		{
			name: "medium risk needs confirmation",
			desc: func(d *descriptors.Descriptor) { d.RiskLevel = descriptors.RiskMedium },
			want: Decision{Mode: Confirm, Source: SourceRiskDefault, Reason: riskMedium},
		},
		{
			name: "high risk needs confirmation",
			desc: func(d *descriptors.Descriptor) { d.RiskLevel = descriptors.RiskHigh },
			want: Decision{Mode: Confirm, Source: SourceRiskDefault, Reason: "the host policy sets risk level HIGH to confirm"},
		},
		{
			name: "critical risk is denied",
			desc: func(d *descriptors.Descriptor) { d.RiskLevel = descriptors.RiskCritical },
			want: Decision{
				Mode: Deny, Source: SourceRiskDefault, Reason: "the host policy sets risk level CRITICAL to deny",
				Blocked: problem.List{block(RuleDeny, "risk_level", "the host policy denies risk level CRITICAL")},
			},
		},
		{
			name:   "type override denies",
			policy: func(p *Policy) { p.Modes.Types[descriptors.FileWrite] = Deny },
			want: Decision{
				Mode: Deny, Source: SourceTypeOverride, Reason: "the host policy sets action type FILE_WRITE to deny",
				Blocked: problem.List{block(RuleDeny, "action_type", "the host policy denies action type FILE_WRITE")},
			},
		},
		{
			name:   "type override allows above the risk default",
			policy: func(p *Policy) { p.Modes.Types[descriptors.FileWrite] = Allow },
			desc:   func(d *descriptors.Descriptor) { d.RiskLevel = descriptors.RiskCritical },
			want:   Decision{Mode: Allow, Source: SourceTypeOverride, Reason: "the host policy sets action type FILE_WRITE to allow"},
		},
		{
			name: "scope outside the allowed roots, by element",
			desc: func(d *descriptors.Descriptor) {
				d.Scope.Filesystem.Paths = []string{"/tmpx/a", "/tmp", userHome + "/src", "/home/other", "/home/u2"}
			},
			want: Decision{
				Mode: Allow, Source: SourceRiskDefault, Reason: riskLow,
				Blocked: problem.List{
					block(RuleOutsideRoots, "scope.filesystem.paths[0]", "/tmpx/a is outside every root the host policy allows (/home/u, /tmp)"),
					block(RuleOutsideRoots, "scope.filesystem.paths[3]", "/home/other is outside every root the host policy allows (/home/u, /tmp)"),
					block(RuleOutsideRoots, "scope.filesystem.paths[4]", "/home/u2 is outside every root the host policy allows (/home/u, /tmp)"),
				},
			},
		},
		{
			name:   "root / allows everything",
			policy: func(p *Policy) { p.AllowedRoots = []string{"/"} },
			desc:   func(d *descriptors.Descriptor) { d.Scope.Filesystem.Paths = []string{"/srv/x"} },
			want:   Decision{Mode: Allow, Source: SourceRiskDefault, Reason: riskLow},
		},
		{
			name: "resources above the caps",
			desc: func(d *descriptors.Descriptor) {
				d.Resources = descriptors.Resources{MaxCPUMs: 600001, MaxMemoryMB: 4096, MaxDiskMB: 20000, MaxDurationMs: 600000}
			},
			want: Decision{
				Mode: Allow, Source: SourceRiskDefault, Reason: riskLow,
				Blocked: problem.List{
					block(RuleResourceCap, "resources.max_cpu_ms", "max_cpu_ms is 600001, above the host policy's cap of 600000"),
					block(RuleResourceCap, "resources.max_disk_mb", "max_disk_mb is 20000, above the host policy's cap of 10240"),
				},
			},
		},
		{
			name: "UI automation is always blocked",
			desc: func(d *descriptors.Descriptor) {
				d.ActionType = descriptors.UIAutomation
				d.Op = descriptors.UIAutomationOp{"click": "ok"}
			},
			want: Decision{
				Mode: Allow, Source: SourceRiskDefault, Reason: riskLow,
				Blocked: problem.List{block(RuleUIAutomation, "action_type", uiBlocked)},
			},
		},
		{
			name: "network host not allow-listed",
			desc: func(d *descriptors.Descriptor) {
				d.ActionType = descriptors.NetworkRequest
				d.Op = network("https://evil.example.com/x")
			},
			want: Decision{
				Mode: Allow, Source: SourceRiskDefault, Reason: riskLow,
				Blocked: problem.List{block(RuleNetworkHost, "operation.url", "host evil.example.com "+notInHostsOf+" (empty)")},
			},
		},
		{
			name:   "network host allow-listed exactly, any case",
			policy: func(p *Policy) { p.Network.AllowedHosts = []string{"Example.org"} },
			desc: func(d *descriptors.Descriptor) {
				d.ActionType = descriptors.NetworkRequest
				d.Op = network("https://EXAMPLE.org:8443/x")
				// act performs the request itself: allow_network without
				// any command in the sandbox is not a sandbox block.
				d.Sandbox.AllowNetwork = true
			},
			want: Decision{Mode: Allow, Source: SourceRiskDefault, Reason: riskLow},
		},
		{
			name:   "wildcard host matches subdomains, not the apex",
			policy: func(p *Policy) { p.Network.AllowedHosts = []string{"*.example.org"} },
			desc: func(d *descriptors.Descriptor) {
				d.ActionType = descriptors.MultiStepComposite
				d.Op = nil
				d.Steps = []descriptors.Step{
					{ActionType: descriptors.NetworkRequest, Op: network("https://a.b.example.org/")},
					{ActionType: descriptors.NetworkRequest, Op: network("https://example.org/")},
					{ActionType: descriptors.NetworkRequest, Op: network("https://badexample.org/")},
				}
			},
			want: Decision{
				Mode: Allow, Source: SourceRiskDefault, Reason: riskLow,
				Blocked: problem.List{
					block(RuleNetworkHost, "steps[1].operation.url", "host example.org "+notInHostsOf+" (*.example.org)"),
					block(RuleNetworkHost, "steps[2].operation.url", "host badexample.org "+notInHostsOf+" (*.example.org)"),
				},
			},
		},
		{
			name: "package install needs sandbox network",
			desc: func(d *descriptors.Descriptor) {
				d.ActionType = descriptors.PackageInstall
				d.Op = nil
				d.Operation = json.RawMessage(`{"manager": "npm", "packages": ["left-pad"], "workdir": "/tmp/work"}`)
				d.Sandbox.AllowNetwork = true
			},
			want: Decision{
				Mode: Allow, Source: SourceRiskDefault, Reason: riskLow,
				Blocked: problem.List{block(RuleSandboxNetwork, "action_type",
					"PACKAGE_INSTALL needs network in the sandbox, and the host policy gives sandboxed commands none (network.sandbox_network is false)")},
			},
		},
		{
			name:   "package install where the policy gives sandbox network",
			policy: func(p *Policy) { p.Network.SandboxNetwork = true },
			desc: func(d *descriptors.Descriptor) {
				d.ActionType = descriptors.PackageRemove
				d.Op = nil
				d.Sandbox.AllowNetwork = true
			},
			want: Decision{Mode: Allow, Source: SourceRiskDefault, Reason: riskLow},
		},
		{
			name: "command asking for network",
			desc: func(d *descriptors.Descriptor) {
				d.ActionType = descriptors.CommandExecution
				d.Op = descriptors.CommandExecutionOp{Argv: []string{"make"}, Workdir: "/tmp/work"}
				d.Sandbox.AllowNetwork = true
			},
			want: Decision{
				Mode: Allow, Source: SourceRiskDefault, Reason: riskLow,
				Blocked: problem.List{block(RuleSandboxNetwork, "sandbox.allow_network", sandboxNone)},
			},
		},
		{
			name: "verification commands asking for network",
			desc: func(d *descriptors.Descriptor) {
				d.Verification = &descriptors.Verification{Commands: [][]string{{"true"}}}
				d.Sandbox.AllowNetwork = true
			},
			want: Decision{
				Mode: Allow, Source: SourceRiskDefault, Reason: riskLow,
				Blocked: problem.List{block(RuleSandboxNetwork, "sandbox.allow_network", sandboxNone)},
			},
		},
		{
			name: "stale intent",
			desc: func(d *descriptors.Descriptor) { d.CreatedAt = "2025-05-31T10:59:30+00:00" },
			want: Decision{
				Mode: Allow, Source: SourceRiskDefault, Reason: riskLow,
				Blocked: problem.List{block(RuleStaleIntent, "created_at",
					"the descriptor was created 25h30s ago, longer than the host policy's plan expiry of 24h: the intent is stale")},
			},
		},
		{
			name: "just within the plan expiry",
			desc: func(d *descriptors.Descriptor) { d.CreatedAt = "2025-05-31T12:00:00Z" },
			want: Decision{Mode: Allow, Source: SourceRiskDefault, Reason: riskLow},
		},
		{
			name:   "composite takes its strictest step",
			policy: func(p *Policy) { p.Modes.Types[descriptors.FileDelete] = Deny },
			desc: func(d *descriptors.Descriptor) {
				d.ActionType = descriptors.MultiStepComposite
				d.RiskLevel = descriptors.RiskMedium
				d.Op = nil
				d.Steps = []descriptors.Step{
					{ActionType: descriptors.FileWrite, RiskLevel: descriptors.RiskLow, Op: descriptors.FileWriteOp{Path: "/tmp/work/a"}},
					{ActionType: descriptors.FileDelete, Op: descriptors.FileDeleteOp{Paths: []string{"/tmp/work/b"}}},
					{ActionType: descriptors.MultiStepComposite, Steps: []descriptors.Step{
						{ActionType: descriptors.UIAutomation, Operation: json.RawMessage(`{}`)},
						{ActionType: descriptors.FileDelete, Op: descriptors.FileDeleteOp{Paths: []string{"/tmp/work/c"}}},
					}},
				}
			},
			want: Decision{
				Mode: Deny, Source: SourceTypeOverride, Reason: "step steps[1]: the host policy sets action type FILE_DELETE to deny",
				Blocked: problem.List{
					block(RuleDeny, "steps[1].action_type", "the host policy denies action type FILE_DELETE"),
					block(RuleDeny, "steps[2].steps[1].action_type", "the host policy denies action type FILE_DELETE"),
					block(RuleUIAutomation, "steps[2].steps[0].action_type", uiBlocked),
				},
			},
		},
		{
			name: "composite's own mode wins a tie",
			desc: func(d *descriptors.Descriptor) {
				d.ActionType = descriptors.MultiStepComposite
				d.RiskLevel = descriptors.RiskMedium
				d.Op = nil
				d.Steps = []descriptors.Step{
					{ActionType: descriptors.FileWrite, RiskLevel: descriptors.RiskLow},
					{ActionType: descriptors.FileWrite},
				}
			},
			want: Decision{Mode: Confirm, Source: SourceRiskDefault, Reason: riskMedium},
		},
		{
			name: "composite denied by an inherited risk, reported once",
			desc: func(d *descriptors.Descriptor) {
				d.ActionType = descriptors.MultiStepComposite
				d.RiskLevel = descriptors.RiskCritical
				d.Op = nil
				d.Steps = []descriptors.Step{
					{ActionType: descriptors.FileWrite},
					{ActionType: descriptors.FileWrite, RiskLevel: descriptors.RiskCritical},
				}
			},
			want: Decision{
				Mode: Deny, Source: SourceRiskDefault, Reason: "the host policy sets risk level CRITICAL to deny",
				Blocked: problem.List{
					block(RuleDeny, "risk_level", "the host policy denies risk level CRITICAL"),
					block(RuleDeny, "steps[1].risk_level", "the host policy denies risk level CRITICAL"),
				},
			},
		},
		{
			name: "every block at once, mode still reported",
			desc: func(d *descriptors.Descriptor) {
				d.RiskLevel = descriptors.RiskCritical
				d.CreatedAt = "2025-05-01T12:00:00Z"
				d.Scope.Filesystem.Paths = []string{"/srv"}
				d.Resources.MaxMemoryMB = 4097
				d.ActionType = descriptors.MultiStepComposite
				d.Op = nil
				d.Sandbox.AllowNetwork = true
				d.Steps = []descriptors.Step{
					{ActionType: descriptors.UIAutomation, Op: descriptors.UIAutomationOp{}},
					{ActionType: descriptors.NetworkRequest, Op: network("http://10.0.0.1/")},
					{ActionType: descriptors.PackageInstall},
					{ActionType: descriptors.CommandExecution},
				}
			},
			want: Decision{
				Mode: Deny, Source: SourceRiskDefault, Reason: "the host policy sets risk level CRITICAL to deny",
				Blocked: problem.List{
					block(RuleDeny, "risk_level", "the host policy denies risk level CRITICAL"),
					block(RuleOutsideRoots, "scope.filesystem.paths[0]", "/srv is outside every root the host policy allows (/home/u, /tmp)"),
					block(RuleResourceCap, "resources.max_memory_mb", "max_memory_mb is 4097, above the host policy's cap of 4096"),
					block(RuleUIAutomation, "steps[0].action_type", uiBlocked),
					block(RuleNetworkHost, "steps[1].operation.url", "host 10.0.0.1 "+notInHostsOf+" (empty)"),
					block(RuleSandboxNetwork, "steps[2].action_type",
						"PACKAGE_INSTALL needs network in the sandbox, and the host policy gives sandboxed commands none (network.sandbox_network is false)"),
					block(RuleSandboxNetwork, "sandbox.allow_network", sandboxNone),
					block(RuleStaleIntent, "created_at",
						"the descriptor was created 744h ago, longer than the host policy's plan expiry of 24h: the intent is stale"),
				},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := defaultPolicy()
			if tt.policy != nil {
				tt.policy(p)
			}
			got := p.Decide(descriptor(tt.desc), now)
			if d := cmp.Diff(tt.want, got); d != "" {
				t.Errorf("Decide() mismatch (-want +got):\n%s", d)
			}
		})
	}
}

func TestModeRank(t *testing.T) {
	if !(Allow.Rank() < Confirm.Rank() && Confirm.Rank() < Deny.Rank()) {
		t.Error("modes are not ordered allow < confirm < deny")
	}
	if Mode("bogus").Rank() != Deny.Rank() {
		t.Error("an unknown mode does not rank as deny")
	}
}
