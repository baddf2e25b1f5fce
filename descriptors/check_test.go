package descriptors

import (
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/act-project/act/internal/problem"
)

// example loads examples/<name> and fails the test unless it is valid.
func example(t *testing.T, name string) *Descriptor {
	t.Helper()
	data, err := os.ReadFile("../examples/" + name)
	if err != nil {
		t.Fatal(err)
	}
	d, _, probs := Load(name, data)
	if probs != nil {
		t.Fatalf("Load(%s): %v", name, probs)
	}
	return d
}

// ruleFields runs Check on d without a document and returns "rule field"
// for each problem, or nil.
func ruleFields(d *Descriptor, opts CheckOptions) []string {
	var out []string
	for _, p := range Check(d, nil, opts) {
		if p.File != "" || p.Line != 0 {
			out = append(out, "positioned without a document: "+p.Error())
		}
		out = append(out, p.Rule+" "+p.Field)
	}
	return out
}

// writeTo returns the file_write example changed to write p in the given
// scope, with p declared as created.
func writeTo(t *testing.T, p string, scope []string, recursive bool) *Descriptor {
	d := example(t, "file_write.yaml")
	d.Scope.Filesystem = FilesystemScope{Paths: scope, Recursive: recursive}
	d.Preconditions.PathsExist = nil
	op := d.Op.(FileWriteOp)
	op.Path = p
	d.Op = op
	d.Effects.Filesystem = FilesystemEffects{Create: []string{p}}
	return d
}

func TestCheckScope(t *testing.T) {
	tests := []struct {
		name      string
		path      string
		scope     []string
		recursive bool
		want      []string
	}{
		{"direct child", "/tmp/w/a", []string{"/tmp/w"}, false, nil},
		{"the scope path itself", "/tmp/w", []string{"/tmp/w"}, false, nil},
		{"grandchild, not recursive", "/tmp/w/a/b", []string{"/tmp/w"}, false,
			[]string{"path.outside-scope effects.filesystem.create[0]", "path.outside-scope operation.path"}},
		{"grandchild, recursive", "/tmp/w/a/b", []string{"/tmp/w"}, true, nil},
		{"sibling with a common prefix", "/tmp/wx", []string{"/tmp/w"}, true,
			[]string{"path.outside-scope effects.filesystem.create[0]", "path.outside-scope operation.path"}},
		{"second scope path", "/tmp/v/a", []string{"/tmp/w", "/tmp/v"}, false, nil},
		{"glob scope", "/tmp/w1/a/b", []string{"/tmp/w*"}, true, nil},
		{"glob scope, outside", "/tmp/v/a", []string{"/tmp/w*"}, true,
			[]string{"path.outside-scope effects.filesystem.create[0]", "path.outside-scope operation.path"}},
		{"glob scope, not recursive", "/tmp/w1/a", []string{"/tmp/w*"}, false,
			[]string{"scope.wildcard-not-recursive scope.filesystem.paths[0]"}},
		{"relative scope: containment unknown", "/tmp/w/a", []string{"tmp/w"}, false,
			[]string{"scope.path-not-absolute scope.filesystem.paths[0]"}},
		{"unclean scope read as its clean form", "/tmp/w/a", []string{"/tmp/w/"}, false,
			[]string{"scope.path-not-clean scope.filesystem.paths[0]"}},
		{"dot-dot", "/tmp/w/../x", []string{"/tmp/w"}, true,
			[]string{"path.not-clean effects.filesystem.create[0]", "path.not-clean operation.path"}},
		{"empty scope", "/tmp/w/a", nil, false,
			[]string{"path.outside-scope effects.filesystem.create[0]", "path.outside-scope operation.path"}},
		{"bad glob in scope", "/tmp/w/a", []string{"/tmp/w**"}, true,
			[]string{"glob.invalid scope.filesystem.paths[0]"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := ruleFields(writeTo(t, tt.path, tt.scope, tt.recursive), testOptions)
			if d := cmp.Diff(tt.want, got); d != "" {
				t.Errorf("Check() mismatch (-want +got):\n%s", d)
			}
		})
	}
}

func TestCheckForbiddenScope(t *testing.T) {
	opts := CheckOptions{
		Now: testOptions.Now, Home: "/home/tester", UserHome: "/srv/tester",
		StateDir: "/var/lib/act-state",
	}
	tests := []struct {
		scope     string
		recursive bool
		want      []string // rules
	}{
		{"/tmp/w", true, nil},
		{"/", false, []string{"forbidden.home-root", "forbidden.host-access"}}, // /root is a direct child
		{"/", true, []string{"forbidden.home-root", "forbidden.host-access", "forbidden.state-dir"}},
		{"/etc", false, []string{"forbidden.host-access"}},
		{"/etc/nginx", true, nil}, // below a host directory: the policy's business
		{"/usr", true, []string{"forbidden.host-access"}},
		{"/proc", false, []string{"forbidden.host-access"}},
		{"/sys", false, []string{"forbidden.host-access"}},
		{"/dev", false, []string{"forbidden.host-access"}},
		{"/boot", false, []string{"forbidden.host-access"}},
		{"/var", false, []string{"forbidden.host-access"}},
		{"/var/lib", false, []string{"forbidden.state-dir"}}, // a direct child is the state dir
		{"/var/lib", true, []string{"forbidden.state-dir"}},
		{"/var/lib/act-state", false, []string{"forbidden.state-dir"}},
		{"/var/lib/act-state/plans", true, []string{"forbidden.state-dir"}},
		{"/var/lib/other", true, nil},
		{"/home/tester", false, []string{"forbidden.home-root"}},
		{"/home/tester/project", true, nil},
		{"/srv/tester", false, []string{"forbidden.home-root"}},
		{"/srv/tester/x", true, nil},
		{"/srv", false, []string{"forbidden.home-root"}},
		{"/home/alice", true, []string{"forbidden.home-root"}},
		{"/home", false, []string{"forbidden.home-root"}},
		{"/root", false, []string{"forbidden.home-root"}},
		{"/root/work", true, nil},
		{"/home/*", true, []string{"forbidden.home-root"}},
		{"/home/*/src", true, nil},
		{"/*", true, []string{"forbidden.home-root", "forbidden.host-access", "forbidden.state-dir"}},
		{"/t*", true, nil},
		{"/**", true, []string{"forbidden.home-root", "forbidden.host-access", "forbidden.state-dir"}},
	}
	for _, tt := range tests {
		t.Run(tt.scope, func(t *testing.T) {
			// Write a path that is in scope, to see only the scope's problems.
			p := path.Join(strings.ReplaceAll(tt.scope, "*", "x"), "f")
			var got []string
			for _, rf := range ruleFields(writeTo(t, p, []string{tt.scope}, tt.recursive), opts) {
				rule, f, _ := strings.Cut(rf, " ")
				if strings.HasPrefix(rule, "forbidden.") && f == "scope.filesystem.paths[0]" {
					got = append(got, rule)
				}
			}
			if d := cmp.Diff(tt.want, got); d != "" {
				t.Errorf("Check() forbidden rules mismatch (-want +got):\n%s", d)
			}
		})
	}
}

func TestCheckPersistence(t *testing.T) {
	tests := []struct {
		path string
		want bool
	}{
		{"/home/tester/.bashrc", true},
		{"/home/tester/.bashrc.bak", false},
		{"/home/tester/.profile", true},
		{"/home/tester/.config/systemd/user/agent.service", true},
		{"/home/tester/.config/autostart/x.desktop", true},
		{"/home/tester/.config/app/settings.json", false},
		{"/home/tester/.ssh/authorized_keys", true},
		{"/home/bob/.zshrc", true},
		{"/root/.bashrc", true},
		{"/etc/cron.d/job", true},
		{"/etc/cron.daily/job", true},
		{"/etc/ld.so.preload", true},
		{"/etc/sudoers.d/agent", true},
		{"/tmp/w/.bashrc", false},
		{"/home/tester/project/.profile", false},
		{"/home/tester/.config/**", true},
		{"/home/tester/*", true},
		{"/tmp/**", false},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			c := &checker{opts: testOptions}
			if got := c.persistenceKind(tt.path) != ""; got != tt.want {
				t.Errorf("persistenceKind(%q) = %q, want a kind: %t", tt.path, c.persistenceKind(tt.path), tt.want)
			}
		})
	}
}

func TestCheckCommand(t *testing.T) {
	tests := []struct {
		argv []string
		want []string
	}{
		{[]string{"make", "test"}, nil},
		{[]string{"/usr/bin/make", "test"}, nil},
		{[]string{""}, []string{"command.empty-program operation.argv"}},
		{[]string{"nohup", "make"}, []string{"forbidden.background-execution operation.argv[0]"}},
		{[]string{"/usr/bin/setsid", "make"}, []string{"forbidden.background-execution operation.argv[0]"}},
		{[]string{"make", "&"}, []string{"forbidden.background-execution operation.argv[1]"}},
		{[]string{"echo", "&", "x"}, nil},
		{[]string{"env", "A=1", "-u", "B", "nohup", "make"}, []string{"forbidden.background-execution operation.argv[4]"}},
		{[]string{"timeout", "5s", "sudo", "make"}, []string{"forbidden.host-access operation.argv[2]"}},
		{[]string{"nice", "-n", "10", "crontab", "-l"}, []string{"forbidden.background-execution operation.argv[3]"}},
		{[]string{"sh", "-c", "make && make install"}, nil},
		{[]string{"sh", "-c", "make >/dev/null 2>&1"}, nil},
		{[]string{"sh", "-c", "make &> log"}, nil},
		{[]string{"sh", "-c", "make & wait"}, []string{"forbidden.background-execution operation.argv[2]"}},
		{[]string{"bash", "-ec", "echo 'a & b'"}, nil},
		{[]string{"bash", "--norc", "-c", "cd x; sudo make"}, []string{"forbidden.host-access operation.argv[3]"}},
		{[]string{"sh", "-c", "FOO=1 nohup make"}, []string{"forbidden.background-execution operation.argv[2]"}},
		{[]string{"sh", "-c", "x=$(at now)"}, []string{"forbidden.background-execution operation.argv[2]"}},
		{[]string{"sh", "-c", "sh -c 'setsid x'"}, nil}, // nested quotes are not read
		{[]string{"sh", "script.sh", "-c"}, nil},
		{[]string{"busybox", "sh", "-c", "systemctl stop x"}, []string{"forbidden.host-access operation.argv[3]"}},
		{[]string{"grep", "sudo", "log"}, nil},
		{[]string{"docker", "run", "x"}, []string{"forbidden.host-access operation.argv[0]"}},
		{[]string{"env", "-S", "nohup make", "x"}, []string{"forbidden.background-execution operation.argv[2]"}},
		{[]string{"taskset", "0x3", "nohup", "make"}, []string{"forbidden.background-execution operation.argv[2]"}},
		{[]string{"flock", "-w", "5", "/tmp/lock", "setsid", "make"}, []string{"forbidden.background-execution operation.argv[4]"}},
		{[]string{"xargs", "-I", "{}", "sudo", "rm", "{}"}, []string{"forbidden.host-access operation.argv[3]"}},
		{[]string{"timeout", "-s", "KILL", "10", "make"}, nil},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.argv, " "), func(t *testing.T) {
			d := example(t, "command_execution.yaml")
			op := d.Op.(CommandExecutionOp)
			op.Argv = tt.argv
			d.Op = op
			d.Verification = nil
			if d := cmp.Diff(tt.want, ruleFields(d, testOptions)); d != "" {
				t.Errorf("Check() mismatch (-want +got):\n%s", d)
			}
		})
	}
}

func TestCheckCreatedAt(t *testing.T) {
	tests := []struct {
		at   string
		now  time.Time
		want []string
	}{
		{"2026-11-22T00:00:00Z", testOptions.Now, nil},
		{"2026-11-22T00:06:00Z", testOptions.Now, nil},                                      // exactly 5 minutes ahead
		{"2026-11-22T00:06:01Z", testOptions.Now, []string{"created-at.future created_at"}}, // one second more
		{"2026-11-22T02:06:00+02:00", testOptions.Now, nil},                                 // same instant, other zone
		{"2030-01-01T00:00:00Z", time.Time{}, nil},                                          // no clock: not checked
		{"2026-02-29T00:00:00Z", testOptions.Now, []string{"created-at.invalid created_at"}},
		{"2026-11-22T00:00:60Z", testOptions.Now, []string{"created-at.invalid created_at"}},
	}
	for _, tt := range tests {
		t.Run(tt.at, func(t *testing.T) {
			d := example(t, "file_read.yaml")
			d.CreatedAt = tt.at
			opts := testOptions
			opts.Now = tt.now
			if d := cmp.Diff(tt.want, ruleFields(d, opts)); d != "" {
				t.Errorf("Check() mismatch (-want +got):\n%s", d)
			}
		})
	}
}

func TestCheckIntent(t *testing.T) {
	tests := []struct {
		name, intent string
		want         []string
	}{
		{"one line", "Read the README.", nil},
		{"wrapped lines", "Read the README\nand summarise it.\n", nil},
		{"trailing blank lines", "Read the README.\n\n\n", nil},
		{"blank line", "Read it.\n\nThen summarise.", []string{"intent.not-one-paragraph intent_summary"}},
		{"blank line of spaces", "Read it.\n  \t\nThen summarise.", []string{"intent.not-one-paragraph intent_summary"}},
		{"crlf blank line", "Read it.\r\n\r\nThen.", []string{"intent.not-one-paragraph intent_summary"}},
		{"blank", " \n ", []string{"intent.empty intent_summary"}},
		{"1000 characters", strings.Repeat("é", 1000), nil},
		{"1001 characters", strings.Repeat("é", 1001), []string{"intent.too-long intent_summary"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := example(t, "file_read.yaml")
			d.IntentSummary = tt.intent
			if d := cmp.Diff(tt.want, ruleFields(d, testOptions)); d != "" {
				t.Errorf("Check() mismatch (-want +got):\n%s", d)
			}
		})
	}
}

func TestCheckSandboxRequired(t *testing.T) {
	for _, tt := range []struct {
		file string
		risk RiskLevel
		want bool
	}{
		{"file_read.yaml", RiskLow, false},
		{"file_read.yaml", RiskMedium, false},
		{"file_read.yaml", RiskHigh, true},
		{"file_read.yaml", RiskCritical, true},
		{"file_write.yaml", RiskLow, false},
		{"file_move.yaml", RiskLow, false},
		{"directory_create.yaml", RiskLow, false},
		{"config_change.json", RiskLow, false},
		{"network_request.json", RiskLow, false},
		{"ui_automation.yaml", RiskLow, false},
		{"file_delete.yaml", RiskLow, true},
		{"directory_delete.yaml", RiskLow, true},
		{"command_execution.yaml", RiskLow, true},
		{"package_install.yaml", RiskLow, true},
		{"package_remove.yaml", RiskLow, true},
	} {
		d := example(t, tt.file)
		d.RiskLevel = tt.risk
		d.Sandbox.Required = false
		var want []string
		if tt.want {
			want = []string{"sandbox.required sandbox.required"}
		}
		if diff := cmp.Diff(want, ruleFields(d, testOptions)); diff != "" {
			t.Errorf("%s at %s without a sandbox: mismatch (-want +got):\n%s", tt.file, tt.risk, diff)
		}
	}
}

func TestCheckNetwork(t *testing.T) {
	tests := []struct {
		file                   string
		scope, effects, sbxNet bool
		want                   []string
	}{
		{"network_request.json", true, true, true, nil},
		{"network_request.json", false, false, false, []string{"network.required-for-type scope.network.required"}},
		{"network_request.json", true, false, true, []string{"network.inconsistent effects.network"}},
		{"network_request.json", true, true, false, []string{"network.inconsistent sandbox.allow_network"}},
		{"command_execution.yaml", true, true, true, nil},
		{"command_execution.yaml", false, false, false, nil},
		{"file_write.yaml", true, true, true, []string{"network.not-allowed-for-type scope.network.required"}},
		{"file_write.yaml", false, true, false, []string{"network.inconsistent effects.network"}},
		{"composite.yaml", true, true, true, []string{"network.not-allowed-for-type scope.network.required"}},
	}
	for _, tt := range tests {
		d := example(t, tt.file)
		d.Scope.Network.Required, d.Effects.Network, d.Sandbox.AllowNetwork = tt.scope, tt.effects, tt.sbxNet
		if diff := cmp.Diff(tt.want, ruleFields(d, testOptions)); diff != "" {
			t.Errorf("%s with network %t/%t/%t: mismatch (-want +got):\n%s", tt.file, tt.scope, tt.effects, tt.sbxNet, diff)
		}
	}
}

// nest returns a composite whose last step is a chain of composites, so
// that the FILE_DELETE at its bottom stands at depth.
func nest(t *testing.T, depth int) *Descriptor {
	d := example(t, "composite.yaml")
	last := d.Steps[len(d.Steps)-1] // the FILE_DELETE, depth 2
	for i := 2; i < depth; i++ {
		last = Step{ActionType: MultiStepComposite, Effects: last.Effects, Steps: []Step{last}}
	}
	d.Steps[len(d.Steps)-1] = last
	return d
}

func TestCheckCompositeDepth(t *testing.T) {
	if got := ruleFields(nest(t, MaxStepDepth), testOptions); got != nil {
		t.Errorf("a step at depth %d: %v, want no problems", MaxStepDepth, got)
	}
	want := []string{"composite.too-deep steps[3]" + strings.Repeat(".steps[0]", MaxStepDepth-1)}
	if d := cmp.Diff(want, ruleFields(nest(t, MaxStepDepth+1), testOptions)); d != "" {
		t.Errorf("a step at depth %d: mismatch (-want +got):\n%s", MaxStepDepth+1, d)
	}
}

func TestCheckComposite(t *testing.T) {
	tests := []struct {
		name string
		edit func(d *Descriptor)
		want []string
	}{
		{"valid", func(d *Descriptor) {}, nil},
		{"step risk above parent", func(d *Descriptor) { d.Steps[0].RiskLevel = RiskCritical },
			[]string{"composite.step-risk-above-parent steps[0].risk_level"}},
		{"step risk inherited", func(d *Descriptor) { d.Steps[0].RiskLevel = "" }, nil},
		{"step effect outside the parent", func(d *Descriptor) {
			d.Steps[0].Effects.Filesystem.Modify = []string{"/tmp/act-example/release/x"}
		}, []string{"composite.step-effects-outside-parent steps[0].effects.filesystem.modify[0]"}},
		{"step delete under a deleted parent directory", func(d *Descriptor) {
			d.Effects.Filesystem.Delete = append(d.Effects.Filesystem.Delete, "/tmp/act-example/project/build/old")
			d.Steps[3].Effects.Filesystem.Delete = append(d.Steps[3].Effects.Filesystem.Delete, "/tmp/act-example/project/build/old/a/b")
		}, nil},
		{"step network the parent lacks", func(d *Descriptor) { d.Steps[0].Effects.Network = true },
			[]string{"composite.step-effects-outside-parent steps[0].effects.network",
				"network.not-allowed-for-type steps[0].effects.network"}},
		{"step outside the scope", func(d *Descriptor) {
			op := d.Steps[1].Op.(FileWriteOp)
			op.Path = "/tmp/elsewhere/VERSION"
			d.Steps[1].Op = op
		}, []string{"path.outside-scope steps[1].operation.path", "effects.undeclared-path steps[1].operation.path"}},
		{"step needs a sandbox", func(d *Descriptor) { d.Sandbox.Required = false },
			[]string{"sandbox.required steps[3].action_type"}},
		{"step of risk HIGH needs a sandbox", func(d *Descriptor) {
			d.Sandbox.Required = false
			d.Steps = d.Steps[:2]
			d.RiskLevel = RiskCritical
			d.Steps[0].RiskLevel = RiskHigh
		}, []string{"sandbox.required sandbox.required"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := example(t, "composite.yaml")
			tt.edit(d)
			got := ruleFields(d, testOptions)
			if d := cmp.Diff(tt.want, got, sortStrings); d != "" {
				t.Errorf("Check() mismatch (-want +got):\n%s", d)
			}
		})
	}
}

var sortStrings = cmp.Transformer("sort", func(in []string) []string {
	out := append([]string(nil), in...)
	for i := range out {
		for j := i + 1; j < len(out); j++ {
			if out[j] < out[i] {
				out[i], out[j] = out[j], out[i]
			}
		}
	}
	return out
})

func TestCheckOperations(t *testing.T) {
	tests := []struct {
		file string
		edit func(d *Descriptor)
		want []string
	}{
		{"file_write.yaml", func(d *Descriptor) {
			op := d.Op.(FileWriteOp)
			b := "aGVsbG8="
			op.Content, op.ContentBase64 = nil, &b
			d.Op = op
		}, nil},
		{"file_write.yaml", func(d *Descriptor) {
			op := d.Op.(FileWriteOp)
			b := "aGVsbG8"
			op.Content, op.ContentBase64 = nil, &b
			d.Op = op
		}, []string{"file-write.invalid-base64 operation.content_base64"}},
		{"file_write.yaml", func(d *Descriptor) {
			op := d.Op.(FileWriteOp)
			op.Mode = "2755"
			d.Op = op
		}, []string{"mode.special-bits operation.mode"}},
		{"file_move.yaml", func(d *Descriptor) {
			op := d.Op.(FileMoveOp)
			op.Overwrite = true
			d.Op = op
			d.Effects.Filesystem.Create, d.Effects.Filesystem.Modify = nil, []string{op.To}
		}, nil},
		{"file_move.yaml", func(d *Descriptor) {
			op := d.Op.(FileMoveOp)
			d.Effects.Filesystem.Create, d.Effects.Filesystem.Modify = nil, []string{op.To}
		}, []string{"effects.undeclared-path operation.to"}},
		{"directory_delete.yaml", func(d *Descriptor) {
			d.Effects.Filesystem.Delete = []string{"/tmp/act-example/project/scratch/*"}
		}, []string{"effects.undeclared-path operation.path"}},
		{"network_request.json", func(d *Descriptor) {
			op := d.Op.(NetworkRequestOp)
			op.URL = "HTTPS://example.com:8443/x?y=1#z"
			d.Op = op
		}, nil},
		{"network_request.json", func(d *Descriptor) {
			op := d.Op.(NetworkRequestOp)
			op.URL = "example.com/x"
			d.Op = op
		}, []string{"network.invalid-url operation.url"}},
		{"network_request.json", func(d *Descriptor) {
			op := d.Op.(NetworkRequestOp)
			op.Headers = map[string]string{"X-A": "1\r\nX-B: 2"}
			d.Op = op
		}, []string{"network.invalid-header operation.headers.X-A"}},
		{"network_request.json", func(d *Descriptor) {
			op := d.Op.(NetworkRequestOp)
			op.SaveTo = ""
			d.Op = op
		}, nil},
		{"config_change.json", func(d *Descriptor) {
			op := d.Op.(ConfigChangeOp)
			op.Unset = []string{"debug", "debug"}
			d.Op = op
		}, []string{"config.key-conflict operation.unset[1]"}},
		{"config_change.json", func(d *Descriptor) {
			op := d.Op.(ConfigChangeOp)
			op.Path = "/tmp/act-example/project/config.yml"
			d.Op = op
			d.Effects.Filesystem.Modify = []string{op.Path}
			d.Preconditions.PathsExist = []string{op.Path}
		}, []string{"config.format-mismatch operation.format"}},
		{"package_install.yaml", func(d *Descriptor) {
			op := d.Op.(PackageOp)
			op.Packages = []string{"left pad", ""}
			op.Workdir = "/tmp/elsewhere"
			d.Op = op
		}, []string{"package.invalid-name operation.packages[0]", "package.invalid-name operation.packages[1]",
			"path.outside-scope operation.workdir"}},
		{"command_execution.yaml", func(d *Descriptor) {
			op := d.Op.(CommandExecutionOp)
			op.Workdir = "/tmp/act-example/site/*"
			op.Env = map[string]string{"_OK1": "x", "1BAD": "y"}
			d.Op = op
		}, []string{"command.invalid-env-name operation.env[\"1BAD\"]", "path.wildcard-not-allowed operation.workdir"}},
		{"command_execution.yaml", func(d *Descriptor) {
			op := d.Op.(CommandExecutionOp)
			op.Argv = []string{"bash", "-c", "cd x"}
			op.ReportCwd = true
			d.Op = op
		}, []string{"command.report-cwd-not-shell operation.report_cwd"}},
		{"file_read.yaml", func(d *Descriptor) {
			d.Preconditions.PathsAbsent = []string{"/tmp/act-example/project/x"}
			d.Preconditions.SHA256 = map[string]string{"/tmp/act-example/project/x": "ab"}
			n := int64(-1)
			d.Preconditions.MinFreeDiskMB = &n
		}, []string{"preconditions.contradictory preconditions.sha256[\"/tmp/act-example/project/x\"]",
			"preconditions.min-free-disk-not-positive preconditions.min_free_disk_mb"}},
		{"file_read.yaml", func(d *Descriptor) {
			d.Effects.SystemStateChange = true
			d.Rollback.Supported = false
			d.Audit.Log = false
			d.Audit.RetainDays = -1
			d.Sandbox.MaxRuns = 0
			d.Confirmation.Required = true
			d.Confirmation.Reason = ""
			d.Resources = Resources{}
		}, []string{
			"audit.disabled audit.log", "audit.retain-days-not-positive audit.retain_days",
			"confirmation.reason-missing confirmation.reason",
			"effects.system-state-change effects.system_state_change",
			"resources.not-positive resources.max_cpu_ms", "resources.not-positive resources.max_disk_mb",
			"resources.not-positive resources.max_duration_ms", "resources.not-positive resources.max_memory_mb",
			"rollback.not-supported rollback.supported", "sandbox.max-runs-not-positive sandbox.max_runs",
		}},
	}
	for i, tt := range tests {
		t.Run(tt.file+"#"+idx(i), func(t *testing.T) {
			d := example(t, tt.file)
			tt.edit(d)
			if d := cmp.Diff(tt.want, ruleFields(d, testOptions), sortStrings); d != "" {
				t.Errorf("Check() mismatch (-want +got):\n%s", d)
			}
		})
	}
}

func TestCheckPath(t *testing.T) {
	for _, tt := range []struct {
		p  string
		ok bool
	}{
		{"/", true}, {"/a", true}, {"/a/b.c", true}, {"/a/.b", true}, {"/a/...", true},
		{"", false}, {"a", false}, {"./a", false}, {"/a/", false}, {"//a", false}, {"/a//b", false},
		{"/a/.", false}, {"/a/..", false}, {"/./a", false}, {"/a\x00b", false},
	} {
		if err := CheckPath(tt.p); (err == nil) != tt.ok {
			t.Errorf("CheckPath(%q) = %v, want ok=%t", tt.p, err, tt.ok)
		}
	}
}

// FuzzCleanPath checks that CheckPath accepts exactly the paths that are
// absolute and a fixed point of path.Clean.
func FuzzCleanPath(f *testing.F) {
	for _, s := range []string{"/", "/a/b", "/a/../b", "a", "/a/", "//", "/a/./b", "/a\x00"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, p string) {
		err := CheckPath(p)
		clean := strings.HasPrefix(p, "/") && path.Clean(p) == p && !strings.ContainsRune(p, 0)
		if (err == nil) != clean {
			t.Errorf("CheckPath(%q) = %v, but clean and absolute is %t", p, err, clean)
		}
	})
}

func TestCheckNoDocument(t *testing.T) {
	d := example(t, "file_write.yaml")
	d.Rollback.Supported = false
	got := Check(d, nil, testOptions)
	if len(got) != 1 || got[0].File != "" || got[0].Line != 0 || got[0].Error() != "rollback.not-supported: rollback.supported: rollback.supported is false; act runs only actions it can roll back" {
		t.Errorf("Check without a document = %#v", got)
	}
}

// FuzzCheck feeds descriptors to Load and Check: Check never panics, and
// every problem it reports has a registered static rule id, a field, a
// position and one sentence in the house style.
func FuzzCheck(f *testing.F) {
	for _, glob := range []string{"../examples/*.yaml", "../examples/*.json", "testdata/invalid/*.yaml"} {
		files, _ := filepath.Glob(glob)
		for _, name := range files {
			if data, err := os.ReadFile(name); err == nil && len(data) < 64<<10 {
				f.Add(filepath.Base(name), data)
			}
		}
	}
	known := map[string]bool{}
	for _, r := range Rules() {
		if r.Layer() == problem.Rule {
			known[r.ID] = true
		}
	}
	f.Fuzz(func(t *testing.T, name string, data []byte) {
		d, doc, probs := Load(name, data)
		if probs != nil {
			return
		}
		for _, p := range Check(d, doc, testOptions) {
			switch {
			case !known[p.Rule]:
				t.Errorf("unregistered rule: %s", p.Error())
			case p.Layer != problem.Rule || p.Line == 0 || p.Field == "":
				t.Errorf("problem without layer, position or field: %#v", p)
			case p.Message == "" || strings.HasSuffix(p.Message, ".") || strings.ContainsAny(p.Message[:1], "ABCDEFGHIJKLMNOPQRSTUVWXYZ"):
				t.Errorf("message not one lower-case sentence without a final period: %q", p.Message)
			}
		}
	})
}

func TestEffectMatcher(t *testing.T) {
	m := NewEffectMatcher(FilesystemEffects{
		Create: []string{"/t/new", "/t/logs/*.log"},
		Modify: []string{"/t/conf/**"},
		Delete: []string{"/t/old", "/t/cache/*"},
	})
	tests := []struct {
		kind, path string
		want       bool
	}{
		{"create", "/t/new", true},
		{"create", "/t/new/x", false}, // only a delete covers what lies below
		{"create", "/t/logs/a.log", true},
		{"create", "/t/logs/a.txt", false},
		{"modify", "/t/new", false},
		{"modify", "/t/conf/a/b", true},
		{"delete", "/t/old", true},
		{"delete", "/t/old/deep/file", true},
		{"delete", "/t/older", false},
		{"delete", "/t/cache/x/y", true},
		{"delete", "/t/new", false},
		{"create", "/t/logs/*.log", true}, // a literal name with a star, matched by the glob
		{"rename", "/t/new", false},
	}
	for _, tt := range tests {
		if got := m.Declared(tt.kind, tt.path); got != tt.want {
			t.Errorf("Declared(%q, %q) = %t, want %t", tt.kind, tt.path, got, tt.want)
		}
	}
}

// TestCheckCredentialScope: a descriptor that runs anything in the sandbox
// may not scope a credential store, a directory that holds one, or a path
// in one: the sandbox shows a scope as it is, and the command's output
// would carry the keys before anyone is asked. A file operation, which
// runs nothing, is graded instead (docs/risk.md).
func TestCheckCredentialScope(t *testing.T) {
	opts := CheckOptions{Now: testOptions.Now, Home: "/tmp/envhome", UserHome: "/srv/tester"}
	tests := []struct {
		scope string
		want  bool
	}{
		{"/srv/tester/.ssh", true},
		{"/srv/tester/.ssh/keys", true},
		{"/srv/tester/.config", true}, // holds gh, git/credentials, gcloud …
		{"/srv/tester/.config/git", true},
		{"/srv/tester/.config/git/credentials", true},
		{"/srv/tester/.config/nvim", false},
		{"/srv/tester/.docker", true},
		{"/srv/tester/.npmrc", true},
		{"/srv/tester/.cargo", true},
		{"/srv/tester/.claude", true},
		{"/srv/tester/project", false},
		{"/srv/tester/*", true},
		{"/tmp/envhome/.aws", true}, // $HOME's too
		{"/home/bob/.gnupg", true},
		{"/root/.kube", true},
		{"/etc/ssh", true},
		{"/etc/ssl", true},
		{"/etc/nginx", false},
		{"/tmp/w", false},
	}
	for _, tt := range tests {
		t.Run(tt.scope, func(t *testing.T) {
			cmd := example(t, "command_execution.yaml")
			cmd.Scope.Filesystem = FilesystemScope{Paths: []string{tt.scope}, Recursive: true}
			cmd.Preconditions = Preconditions{}
			cmd.Effects.Filesystem = FilesystemEffects{}
			op := cmd.Op.(CommandExecutionOp)
			op.Workdir = ""
			op.Argv = []string{"ls"}
			cmd.Op = op
			cmd.Verification = nil
			got := slices.ContainsFunc(ruleFields(cmd, opts), func(rf string) bool {
				return rf == "forbidden.credential-store scope.filesystem.paths[0]"
			})
			if got != tt.want {
				t.Errorf("a command scoped to %s: forbidden.credential-store %v, want %v (%q)", tt.scope, got, tt.want, ruleFields(cmd, opts))
			}
			// A file write there runs nothing: not this rule.
			w := writeTo(t, path.Join(strings.ReplaceAll(tt.scope, "*", "x"), "f"), []string{tt.scope}, true)
			if slices.Contains(ruleFields(w, opts), "forbidden.credential-store scope.filesystem.paths[0]") {
				t.Errorf("a FILE_WRITE scoped to %s is refused as a command would be", tt.scope)
			}
			// Its verification commands run in the sandbox: refused.
			w.Verification = &Verification{Commands: [][]string{{"true"}}}
			if got := slices.Contains(ruleFields(w, opts), "forbidden.credential-store scope.filesystem.paths[0]"); got != tt.want {
				t.Errorf("a FILE_WRITE with a verification command scoped to %s: forbidden.credential-store %v, want %v", tt.scope, got, tt.want)
			}
		})
	}
}
