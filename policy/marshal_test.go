package policy

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/act-project/act/descriptors"
	"github.com/act-project/act/internal/document"
	"github.com/act-project/act/schema"
)

// Witness keys (cosignature/v1) for tests.
const (
	testWitnessKey1 = "witness.example/w1+da40b4ad+BBERERERERERERERERERERERERERERERERERERERERER"
	testWitnessKey2 = "witness.example/w2+2e820545+BCIiIiIiIiIiIiIiIiIiIiIiIiIiIiIiIiIiIiIiIiIi"
)

// custom is a policy with every field away from the default.
func custom() *Policy {
	return &Policy{
		AllowedRoots: []string{"/srv/data", "/tmp/a b", "/opt/#x: y"},
		ResourceCaps: ResourceCaps{MaxCPUMs: 1, MaxMemoryMB: 2, MaxDiskMB: 3, MaxDurationMs: 4},
		Resources:    Resources{MemoryEnforcement: MemoryTotal},
		Modes: ModeTable{
			Risk: map[descriptors.RiskLevel]Mode{
				descriptors.RiskLow: Confirm, descriptors.RiskMedium: Deny,
				descriptors.RiskHigh: Deny, descriptors.RiskCritical: Deny,
			},
			Types: map[descriptors.ActionType]Mode{
				descriptors.FileRead: Allow, descriptors.NetworkRequest: Confirm, descriptors.MultiStepComposite: Deny,
			},
			TypeRisk: map[descriptors.ActionType]map[descriptors.RiskLevel]Mode{
				descriptors.FileWrite: {descriptors.RiskLow: Allow, descriptors.RiskHigh: Deny},
			},
		},
		Workspaces: []string{"/tmp/a b/proj"},
		Network:    Network{AllowedHosts: []string{"example.org", "*.golang.org"}, SandboxNetwork: true, CredentialHosts: []string{"registry.example.org"}},
		Cooldown:   0,
		PlanExpiry: 90*time.Minute + 1500*time.Millisecond,
		IdlePeriod: 2*time.Hour + 3*time.Microsecond + 4,
		Audit: Audit{RetainDays: 3650, Witnesses: []Witness{
			{Name: "w1", Key: testWitnessKey1, URL: "https://w1.example/witness"},
			{Name: "w2", Key: testWitnessKey2, URL: "http://127.0.0.1:7380"},
		}, Quorum: 1, WitnessGrace: 10 * time.Minute, WitnessAfter: true},
		MaxChanges:   7,
		MaxPending:   3,
		MaxLayersMB:  64,
		CommandRules: []CommandRule{{Argv: []string{"go", "test", "*"}, Mode: Allow}, {Argv: []string{"/usr/bin/make", "test", "**"}, Env: map[string]string{"CI": "1", "GOFLAGS": "*"}, Stdin: AnyStdin, Mode: Confirm}, {Argv: []string{"rm"}, Mode: Deny}},
		Risk:         Risk{MaxDeletes: 5, SensitivePaths: []string{"/srv/**", "/etc/app"}, Commands: CommandsAlwaysMedium},
		Redact:       Redact{PII: true},
		Sandbox:      SandboxPolicy{HidePaths: []string{"/srv/secret", "/etc/app/token"}},
		Confirmation: Confirmation{Via: ViaSigned, Approvers: []string{"alice@example.org ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIKfA"}, ApproversFile: "/etc/act/allowed_signers"},
		Hooks:        Hooks{CannotDryRun: HookAsk},
	}
}

func TestMarshalRoundTrip(t *testing.T) {
	tests := []struct {
		name   string
		policy *Policy
	}{
		{"default", defaultPolicy()},
		{"custom", custom()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := tt.policy.Marshal()
			if !bytes.HasPrefix(out, []byte("# act host policy")) {
				t.Errorf("Marshal() does not start with the header comment:\n%s", out)
			}
			doc, probs := document.Parse("out.yaml", out)
			if len(probs) > 0 {
				t.Fatalf("Marshal() output does not parse: %v\n%s", probs, out)
			}
			if v := schema.ValidatePolicy(doc.Value()); len(v) > 0 {
				t.Fatalf("Marshal() output violates the schema: %+v\n%s", v, out)
			}
			// Save it as a file and load it, the way a user would.
			name := filepath.Join(t.TempDir(), "policy.yaml")
			if err := os.WriteFile(name, out, 0o644); err != nil {
				t.Fatal(err)
			}
			got, _, err := Load(LoadOptions{Flag: name})
			if err != nil {
				t.Fatalf("Load(Marshal()) error: %v\n%s", err, out)
			}
			if d := cmp.Diff(tt.policy, got, cmpopts.IgnoreUnexported(Policy{})); d != "" {
				t.Errorf("Load(Marshal()) mismatch (-want +got):\n%s\n%s", d, out)
			}
			// Printing again gives the same bytes.
			if again := got.Marshal(); !bytes.Equal(out, again) {
				t.Errorf("Marshal() is not stable:\n%s\n---\n%s", out, again)
			}
		})
	}
}

func TestMarshalDefaultText(t *testing.T) {
	want := `# act host policy: the effective policy, in the format act reads.
# Save it as <home>/policy.yaml (or pass it with --policy or ACT_POLICY) and
# edit it; a field left out takes act's default.

# Every scope path of a descriptor must lie under one of these roots.
# "~" and "~/x" expand to the user's home directory.
allowed_roots:
  - /home/u
  - /tmp
# Where an agent's everyday changes may flow without a person: a plan is
# LOW only when every change lies inside one of these.
workspaces:
  - /tmp
# The most a descriptor may request; a request above a cap is blocked.
resource_caps:
  max_cpu_ms: 600000
  max_memory_mb: 4096
  max_disk_mb: 10240
  max_duration_ms: 600000
# How the sandbox enforces a command's caps. memory_enforcement: total
# refuses commands where no memory cgroup can bound all their processes
# together; per_process falls back, for an ordinary user without one, to
# RLIMIT_AS per process, labelled as not a total cap.
resources:
  memory_enforcement: per_process
# The mode of an action: allow, confirm or deny.
modes:
  # By risk level.
  risk:
    LOW: allow
    MEDIUM: confirm
    HIGH: confirm
    CRITICAL: deny
  # By action type (FILE_WRITE, COMMAND_EXECUTION, ...); overrides the risk default.
  # One mode, or one a risk level: FILE_WRITE: {LOW: allow, HIGH: deny}.
  types: {}
network:
  # Hosts NETWORK_REQUEST may reach: an exact host or "*.example.org".
  # An IP address or CIDR range (127.0.0.1, ::1, 10.0.0.0/8) names that range:
  # names are checked after they resolve, and a loopback, link-local, private
  # or cloud metadata address is reached only where an entry names its range.
  allowed_hosts: []
  # Whether sandboxed commands (and so PACKAGE_INSTALL/PACKAGE_REMOVE) may use the network.
  sandbox_network: false
  # Hosts (of allowed_hosts) to which act's egress proxy may give your registry
  # tokens and passwords (~/.npmrc, ~/.netrc, pip.conf, …): commands see them
  # only as placeholders, which the proxy replaces in requests to these hosts.
  credential_hosts: []
# Refuse the same action for this long after a rollback (Go duration).
cooldown: 1h
# Pending plans expire after this; a descriptor created longer ago is a stale intent.
plan_expiry: 24h
# The user_idle precondition: no terminal input for this long.
idle_period: 5m
# The most changes one plan may hold; a dry run that makes more is rejected.
max_changes: 100000
# The most plans that may wait for a person.
max_pending: 50
# The most MiB the layers of plans not yet applied may hold together.
max_layers_mb: 2048
# Invocations a person pre-approves (allow, confirm) or refuses (deny); a plan
# whose every command one matches has the rule's mode while the rest of it is LOW.
# allow and confirm match the whole command: the program as the sandbox's PATH
# finds it (a bare name: one root installed in a system tree, such as /usr/bin;
# else its absolute path), each argument exactly, "*" one operand, "**" last:
# any flag of the tool; env: and stdin: any must allow the operation's.
# deny matches the program by name whatever follows, also through env, nice,
# timeout, xargs, sh -c, find -exec: best effort, never the only defence.
# E.g. [{argv: [go, test, ./...], mode: allow}, {argv: [go, vet, "**"], mode: allow},
# {argv: [rm], mode: deny}] (docs/policy.md, "Command rules").
command_rules: []
# act's own grading: more deletes than this, or a change under one of these
# paths, makes a plan HIGH.
risk:
  max_deletes: 20
  sensitive_paths: []
  # by_diff: a command whose dry run had no network and whose every change
  # is LOW is LOW, as a FILE_WRITE of that diff; always_medium: every command
  # is at least MEDIUM (a person per command, with the default modes).
  commands: by_diff
# Also redact e-mail addresses and phone numbers in commands' output.
redact:
  pii: false
audit:
  # How many days audit records are kept.
  retain_days: 90
  # Witnesses that cosign the log's checkpoints (docs/audit.md, "Witnesses"):
  # [{name: w1, key: "<its cosignature/v1 verifier key>", url: "https://..."}].
  witnesses: []
  # How many of the witnesses must cosign (0: none).
  quorum: 0
  # How long a record may wait for the quorum before act audit verify fails.
  witness_grace: 1h
  # Ask the witnesses to cosign after each apply and rollback.
  witness_after: false
confirmation:
  # What counts as a person's confirmation: flag (--confirm, or a yes at the
  # terminal), terminal (only a yes at the controlling terminal), signed (an
  # SSH signature by an approver).
  via: flag
  # Approvers of signed confirmations: allowed_signers lines.
  approvers: []
hooks:
  # What act hook answers for a command whose dry run does not finish in the
  # hook's time (it may wait on the network the sandbox lacks, or a local
  # service): deny, or ask (a person's yes then runs it outside act).
  cannot_dry_run: deny
sandbox:
  # More paths hidden from sandboxed commands, besides act's state dir and
  # the usual credential stores (~/.ssh, ~/.aws, ~/.gnupg, …).
  hide_paths: []
  # What builds need below the home, shown read-only to commands while the
  # rest of every home is masked; never a credential store. A tool's
  # configuration that mixes settings and secrets is shown as a copy with
  # a placeholder for each secret.
  home_visible:
    - /home/u/.gitconfig
    - /home/u/.config/git/config
    - /home/u/.config/git/ignore
    - /home/u/.config/git/attributes
    - /home/u/.npmrc
    - /home/u/.netrc
    - /home/u/.pypirc
    - /home/u/.config/pip/pip.conf
    - /home/u/.pip/pip.conf
    - /home/u/.cargo/config.toml
    - /home/u/sdk
    - /home/u/.cargo/bin
    - /home/u/.rustup
    - /home/u/.pyenv
    - /home/u/.nvm
    - /home/u/.local/bin
    - /home/u/.m2/repository
  # Where tools keep their caches: commands see the user's own there,
  # read-only under a throwaway layer; nothing a dry run writes there stays.
  caches:
    - /home/u/.cache/go-build
    - /home/u/go/pkg/mod
    - /home/u/.npm
    - /home/u/.cache/pip
    - /home/u/.cargo/registry
    - /home/u/.cargo/git
  # Opt-in, with a risk: those of caches where act keeps a cache of its own
  # across dry runs, over the user's (docs/sandbox-filesystem.md; act gc
  # --caches empties them).
  persistent_caches: []
  # The most MiB act's own caches may hold together.
  persistent_caches_mb: 1024
  # IPv4/IPv6 sockets on the sandbox's own loopback for commands without the
  # network (a test suite's local server); off: refused.
  loopback: false
`
	if d := cmp.Diff(want, string(defaultPolicy().Marshal())); d != "" {
		t.Errorf("Marshal() mismatch (-want +got):\n%s", d)
	}
}

func TestJSONRoundTrip(t *testing.T) {
	for _, p := range []*Policy{defaultPolicy(), custom()} {
		data, err := json.Marshal(p)
		if err != nil {
			t.Fatal(err)
		}
		got := new(Policy)
		if err := json.Unmarshal(data, got); err != nil {
			t.Fatal(err)
		}
		if d := cmp.Diff(p, got, cmpopts.IgnoreUnexported(Policy{})); d != "" {
			t.Errorf("JSON round trip mismatch (-want +got):\n%s\n%s", d, data)
		}
	}
	data, _ := json.Marshal(defaultPolicy())
	want := `{"allowed_roots":["/home/u","/tmp"],"workspaces":["/tmp"],"resource_caps":{"max_cpu_ms":600000,"max_memory_mb":4096,"max_disk_mb":10240,"max_duration_ms":600000},"resources":{"memory_enforcement":"per_process"},"modes":{"risk":{"CRITICAL":"deny","HIGH":"confirm","LOW":"allow","MEDIUM":"confirm"},"types":{}},"network":{"allowed_hosts":[],"sandbox_network":false,"credential_hosts":[]},"cooldown":"1h","plan_expiry":"24h","idle_period":"5m","audit":{"retain_days":90,"witnesses":[],"quorum":0,"witness_grace":"1h","witness_after":false},"max_changes":100000,"max_pending":50,"max_layers_mb":2048,"command_rules":[],"risk":{"max_deletes":20,"sensitive_paths":[],"commands":"by_diff"},"redact":{"pii":false},"sandbox":{"hide_paths":[],"home_visible":["/home/u/.gitconfig","/home/u/.config/git/config","/home/u/.config/git/ignore","/home/u/.config/git/attributes","/home/u/.npmrc","/home/u/.netrc","/home/u/.pypirc","/home/u/.config/pip/pip.conf","/home/u/.pip/pip.conf","/home/u/.cargo/config.toml","/home/u/sdk","/home/u/.cargo/bin","/home/u/.rustup","/home/u/.pyenv","/home/u/.nvm","/home/u/.local/bin","/home/u/.m2/repository"],"caches":["/home/u/.cache/go-build","/home/u/go/pkg/mod","/home/u/.npm","/home/u/.cache/pip","/home/u/.cargo/registry","/home/u/.cargo/git"],"persistent_caches_mb":1024,"loopback":false},"confirmation":{"via":"flag","approvers":[]},"hooks":{"cannot_dry_run":"deny"}}`
	if string(data) != want {
		t.Errorf("json.Marshal(default) =\n%s\nwant\n%s", data, want)
	}
}

func TestFormatDuration(t *testing.T) {
	for d, want := range map[time.Duration]string{
		0:                             "0s",
		time.Hour:                     "1h",
		24 * time.Hour:                "24h",
		90 * time.Minute:              "1h30m",
		1500 * time.Millisecond:       "1s500ms",
		3*time.Microsecond + 4:        "3us4ns",
		-time.Minute:                  "-1m",
		time.Hour + time.Second + 1e6: "1h1s1ms",
	} {
		if got := FormatDuration(d); got != want {
			t.Errorf("FormatDuration(%v) = %q, want %q", d, got, want)
		}
		if back, err := time.ParseDuration(FormatDuration(d)); err != nil || back != d {
			t.Errorf("ParseDuration(FormatDuration(%v)) = %v, %v", d, back, err)
		}
	}
}

// TestTypeRiskModes: a type's mode given a risk level at a time applies at
// those levels; a level it leaves out takes the risk default.
func TestTypeRiskModes(t *testing.T) {
	p, err := Parse("p.yaml", []byte("modes: {risk: {MEDIUM: deny}, types: {FILE_WRITE: {LOW: confirm, HIGH: allow}}}\n"), userHome)
	if err != nil {
		t.Fatal(err)
	}
	for r, want := range map[descriptors.RiskLevel]Mode{descriptors.RiskLow: Confirm, descriptors.RiskMedium: Deny, descriptors.RiskHigh: Allow, descriptors.RiskCritical: Deny} {
		if got, _ := p.ModeFor(descriptors.FileWrite, r); got != want {
			t.Errorf("FILE_WRITE %s: %s, want %s", r, got, want)
		}
	}
	if _, err := Parse("p.yaml", []byte("modes: {types: {FILE_WRITE: {LOW: sometimes}}}\n"), userHome); err == nil || !strings.Contains(err.Error(), "modes.types.FILE_WRITE.LOW") {
		t.Errorf("a bad mode in a type's levels: %v", err)
	}
}
