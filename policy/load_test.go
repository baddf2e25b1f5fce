package policy

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/act-project/act/descriptors"
	"github.com/act-project/act/internal/document"
	"github.com/act-project/act/internal/problem"
	"github.com/act-project/act/schema"
)

const userHome = "/home/u"

// defaultPolicy is the embedded default as a Policy, "~" expanded to
// userHome.
func defaultPolicy() *Policy {
	return &Policy{
		AllowedRoots: []string{userHome, "/tmp"},
		Workspaces:   []string{"/tmp"},
		ResourceCaps: ResourceCaps{MaxCPUMs: 600000, MaxMemoryMB: 4096, MaxDiskMB: 10240, MaxDurationMs: 600000},
		Resources:    Resources{MemoryEnforcement: MemoryPerProcess},
		Modes: ModeTable{
			Risk: map[descriptors.RiskLevel]Mode{
				descriptors.RiskLow: Allow, descriptors.RiskMedium: Confirm,
				descriptors.RiskHigh: Confirm, descriptors.RiskCritical: Deny,
			},
			Types: map[descriptors.ActionType]Mode{},
		},
		Network:      Network{AllowedHosts: []string{}, SandboxNetwork: false, CredentialHosts: []string{}},
		Cooldown:     time.Hour,
		PlanExpiry:   24 * time.Hour,
		IdlePeriod:   5 * time.Minute,
		Audit:        Audit{RetainDays: 90, Witnesses: []Witness{}, WitnessGrace: time.Hour},
		MaxChanges:   100000,
		MaxPending:   50,
		MaxLayersMB:  2048,
		Hooks:        Hooks{CannotDryRun: HookDeny},
		CommandRules: []CommandRule{},
		Risk:         Risk{MaxDeletes: 20, SensitivePaths: []string{}, Commands: CommandsByDiff},
		Sandbox: SandboxPolicy{HidePaths: []string{}, HomeVisible: func() []string {
			var out []string
			for _, r := range []string{".gitconfig", ".config/git/config", ".config/git/ignore", ".config/git/attributes",
				".npmrc", ".netrc", ".pypirc", ".config/pip/pip.conf", ".pip/pip.conf", ".cargo/config.toml",
				"sdk", ".cargo/bin", ".rustup", ".pyenv", ".nvm", ".local/bin", ".m2/repository"} {
				out = append(out, userHome+"/"+r)
			}
			return out
		}(), Caches: func() []string {
			var out []string
			for _, r := range []string{".cache/go-build", "go/pkg/mod", ".npm", ".cache/pip", ".cargo/registry", ".cargo/git"} {
				out = append(out, userHome+"/"+r)
			}
			return out
		}(), PersistentCachesMB: 1024},
		Confirmation: Confirmation{Via: ViaFlag, Approvers: []string{}},
	}
}

func TestDefaultValidates(t *testing.T) {
	doc, probs := document.Parse(DefaultName, DefaultSource())
	if len(probs) > 0 {
		t.Fatalf("parse embedded default: %v", probs)
	}
	if v := schema.ValidatePolicy(doc.Value()); len(v) > 0 {
		t.Fatalf("embedded default violates policy.cue: %+v", v)
	}
	got, err := Default(userHome)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(defaultPolicy(), got, cmpopts.IgnoreUnexported(Policy{})); d != "" {
		t.Errorf("Default() mismatch (-want +got):\n%s", d)
	}
}

func TestDefaultWithoutUserHome(t *testing.T) {
	got, err := Default("")
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff([]string{"/tmp"}, got.AllowedRoots); d != "" {
		t.Errorf("Default(\"\").AllowedRoots mismatch (-want +got):\n%s", d)
	}
}

// writeFile writes content to dir/name and returns the path.
func writeFile(t *testing.T, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestLoadResolution(t *testing.T) {
	dir := t.TempDir()
	flag := writeFile(t, dir, "flag.yaml", "audit: {retain_days: 1}\n")
	env := writeFile(t, dir, "env.yaml", "audit: {retain_days: 2}\n")
	home := filepath.Join(dir, "home")
	homeFile := writeFile(t, home, HomeFile, "audit: {retain_days: 3}\n")
	emptyHome := filepath.Join(dir, "empty-home")

	withRetain := func(days int64) *Policy {
		p := defaultPolicy()
		p.Audit.RetainDays = days
		return p
	}
	tests := []struct {
		name       string
		opts       LoadOptions
		want       *Policy
		wantOrigin Origin
	}{
		{
			name:       "flag first",
			opts:       LoadOptions{Flag: flag, Env: env, Home: home},
			want:       withRetain(1),
			wantOrigin: Origin{Source: OriginFlag, Path: flag},
		},
		{
			name:       "then env",
			opts:       LoadOptions{Env: env, Home: home},
			want:       withRetain(2),
			wantOrigin: Origin{Source: OriginEnv, Path: env},
		},
		{
			name:       "then home",
			opts:       LoadOptions{Home: home},
			want:       withRetain(3),
			wantOrigin: Origin{Source: OriginHome, Path: homeFile},
		},
		{
			name:       "then the default",
			opts:       LoadOptions{Home: emptyHome},
			want:       defaultPolicy(),
			wantOrigin: Origin{Source: OriginDefault},
		},
		{
			name:       "no home at all",
			opts:       LoadOptions{},
			want:       defaultPolicy(),
			wantOrigin: Origin{Source: OriginDefault},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, origin, err := Load(tt.opts)
			if err != nil {
				t.Fatalf("Load() error: %v", err)
			}
			if d := cmp.Diff(tt.want, got, cmpopts.IgnoreUnexported(Policy{})); d != "" {
				t.Errorf("Load() policy mismatch (-want +got):\n%s", d)
			}
			if d := cmp.Diff(tt.wantOrigin, origin); d != "" {
				t.Errorf("Load() origin mismatch (-want +got):\n%s", d)
			}
		})
	}
}

func TestLoadMissingFile(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "nope.yaml")
	// A directory named policy.yaml in the home cannot be read: an error,
	// not the default.
	badHome := filepath.Join(dir, "bad-home")
	if err := os.MkdirAll(filepath.Join(badHome, HomeFile), 0o755); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name     string
		opts     LoadOptions
		wantFile string
		wantSrc  string
		notExist bool
	}{
		{"flag", LoadOptions{Flag: missing}, missing, OriginFlag, true},
		{"env", LoadOptions{Env: missing}, missing, OriginEnv, true},
		{"home is a directory", LoadOptions{Home: badHome}, filepath.Join(badHome, HomeFile), OriginHome, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, _, err := Load(tt.opts)
			if p != nil {
				t.Errorf("Load() returned a policy with error %v", err)
			}
			var le *LoadError
			if !errors.As(err, &le) {
				t.Fatalf("Load() error = %v (%T), want *LoadError", err, err)
			}
			if le.File != tt.wantFile || le.Source != tt.wantSrc {
				t.Errorf("LoadError file, source = %q, %q; want %q, %q", le.File, le.Source, tt.wantFile, tt.wantSrc)
			}
			if got := errors.Is(err, fs.ErrNotExist); got != tt.notExist {
				t.Errorf("errors.Is(err, fs.ErrNotExist) = %v, want %v", got, tt.notExist)
			}
			if !strings.HasPrefix(err.Error(), "read policy "+tt.wantFile+": ") {
				t.Errorf("Error() = %q", err.Error())
			}
		})
	}
}

func TestParseMerge(t *testing.T) {
	tests := []struct {
		name string
		file string
		want func(p *Policy)
	}{
		{name: "empty file", file: "", want: func(*Policy) {}},
		{name: "comments only", file: "# nothing here\n", want: func(*Policy) {}},
		{name: "empty object", file: "{}\n", want: func(*Policy) {}},
		{
			name: "one cap",
			file: "resource_caps: {max_cpu_ms: 1000}\n",
			want: func(p *Policy) { p.ResourceCaps.MaxCPUMs = 1000 },
		},
		{
			name: "one risk and a type",
			file: "modes:\n  risk: {MEDIUM: allow}\n  types: {FILE_DELETE: deny}\n",
			want: func(p *Policy) {
				p.Modes.Risk[descriptors.RiskMedium] = Allow
				p.Modes.Types[descriptors.FileDelete] = Deny
			},
		},
		{
			name: "roots replace, tilde expands",
			file: "allowed_roots: [\"~/work\", /srv/data, /]\n",
			want: func(p *Policy) { p.AllowedRoots = []string{userHome + "/work", "/srv/data", "/"} },
		},
		{
			name: "no roots at all",
			file: "allowed_roots: []\n",
			want: func(p *Policy) { p.AllowedRoots = []string{} },
		},
		{
			name: "network and durations",
			file: "network: {allowed_hosts: [example.org, '*.golang.org'], sandbox_network: true}\ncooldown: 0s\nplan_expiry: 90m\nidle_period: 1.5s\n",
			want: func(p *Policy) {
				p.Network = Network{AllowedHosts: []string{"example.org", "*.golang.org"}, SandboxNetwork: true, CredentialHosts: []string{}}
				p.Cooldown = 0
				p.PlanExpiry = 90 * time.Minute
				p.IdlePeriod = 1500 * time.Millisecond
			},
		},
		{
			name: "JSON",
			file: `{"audit": {"retain_days": 7}}`,
			want: func(p *Policy) { p.Audit.RetainDays = 7 },
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Parse("p.yaml", []byte(tt.file), userHome)
			if err != nil {
				t.Fatalf("Parse() error: %v", err)
			}
			want := defaultPolicy()
			tt.want(want)
			if d := cmp.Diff(want, got, cmpopts.IgnoreUnexported(Policy{})); d != "" {
				t.Errorf("Parse() mismatch (-want +got):\n%s", d)
			}
		})
	}
}

func TestLoadInvalid(t *testing.T) {
	type prob struct {
		Rule, Field string
		Line, Col   int
	}
	tests := []struct {
		name     string
		file     string
		userHome string
		want     []prob
	}{
		{
			name: "syntax",
			file: "cooldown: 1h\nplan_expiry: @24h\n",
			want: []prob{{"parse.syntax", "", 2, 1}},
		},
		{
			name: "duplicate key",
			file: "cooldown: 1h\ncooldown: 2h\n",
			want: []prob{{"parse.duplicate-key", "cooldown", 2, 1}},
		},
		{
			name: "unknown field and bad enum",
			file: "# policy\nmodes:\n  risk:\n    LOW: sometimes\n  typo: {}\n",
			want: []prob{
				{"schema.enum", "modes.risk.LOW", 4, 5},
				{"schema.unknown-field", "modes.typo", 5, 3},
			},
		},
		{
			name: "bad duration",
			file: "audit: {retain_days: 30}\nplan_expiry: 1day\n",
			want: []prob{{"schema.pattern", "plan_expiry", 2, 1}},
		},
		{
			name: "duration out of range",
			file: "cooldown: 99999999999h\nidle_period: 0s\n",
			want: []prob{
				{RuleInvalidDuration, "cooldown", 1, 1},
				{RuleInvalidDuration, "idle_period", 2, 1},
			},
		},
		{
			name: "relative and unclean roots",
			file: "allowed_roots:\n  - /tmp\n  - tmp\n  - /srv/\n  - ~/a/../b\n",
			want: []prob{
				{"schema.pattern", "allowed_roots[1]", 3, 5},
				{RuleInvalidRoot, "allowed_roots[2]", 4, 5},
				{RuleInvalidRoot, "allowed_roots[3]", 5, 5},
			},
		},
		{
			name: "unclean roots",
			file: "allowed_roots:\n  - /srv/\n  - ~/a/../b\n  - ~/\n",
			want: []prob{
				{RuleInvalidRoot, "allowed_roots[0]", 2, 5},
				{RuleInvalidRoot, "allowed_roots[1]", 3, 5},
				{RuleInvalidRoot, "allowed_roots[2]", 4, 5},
			},
		},
		{
			name:     "tilde without a home",
			file:     "allowed_roots: [\"~\"]\n",
			userHome: "-",
			want:     []prob{{RuleNoHome, "allowed_roots[0]", 1, 17}},
		},
		{
			// The password database's home is "/": no layer's "~" may
			// expand to it, wherever it is written.
			name:     "tilde with the home /",
			file:     "allowed_roots: [\"~\"]\nrisk: {sensitive_paths: [\"~/.bashrc\"]}\nsandbox: {hide_paths: [\"~/secret\"]}\nconfirmation: {approvers_file: ~/signers}\n",
			userHome: "/",
			want: []prob{
				{RuleNoHome, "allowed_roots[0]", 1, 17},
				{RuleNoHome, "risk.sensitive_paths[0]", 2, 26},
				{RuleNoHome, "sandbox.hide_paths[0]", 3, 24},
				{RuleNoHome, "confirmation.approvers_file", 4, 16},
			},
		},
		{
			name:     "tilde with a relative home",
			file:     "allowed_roots: [\"~/x\"]\n",
			userHome: "home/u",
			want:     []prob{{RuleNoHome, "allowed_roots[0]", 1, 17}},
		},
		{
			name: "not a mapping",
			file: "- allow\n",
			want: []prob{{"schema.type", "", 1, 1}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			name := writeFile(t, dir, "policy.yaml", tt.file)
			if tt.userHome != "" {
				withHome(t, tt.userHome)
			}
			p, _, err := Load(LoadOptions{Flag: name})
			if p != nil {
				t.Errorf("Load() returned a policy with error %v", err)
			}
			var le *LoadError
			if !errors.As(err, &le) {
				t.Fatalf("Load() error = %v (%T), want *LoadError", err, err)
			}
			if le.File != name || le.Source != OriginFlag || le.Err != nil {
				t.Errorf("LoadError = {File %q, Source %q, Err %v}", le.File, le.Source, le.Err)
			}
			var got []prob
			for _, pr := range le.Problems {
				got = append(got, prob{pr.Rule, pr.Field, pr.Line, pr.Column})
				if pr.File != name || pr.Message == "" {
					t.Errorf("problem %+v: want file %q and a message", pr, name)
				}
			}
			if d := cmp.Diff(tt.want, got, cmpopts.IgnoreUnexported(Policy{})); d != "" {
				t.Errorf("problems mismatch (-want +got):\n%s\n%v", d, le.Problems)
			}
			var list problem.List
			if !errors.As(err, &list) || len(list) != len(tt.want) {
				t.Errorf("errors.As(err, *problem.List) = %v", list)
			}
			if !strings.HasPrefix(err.Error(), "invalid policy: "+name+":") {
				t.Errorf("Error() = %q", err.Error())
			}
		})
	}
}

// TestValidatedBytes: the schema's verdict kept for a policy's bytes
// (act mcp reads the policy for every call) is that of those bytes only:
// the same bytes again give the same problems, and an edit — a fix, or a
// new mistake of the same length — is checked afresh.
func TestValidatedBytes(t *testing.T) {
	home := t.TempDir()
	bad := []byte("cooldown: 5\n")
	good := []byte("cooldown: 5s\n")
	worse := []byte("cooldovn: 5s\n")
	problems := func(data []byte) string {
		t.Helper()
		_, err := Parse("policy.yaml", data, home)
		if err == nil {
			return ""
		}
		return err.Error()
	}
	first := problems(bad)
	if first == "" {
		t.Fatal("cooldown: 5 passed the schema")
	}
	for i := range 3 {
		if got := problems(bad); got != first {
			t.Fatalf("load %d of the same bytes: %q, first %q", i+2, got, first)
		}
		if got := problems(good); got != "" {
			t.Fatalf("the fixed policy: %v", got)
		}
		if got := problems(worse); !strings.Contains(got, "cooldovn") {
			t.Fatalf("the misspelt field of the same length: %q", got)
		}
	}
}
