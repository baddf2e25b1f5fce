package descriptors

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// shortStamp expands the tests' short descriptors: a fixed time and id,
// and a policy with caps below the defaults and its own retention.
var shortStamp = Stamp{
	ActionID:  "ce32ab2b-af32-4a61-ac53-d26d6303e810",
	CreatedAt: "2026-11-22T00:00:00Z",
	Policy: Defaults{
		Caps:       Resources{MaxCPUMs: 120000, MaxMemoryMB: 2048},
		RetainDays: 7,
		Homes:      []string{"/home/tester"},
	},
}

// loadShort expands and checks a short descriptor as the gate does, and
// returns it with its problems.
func loadShort(t *testing.T, text string) (*Descriptor, []string) {
	t.Helper()
	d, doc, probs := LoadStamped("d.yaml", []byte(text), shortStamp)
	if probs == nil {
		probs = Check(d, doc, testOptions)
	}
	var lines []string
	for _, p := range probs {
		lines = append(lines, p.Error())
	}
	return d, lines
}

// TestShortFormFiveLines: a FILE_WRITE, an edit and a command in five
// lines (type, intent, operation) expand into descriptors every rule
// accepts, their scope, effects and sandbox from the operation, their
// resources the kind's within the policy's caps, their retention the
// policy's.
func TestShortFormFiveLines(t *testing.T) {
	for name, tc := range map[string]struct {
		text      string
		scope     FilesystemScope
		effects   FilesystemEffects
		sandboxed bool
		res       Resources
	}{
		"write": {
			text:    "action_type: FILE_WRITE\nintent_summary: Write the notes.\noperation:\n  path: /home/tester/proj/NOTES.md\n  content: \"hello\\n\"\n",
			scope:   FilesystemScope{Paths: []string{"/home/tester/proj"}},
			effects: FilesystemEffects{Create: []string{"/home/tester/proj/NOTES.md"}, Modify: []string{"/home/tester/proj/NOTES.md"}, Delete: []string{}},
			res:     fileResources,
		},
		"edit": {
			text:    "action_type: FILE_WRITE\nintent_summary: Fix the port.\noperation:\n  path: /home/tester/proj/app.conf\n  edits: [{old: \"port = 80\", new: \"port = 8080\"}]\n",
			scope:   FilesystemScope{Paths: []string{"/home/tester/proj"}},
			effects: FilesystemEffects{Create: []string{}, Modify: []string{"/home/tester/proj/app.conf"}, Delete: []string{}},
			res:     fileResources,
		},
		"command": {
			text:      "action_type: COMMAND_EXECUTION\nintent_summary: Run the tests.\noperation:\n  argv: [go, test, ./...]\n  workdir: /home/tester/proj\n",
			scope:     FilesystemScope{Paths: []string{"/home/tester/proj"}, Recursive: true},
			effects:   FilesystemEffects{Create: []string{"/home/tester/proj/**"}, Modify: []string{"/home/tester/proj/**"}, Delete: []string{"/home/tester/proj/**"}},
			sandboxed: true,
			res:       Resources{MaxCPUMs: 120000, MaxMemoryMB: 2048, MaxDiskMB: 1024, MaxDurationMs: 600000},
		},
	} {
		t.Run(name, func(t *testing.T) {
			if n := strings.Count(tc.text, "\n"); n > 5 {
				t.Fatalf("the short form takes %d lines", n)
			}
			d, probs := loadShort(t, tc.text)
			if len(probs) > 0 {
				t.Fatalf("problems:\n%s", strings.Join(probs, "\n"))
			}
			if diff := cmp.Diff(tc.scope, d.Scope.Filesystem); diff != "" {
				t.Errorf("scope (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.effects, d.Effects.Filesystem); diff != "" {
				t.Errorf("effects (-want +got):\n%s", diff)
			}
			if d.Resources != tc.res {
				t.Errorf("resources %+v, want %+v", d.Resources, tc.res)
			}
			if d.Sandbox.Required != tc.sandboxed || d.Sandbox.MaxRuns != 1 || d.Sandbox.AllowNetwork || d.Scope.Network.Required {
				t.Errorf("sandbox %+v, network %v", d.Sandbox, d.Scope.Network)
			}
			if d.RiskLevel != RiskLow || d.Audit != (Audit{Log: true, LogLevel: "SUMMARY", RetainDays: 7}) ||
				d.Rollback != (Rollback{Supported: true, RollbackType: "filesystem_snapshot", RollbackScope: "declared_effects_only"}) ||
				d.Confirmation.Required || d.Preconditions.PathsExist == nil {
				t.Errorf("defaults: risk %s, audit %+v, rollback %+v, confirmation %+v, preconditions %+v",
					d.RiskLevel, d.Audit, d.Rollback, d.Confirmation, d.Preconditions)
			}
		})
	}
}

// TestShortFormExpandedIsChecked: the expanded document (what act
// validate --expand prints) read back as a full descriptor is the same
// descriptor, with the same digest: what is shown is what the gate
// checked.
func TestShortFormExpandedIsChecked(t *testing.T) {
	for _, text := range []string{
		"action_type: FILE_WRITE\nintent_summary: x\noperation: {path: /home/tester/proj/a, content: x}\n",
		"action_type: PACKAGE_INSTALL\nintent_summary: x\noperation: {manager: npm, packages: [kleur], workdir: /home/tester/proj}\n",
		"action_type: MULTI_STEP_COMPOSITE\nintent_summary: x\nsteps:\n  - action_type: DIRECTORY_CREATE\n    operation: {path: /home/tester/proj/d}\n  - action_type: COMMAND_EXECUTION\n    operation: {argv: [make], workdir: /home/tester/proj/d}\n",
		"action_type: FILE_DELETE\nintent_summary: x\noperation: {paths: [/home/tester/proj/*.log]}\n",
	} {
		d, doc, probs := LoadStamped("d.yaml", []byte(text), shortStamp)
		if probs != nil {
			t.Fatalf("%s: %v", text, probs)
		}
		if probs := Check(d, doc, testOptions); len(probs) > 0 {
			t.Errorf("%s: %v", text, probs)
		}
		full, err := doc.Root.YAML()
		if err != nil {
			t.Fatal(err)
		}
		// The full form expands to itself, whatever the policy.
		d2, _, probs := LoadStamped("full.yaml", full, Stamp{})
		if probs != nil {
			t.Fatalf("the expanded form does not load: %v\n%s", probs, full)
		}
		a, _ := json.Marshal(d)
		b, _ := json.Marshal(d2)
		if string(a) != string(b) {
			t.Errorf("the expanded form is another descriptor:\n%s\n%s", a, b)
		}
	}
}

// TestShortFormCompletes: an object the agent wrote in part is completed
// field by field (the network flag it wrote sets the other two), but the
// agent's effects and scope are never widened: a partial one is an error.
func TestShortFormCompletes(t *testing.T) {
	d, probs := loadShort(t, "action_type: COMMAND_EXECUTION\nintent_summary: x\nsandbox: {allow_network: true}\nresources: {max_memory_mb: 100}\noperation: {argv: [npm, ci], workdir: /home/tester/proj}\n")
	if len(probs) > 0 {
		t.Fatalf("problems: %v", probs)
	}
	if !d.Scope.Network.Required || !d.Effects.Network || d.Sandbox.MaxRuns != 1 || d.Resources.MaxMemoryMB != 100 || d.Resources.MaxCPUMs != 120000 {
		t.Errorf("not completed: %+v %+v %+v", d.Scope, d.Sandbox, d.Resources)
	}
	_, probs = loadShort(t, "action_type: COMMAND_EXECUTION\nintent_summary: x\neffects: {filesystem: {create: [/home/tester/proj/out]}, network: false, system_state_change: false}\noperation: {argv: [make], workdir: /home/tester/proj}\n")
	if want := "d.yaml:3:11: schema.missing-field: effects.filesystem.delete"; len(probs) == 0 || !strings.HasPrefix(probs[0], want) {
		t.Errorf("partial effects: %v, want %s…", probs, want)
	}
	_, probs = loadShort(t, "action_type: FILE_WRITE\nintent_summary: x\nscope: {filesystem: {paths: [/home/tester/proj]}}\noperation: {path: /home/tester/proj/a, content: x}\n")
	if want := "d.yaml:3:9: schema.missing-field: scope.filesystem.recursive"; len(probs) == 0 || !strings.HasPrefix(probs[0], want) {
		t.Errorf("partial scope: %v, want %s…", probs, want)
	}
}

// TestShortFormHomeFile: a file directly in a home directory is scoped to
// itself (no scope may take in a home), and a shell start-up file the
// scope names passes the rules: its plan is graded HIGH, for a person. An
// effect on one the scope does not name is still refused, and a problem
// in what act derived points at the operation the agent wrote.
func TestShortFormHomeFile(t *testing.T) {
	d, probs := loadShort(t, "action_type: FILE_WRITE\nintent_summary: Add an alias.\noperation:\n  path: /home/tester/.bashrc\n  edits: [{old: \"# end\", new: \"alias ll='ls -l'\\n# end\"}]\n")
	if len(probs) > 0 {
		t.Fatalf("problems: %v", probs)
	}
	if diff := cmp.Diff([]string{"/home/tester/.bashrc"}, d.Scope.Filesystem.Paths); diff != "" {
		t.Errorf("scope (-want +got):\n%s", diff)
	}
	_, probs = loadShort(t, "action_type: FILE_WRITE\nintent_summary: x\nscope: {filesystem: {paths: [/home/tester/proj], recursive: true}}\noperation:\n  path: /home/tester/proj/.envrc\n  content: x\n")
	if len(probs) > 0 {
		t.Fatalf("a project's .envrc: %v", probs)
	}
	_, probs = loadShort(t, "action_type: FILE_WRITE\nintent_summary: x\nscope: {filesystem: {paths: [/home/tester/.config], recursive: true}}\noperation:\n  path: /home/tester/.config/autostart/a.desktop\n  content: x\n")
	if want := "d.yaml:4:1: forbidden.persistence-outside-scope: effects.filesystem.create[0]"; len(probs) == 0 || !strings.HasPrefix(probs[0], want) {
		t.Errorf("autostart: %v, want %s…", probs, want)
	}
	_, probs = loadShort(t, "action_type: COMMAND_EXECUTION\nintent_summary: x\noperation: {argv: [ls], workdir: /home/tester}\n")
	if want := "d.yaml:3:1: forbidden.home-root: scope.filesystem.paths[0]"; len(probs) == 0 || !strings.HasPrefix(probs[0], want) {
		t.Errorf("a command in the home: %v, want %s…", probs, want)
	}
}

// TestPackageDev: a PACKAGE_INSTALL of development dependencies passes
// the rules, by dev: true or the manager's own flag among the packages
// (npm -D, --save-dev; go -tool); any other option is still refused, and
// pip, which has none, says so.
func TestPackageDev(t *testing.T) {
	pkg := func(op string) []string {
		_, probs := loadShort(t, "action_type: PACKAGE_INSTALL\nintent_summary: x\noperation: "+op+"\n")
		return probs
	}
	for _, op := range []string{
		"{manager: npm, packages: [-D, kleur], workdir: /home/tester/proj}",
		"{manager: npm, packages: [kleur, --save-dev], workdir: /home/tester/proj}",
		"{manager: npm, packages: [kleur], dev: true, workdir: /home/tester/proj}",
		"{manager: go, packages: [-tool, golang.org/x/tools/cmd/stringer], workdir: /home/tester/proj}",
	} {
		if probs := pkg(op); len(probs) > 0 {
			t.Errorf("%s: %v", op, probs)
		}
	}
	for op, rule := range map[string]string{
		"{manager: npm, packages: [--registry=http://x, kleur], workdir: /home/tester/proj}": "package.invalid-name",
		"{manager: npm, packages: [-D], workdir: /home/tester/proj}":                         "package.invalid-name",
		"{manager: pip, packages: [pytest], dev: true, workdir: /home/tester/proj}":          "package.dev-unsupported",
		"{manager: pip, packages: [-D, pytest], workdir: /home/tester/proj}":                 "package.invalid-name",
	} {
		if probs := pkg(op); len(probs) == 0 || !strings.Contains(strings.Join(probs, "\n"), ": "+rule+": ") {
			t.Errorf("%s: %v, want %s", op, probs, rule)
		}
	}
}
