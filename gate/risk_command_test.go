package gate

// A command is graded by what its dry run did (docs/risk.md, "Commands"):
// one that had no network and whose every change is LOW is LOW, as a
// FILE_WRITE of that diff would be. Each attack below is a command that
// would apply itself unasked if act graded it LOW; each runs in the real
// sandbox through the gate, as act plan does, as whoever runs the tests
// and, when that is root, again as nobody (TestRiskCommandAttacksNobody).

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/act-project/act/audit"
	"github.com/act-project/act/descriptors"
	"github.com/act-project/act/internal/lifecycle"
	"github.com/act-project/act/policy"
	"github.com/act-project/act/sandbox/isolate"
)

// commandBody is a COMMAND_EXECUTION of sh -c script in proj, which may
// create, modify or delete anything under it (as act run declares), with
// the network where network says so.
func commandBody(script string, network bool) string {
	return `action_type: COMMAND_EXECUTION
effects:
  filesystem: {create: ["$P/**"], modify: ["$P/**"], delete: ["$P/**"]}
  network: ` + boolText(network) + `
  system_state_change: false
operation: {argv: [sh, -c, ` + quoteYAML(script) + `], workdir: $P}
`
}

// quoteYAML is s as a double-quoted YAML string.
func quoteYAML(s string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`).Replace(s) + `"`
}

// needSandbox skips t where the sandbox runs no command.
func needSandbox(t *testing.T) {
	t.Helper()
	if err := isolate.Available(); err != nil {
		t.Skipf("the sandbox is unavailable: %v", err)
	}
}

// commandPlan plans a command of script in w, skipping the test where
// the sandbox cannot run it (an ordinary user without a memory cgroup).
func (w *world) commandPlan(id, script string, network bool) *Entry {
	w.t.Helper()
	p, err := w.tryPlan(spec{id: id, body: commandBody(script, network), network: network})
	if errors.Is(err, isolate.ErrUnavailable) {
		w.t.Skipf("the sandbox runs no command here: %v", err)
	}
	if err != nil {
		w.t.Fatalf("plan: %v", err)
	}
	return w.load(p.ID)
}

// TestRiskCommandAttacks: a command that writes an executable, a home's
// dot-file, a git hook, a file a tool runs on its own, or that has the
// network, is not LOW; its plan waits for a person.
func TestRiskCommandAttacks(t *testing.T) {
	needSandbox(t)
	w := gitWorld(t)
	// A home inside the tree, so that the command's scope (the tree) may
	// hold its dot-files: the static rules know $HOME's.
	home := filepath.Join(w.root, "home")
	if err := os.MkdirAll(filepath.Join(home, ".config"), 0o755); err != nil {
		t.Fatal(err)
	}
	w.g.EnvHome = home
	for i, c := range []struct {
		name, script string
		network      bool
		want         descriptors.RiskLevel
		why          string
	}{
		{"an executable", "printf '#!/bin/sh\\necho hi\\n' > run.sh && chmod +x run.sh", false, descriptors.RiskHigh, "new executable"},
		{"a git hook", "printf 'echo pwned\\n' > .git/hooks/pre-commit", false, descriptors.RiskHigh, ""},
		{"an autorun file", "mkdir -p .vscode && printf '{}' > .vscode/tasks.json", false, descriptors.RiskHigh, "runs on its own"},
		{"an env auto-loader", "printf 'export X=1\\n' > .envrc", false, descriptors.RiskHigh, ""},
		{"the network", "printf 'x\\n' > fetched.txt", true, descriptors.RiskMedium, "have the network"},
	} {
		w.run(c.name, func(t *testing.T) {
			if c.network {
				w.g.Policy.Network.SandboxNetwork = true
				defer func() { w.g.Policy.Network.SandboxNetwork = false }()
			}
			id := "7c000000-0000-4000-8000-0000000001" + string(rune('0'+i/10)) + string(rune('0'+i%10))
			e := w.commandPlan(id, c.script, c.network)
			w.wantQueued(e, c.want, c.why)
		})
	}
	w.run("a home's dot-file", func(t *testing.T) {
		// The scope is the home's dot-directory, inside a workspace.
		old := w.proj
		w.proj = filepath.Join(home, ".config")
		defer func() { w.proj = old }()
		e := w.commandPlan("7c000000-0000-4000-8000-000000000199", "printf 'x = 1\\n' > app.toml", false)
		w.wantQueued(e, descriptors.RiskHigh, "dot-file")
	})
}

// wantQueued checks that the plan of e is graded at least want (for the
// reason why) and that submitting it queues it for a person.
func (w *world) wantQueued(e *Entry, want descriptors.RiskLevel, why string) {
	w.t.Helper()
	p := e.Plan
	if len(p.Changes) == 0 {
		w.t.Fatalf("the command changed nothing: the attack did not run")
	}
	if got := descriptors.RiskLevel(p.RiskAssessed); got.Rank() < want.Rank() {
		w.t.Errorf("assessed %s, want at least %s (%q)", got, want, p.RiskReasons)
	}
	if why != "" && !strings.Contains(strings.Join(p.RiskReasons, "\n"), why) {
		w.t.Errorf("reasons %q do not say %q", p.RiskReasons, why)
	}
	dec, err := w.g.Submit(context.Background(), e, Door{})
	if err != nil {
		w.t.Fatalf("submit: %v", err)
	}
	if dec.Verdict != Queued {
		w.t.Errorf("verdict %v, want queued", dec.Verdict)
	}
	w.wantState(p.ID, lifecycle.Pending)
}

// TestRiskCommandByDiff: a command whose dry run had no network and whose
// every change is LOW is LOW and promoted with no one asked, as a
// FILE_WRITE of that diff would be; under risk.commands: always_medium it
// waits for a person. A command that changes nothing is never queued.
func TestRiskCommandByDiff(t *testing.T) {
	needSandbox(t)
	w := gitWorld(t)
	w.run("a tracked file", func(t *testing.T) {
		e := w.commandPlan("7c000000-0000-4000-8000-000000000201", "printf 'test:\\n\\tgo vet ./...\\n' > Makefile", false)
		if got := descriptors.RiskLevel(e.Plan.RiskAssessed); got != descriptors.RiskLow {
			t.Fatalf("assessed %s, want LOW (%q)", got, e.Plan.RiskReasons)
		}
		dec, err := w.g.Submit(context.Background(), e, Door{})
		if err != nil || dec.Verdict != Promoted {
			t.Fatalf("submit: %v, %v; want promoted", dec, err)
		}
		w.wantFile("proj/Makefile", "test:\n\tgo vet ./...\n")
	})
	w.run("always_medium", func(t *testing.T) {
		w.g.Policy.Risk.Commands = policy.CommandsAlwaysMedium
		defer func() { w.g.Policy.Risk.Commands = policy.CommandsByDiff }()
		e := w.commandPlan("7c000000-0000-4000-8000-000000000202", "printf 'new\\n' > notes.txt", false)
		w.wantQueued(e, descriptors.RiskMedium, "always_medium")
		w.wantFile("proj/notes.txt", "<none>")
	})
}

// TestRiskCommandAttacksNobody runs the attacks as an ordinary user.
func TestRiskCommandAttacksNobody(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("not root: the attacks ran as this user already")
	}
	for _, name := range []string{"TestRiskCommandAttacks", "TestRiskCommandByDiff"} {
		asNobodyGate(t, name)
	}
}

// TestNothingToApprove: a run that changes nothing is not a plan to
// approve: whatever its mode (always_medium, a descriptor asking for a
// person), on every door, it is not queued — it is closed as applied,
// its record is "ran" — and so the plans that change nothing do not
// fill max_pending.
func TestNothingToApprove(t *testing.T) {
	needSandbox(t)
	w := gitWorld(t)
	w.g.Policy.Risk.Commands = policy.CommandsAlwaysMedium
	w.g.Policy.MaxPending = 1
	// One plan waits already: the limit is reached.
	waiting := w.plan(spec{id: "7c000000-0000-4000-8000-000000000300", body: deleteBody("Makefile")})
	if _, err := w.g.Submit(context.Background(), waiting, Door{}); err != nil {
		t.Fatal(err)
	}
	w.wantState(waiting.Plan.ID, lifecycle.Pending)
	for i, door := range []Door{{}, {Later: true}, {Prompt: true}} {
		id := "7c000000-0000-4000-8000-00000000031" + string(rune('0'+i))
		w.run("door "+string(rune('0'+i)), func(t *testing.T) {
			e := w.commandPlan(id, "ls >/dev/null; git status --short", false)
			if len(e.Plan.Changes) != 0 {
				t.Fatalf("the command changed %v", e.Plan.Changes)
			}
			before := w.events(id)
			dec, err := w.g.Submit(context.Background(), e, door)
			if err != nil {
				t.Fatalf("submit: %v", err)
			}
			// Promoted now on every door: a door that promotes an
			// allowed plan by a command of its own later (Later: the
			// hook's Bash) has nothing to promote later.
			if dec.Verdict != Promoted || len(dec.Why) != 0 {
				t.Errorf("verdict %v (why %q), want %v", dec.Verdict, dec.Why, Promoted)
			}
			w.wantState(e.Plan.ID, lifecycle.Applied)
			w.wantNewEvents(id, before, audit.EventRan)
		})
	}
	w.run("a write of what the file holds, FILE_WRITE: confirm", func(t *testing.T) {
		const id = "7c000000-0000-4000-8000-000000000320"
		w.g.Policy.Modes.Types[descriptors.FileWrite] = policy.Confirm
		defer delete(w.g.Policy.Modes.Types, descriptors.FileWrite)
		e := w.plan(spec{id: id, body: writeBody("Makefile", "test:\n\tgo test ./...\n", false)})
		dec, err := w.g.Submit(context.Background(), e, Door{})
		if err != nil || dec.Verdict != Promoted {
			t.Fatalf("submit: %v, %v; want promoted", dec, err)
		}
		found, err := audit.Find(w.g.Home.Audit(), id, "")
		if err != nil || len(found) == 0 {
			t.Fatalf("the audit log: %v", err)
		}
		last := found[len(found)-1]
		shown, err := audit.Show(w.g.Home.Audit(), int64(last.Seq), audit.VerifyOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if why := shown.Statement.Predicate.Reason; last.Event != audit.EventRan || !strings.Contains(why, "would have needed a person") {
			t.Errorf("the record is %s %q", last.Event, why)
		}
	})
	// A plan that changes something still waits, and the limit holds.
	e := w.commandPlan("7c000000-0000-4000-8000-000000000330", "printf 'x\\n' > notes.txt", false)
	if _, err := w.g.Submit(context.Background(), e, Door{}); err == nil || !strings.Contains(err.Error(), "already wait") {
		t.Errorf("a plan that changes something, over max_pending: %v", err)
	}
}

// TestExpectAsApply: the mode act validate shows before a dry run
// (Expect) is the one apply decides after it, where the dry run finds
// what the descriptor says: a write outside every workspace, an
// executable, a delete, a command by its diff or under always_medium.
func TestExpectAsApply(t *testing.T) {
	w := gitWorld(t)
	for i, c := range []struct {
		name    string
		body    string
		setup   func() func()
		command bool
		want    policy.Mode
	}{
		{name: "a plain write in a workspace", body: fileWrite("notes.txt", []byte("x\n"), true, ""), want: policy.Allow},
		{name: "a write outside every workspace", body: fileWrite("notes2.txt", []byte("x\n"), true, ""), want: policy.Confirm, setup: func() func() {
			old := w.g.Policy.Workspaces
			w.g.Policy.Workspaces = []string{}
			return func() { w.g.Policy.Workspaces = old }
		}},
		{name: "an executable", body: fileWrite("run.sh", []byte("echo\n"), true, "0755"), want: policy.Confirm},
		{name: "a delete", body: deleteBody("Makefile"), want: policy.Confirm},
		{name: "a command, by its diff", body: commandBody("printf 'x\\n' > cmd.txt", false), command: true, want: policy.Allow},
		{name: "a command, always_medium", body: commandBody("printf 'x\\n' > cmd2.txt", false), command: true, want: policy.Confirm, setup: func() func() {
			w.g.Policy.Risk.Commands = policy.CommandsAlwaysMedium
			return func() { w.g.Policy.Risk.Commands = policy.CommandsByDiff }
		}},
	} {
		w.run(c.name, func(t *testing.T) {
			if c.command {
				needSandbox(t)
			}
			if c.setup != nil {
				defer c.setup()()
			}
			s := spec{id: "7c000000-0000-4000-8000-0000000004" + string(rune('0'+i/10)) + string(rune('0'+i%10)), body: c.body}
			d, _ := w.descriptor(s)
			before := w.g.Expect(d)
			p, err := w.tryPlan(s)
			if errors.Is(err, isolate.ErrUnavailable) {
				t.Skipf("the sandbox runs no command here: %v", err)
			}
			if err != nil {
				t.Fatalf("plan: %v", err)
			}
			adm, err := w.g.Admit(w.load(p.ID))
			if err != nil {
				t.Fatalf("admit: %v", err)
			}
			if before.Mode != c.want || adm.Decision.Mode != c.want {
				t.Errorf("before the dry run %s (%s), at apply %s (%s); want %s", before.Mode, before.Reason, adm.Decision.Mode, adm.Decision.Reason, c.want)
			}
		})
	}
	// What a move amounts to: a FILE_MOVE and a FILE_WRITE, before the
	// dry run as after it — not a FILE_DELETE.
	w.run("a move", func(t *testing.T) {
		w.mkfile("from.txt", "moving\n")
		move := "action_type: FILE_MOVE\neffects:\n  filesystem: {create: [$P/to.txt], modify: [], delete: [$P/from.txt]}\n  network: false\n  system_state_change: false\noperation: {from: $P/from.txt, to: $P/to.txt}\n"
		for typ, want := range map[descriptors.ActionType]policy.Mode{descriptors.FileDelete: policy.Confirm, descriptors.FileWrite: policy.Deny} {
			w.g.Policy.Modes.Types[typ] = policy.Deny
			d, _ := w.descriptor(spec{id: "7c000000-0000-4000-8000-000000000498", body: move})
			if got := w.g.Expect(d); got.Mode != want {
				t.Errorf("a move under %s: deny: %s (%s), want %s", typ, got.Mode, got.Reason, want)
			}
			delete(w.g.Policy.Modes.Types, typ)
		}
	})
	w.run("confirmation required", func(t *testing.T) {
		d, _ := w.descriptor(spec{id: "7c000000-0000-4000-8000-000000000499", body: fileWrite("notes3.txt", []byte("x\n"), true, "")})
		d.Confirmation.Required, d.Confirmation.Reason = true, "look first"
		if got := w.g.Expect(d); got.Mode != policy.Allow || !strings.Contains(got.Reason, "apply waits for a person all the same") {
			t.Errorf("Expect: %s, %q", got.Mode, got.Reason)
		}
	})
}
