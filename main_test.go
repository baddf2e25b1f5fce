package main

import (
	"bytes"
	"flag"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/rogpeppe/go-internal/testscript"

	"github.com/act-project/act/descriptors"
	"github.com/act-project/act/gate"
	"github.com/act-project/act/internal/outcome"
	"github.com/act-project/act/internal/problem"
	"github.com/act-project/act/plan"
	"github.com/act-project/act/rollback"
	"github.com/act-project/act/sandbox/isolate"
	"github.com/act-project/act/schema"
)

var update = flag.Bool("update", false, "rewrite the expected output in testdata/script")

func TestMain(m *testing.M) {
	flag.Parse()
	os.Exit(runWithTestCLI(m))
}

// scriptSetup is the environment of every test script: a HOME of its own,
// the state dir in the work dir, no policy but the default, no colour.
func scriptSetup(examples string) func(e *testscript.Env) error {
	return func(e *testscript.Env) error {
		home := filepath.Join(e.WorkDir, "home")
		if err := os.MkdirAll(home, 0o755); err != nil {
			return err
		}
		e.Setenv("HOME", home)
		// "~" in a policy is the password database's home, never $HOME:
		// the test CLI takes it from here instead (a script that sets HOME
		// changes only $HOME).
		e.Setenv("ACT_TEST_PASSWD_HOME", home)
		e.Setenv("ACT_HOME", filepath.Join(e.WorkDir, ".act"))
		e.Setenv("XDG_STATE_HOME", "")
		e.Setenv("ACT_POLICY", "")
		e.Setenv("NO_COLOR", "")
		e.Setenv("TERM", "dumb")
		e.Setenv("EXAMPLES", examples)
		return nil
	}
}

func TestScript(t *testing.T) {
	t.Parallel()
	// ACT_TEST_ROOT is the repository, for a run of this binary elsewhere
	// (asNobody runs it in a directory of its own).
	root := os.Getenv("ACT_TEST_ROOT")
	examples, err := filepath.Abs(filepath.Join(root, "examples"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { checkSeenExits(t) })
	testscript.Run(t, testscript.Params{
		Dir:                 filepath.Join(root, "testdata/script"),
		RequireExplicitExec: true,
		RequireUniqueNames:  true,
		UpdateScripts:       *update,
		Setup:               scriptSetup(examples),
		Condition: func(cond string) (bool, error) {
			switch cond {
			case "sandbox":
				// Whether commands can be isolated here; false fails closed
				// into a skip, and the script says what it needed.
				return isolate.Available() == nil, nil
			case "root":
				return os.Geteuid() == 0, nil
			}
			return false, fmt.Errorf("unknown condition %q", cond)
		},
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			"exitcode":  cmdExitcode,
			"subst":     cmdSubst,
			"planid":    cmdPlanid,
			"jsonok":    cmdJSONOK,
			"gocache":   cmdGocache,
			"httpserve": cmdHTTPServe,
		},
	})
}

// cmdExitcode runs a program and asserts its exact exit status, keeping its
// stdout and stderr for the commands that follow.
//
//	usage: exitcode N prog [args...]
func cmdExitcode(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 2 {
		ts.Fatalf("usage: exitcode N prog [args...]")
	}
	want, err := strconv.Atoi(args[0])
	if err != nil {
		ts.Fatalf("usage: exitcode N prog [args...]: %v", err)
	}
	err = ts.Exec(args[1], args[2:]...)
	got := 0
	if err != nil {
		ee, ok := err.(*exec.ExitError)
		if !ok {
			ts.Fatalf("exitcode: %v", err)
		}
		got = ee.ExitCode()
	}
	recordExit(args[1], args[2:], got)
	if got != want {
		ts.Fatalf("%s exited with status %d, want %d", args[1], got, want)
	}
}

// cmdHTTPServe starts an HTTP server on the host's 127.0.0.1 for the
// rest of the script, answering every request "served PATH", and sets VAR
// to its port: a host service that a command with the network reaches
// only through act's egress proxy, where the policy names 127.0.0.1.
//
//	usage: httpserve VAR
func cmdHTTPServe(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: httpserve VAR")
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "served %s\n", r.URL.Path)
	}))
	ts.Defer(srv.Close)
	ts.Setenv(args[0], strconv.Itoa(srv.Listener.Addr().(*net.TCPAddr).Port))
}

// cmdSubst expands $VAR and ${VAR} in files in place, so descriptors in an
// archive can name absolute paths under $WORK.
//
//	usage: subst file...
func cmdSubst(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) == 0 {
		ts.Fatalf("usage: subst file...")
	}
	for _, name := range args {
		data := ts.ReadFile(name)
		out := os.Expand(data, ts.Getenv)
		ts.Check(os.WriteFile(ts.MkAbs(name), []byte(out), 0o644))
	}
}

var planIDRE = regexp.MustCompile(`(?:Plan id: |"plan_id": ")([0-9a-f]{16})`)

// cmdPlanid sets an environment variable to the plan id printed on the
// last command's stdout.
//
//	usage: jsonok COMMAND
//
// jsonok checks the last command's stdout, one --json document, against
// the schema of COMMAND's output (act schema --output COMMAND).
func cmdJSONOK(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 1 {
		ts.Fatalf("usage: jsonok COMMAND")
	}
	err := schema.ValidateOutput(args[0], []byte(ts.ReadFile("stdout")))
	switch {
	case neg && err == nil:
		ts.Fatalf("the output is valid %s output", args[0])
	case !neg && err != nil:
		ts.Fatalf("the output is not valid %s output: %v", args[0], err)
	}
}

// usage: planid VAR
func cmdPlanid(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: planid VAR")
	}
	m := planIDRE.FindStringSubmatch(ts.ReadFile("stdout"))
	if m == nil {
		ts.Fatalf("planid: no plan id in stdout")
	}
	ts.Setenv(args[0], m[1])
}

// rulesDoc renders docs/rules.md from every rule registry: the descriptor
// checks (parse, schema, rules, policy) and the plan stage.
func rulesDoc() []byte {
	var b bytes.Buffer
	b.WriteString(`# Rule ids

<!-- Generated by "go test -run TestRulesDoc -update" from descriptors.Rules(), plan.Rules(), rollback.Rules() and gate.Rules(). Do not edit. -->

Every problem ` + "`act`" + ` reports carries one of these stable rule ids, with the
descriptor field path, ` + "`file:line:column`" + ` and one sentence.
Problems of the parse, schema and rule layers make the descriptor *invalid* (exit 3);
policy problems *block* it on this host (exit 4); a failed precondition stops a plan
(exit 5); a rejected dry run is exit 6; a conflict found by apply or rollback (a stale
plan, an action id already used, a rollback target changed) is exit 8.

| id | layer | exit | summary |
|---|---|---|---|
`)
	type row struct {
		id, summary string
		layer       problem.Layer
	}
	var rows []row
	for _, r := range descriptors.Rules() {
		rows = append(rows, row{r.ID, r.Summary, r.Layer()})
	}
	for _, r := range slices.Concat(plan.Rules(), rollback.Rules(), gate.Rules()) {
		rows = append(rows, row{r.ID, r.Summary, r.Layer})
	}
	sort.SliceStable(rows, func(i, j int) bool { return rows[i].layer < rows[j].layer })
	for _, r := range rows {
		fmt.Fprintf(&b, "| `%s` | %s | %d | %s |\n", r.id, r.layer, outcome.ForLayer(r.layer).Code, r.summary)
	}
	return b.Bytes()
}

// checkGenerated compares a generated document with the committed file
// name; with -update it rewrites the file first.
func checkGenerated(t *testing.T, name string, got []byte, how string) {
	t.Helper()
	if *update {
		if err := os.WriteFile(name, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s is out of date: run go test -run %s -update", name, how)
	}
}

// exitCodesDoc renders docs/exit-codes.md from the one table of outcomes.
func exitCodesDoc() []byte {
	var b bytes.Buffer
	b.WriteString(`# Exit codes and statuses

<!-- Generated by "go test -run TestExitCodesDoc -update" from internal/outcome. Do not edit. -->

Every act command exits with one of these codes. With ` + "`--json`" + ` it prints one
document whose ` + "`status`" + ` and ` + "`exit_code`" + ` are as below, and whose ` + "`errors[]`" + ` carry a
rule id: the problem's own (see [rules.md](rules.md)), or the rule given here
for an outcome that is not a problem of the descriptor.

| exit | status | rule | meaning |
|---|---|---|---|
`)
	rule := func(o outcome.Outcome) string {
		switch {
		case o.Code == 0, o.Code == outcome.CommandCode:
			return "—"
		case o.Rule == "":
			return "the problem's"
		}
		return "`" + o.Rule + "`"
	}
	for _, r := range outcome.Codes() {
		fmt.Fprintf(&b, "| %d | `%s` | %s | %s |\n", r.Code, r.Status, rule(r), r.Meaning)
	}
	b.WriteString(`
Some outcomes of a code have a status, or a rule, of their own:

| exit | status | rule | meaning |
|---|---|---|---|
`)
	for _, r := range outcome.Named() {
		fmt.Fprintf(&b, "| %d | `%s` | %s | %s |\n", r.Code, r.Status, rule(r), r.Meaning)
	}
	b.WriteString(`
Some commands end with a code of their own, or give a code a meaning of its own:

| exit | status | rule | meaning |
|---|---|---|---|
`)
	for _, r := range outcome.Own() {
		code, status := strconv.Itoa(r.Code), "`"+r.Status+"`"
		if r.Code == outcome.CommandCode {
			code, status = "the command's", "—"
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", code, status, rule(r), r.Meaning)
	}
	b.WriteString(`
Each command's help (` + "`act COMMAND --help`" + `) lists, under EXIT STATUS, the
codes that command can end with.
`)
	return b.Bytes()
}

// TestExitCodesDoc keeps docs/exit-codes.md in step with the table,
// and checks that the binary exits with each code the table names for the
// statuses it reports (a usage error, a not-found id).
func TestExitCodesDoc(t *testing.T) {
	checkGenerated(t, "docs/exit-codes.md", exitCodesDoc(), "TestExitCodesDoc")
	for i, r := range outcome.Codes() {
		if r.Code != i {
			t.Errorf("row %d has code %d: the table must list every code in order", i, r.Code)
		}
	}
}

// persistenceDoc renders docs/persistence.md from the one list of places
// that run code later.
func persistenceDoc() []byte {
	var b bytes.Buffer
	b.WriteString(`# Files that run code later

<!-- Generated by "go test -run TestPersistenceDoc -update" from descriptors.PersistenceTable(). Do not edit. -->

A file in one of these places makes something run later, outside the action
that wrote it and outside any review: the next shell, the next login, the
next ` + "`python3`" + `, the next ` + "`git commit`" + `. act keeps one list of them.

- **Refused**: a descriptor may not declare a create or modify effect on one
  (` + "`forbidden.persistence-outside-scope`" + `, exit 3) — these are the host's and the
  user's start-up — unless a scope path names that very file (as the short
  form scopes ` + "`~/.bashrc`" + `): the action then says what it is for, and its
  plan, graded HIGH, waits for a person under the default policy.
- **Asked about**: a plan whose real diff creates or changes one is graded
  HIGH by act itself ([risk.md](risk.md)), whatever risk the agent declared,
  so under the default policy a person must confirm it.

` + "`~/`" + ` is every home directory of the user; ` + "`**`" + ` any number of directories.

| kind | paths | act |
|---|---|---|
`)
	for _, e := range descriptors.PersistenceTable() {
		what := "asked about (HIGH)"
		if e.Refused {
			what = "refused as an effect; HIGH in a diff"
		}
		var ps []string
		for _, p := range e.Paths {
			ps = append(ps, "`"+p+"`")
		}
		fmt.Fprintf(&b, "| %s | %s | %s |\n", e.Kind, strings.Join(ps, ", "), what)
	}
	return b.Bytes()
}

// TestPersistenceDoc keeps docs/persistence.md in step with the list.
func TestPersistenceDoc(t *testing.T) {
	checkGenerated(t, "docs/persistence.md", persistenceDoc(), "TestPersistenceDoc")
}

// TestAutorunDoc keeps docs/autorun.md in step with gate.Mechanisms,
// and each mechanism cites its tool's documentation.
func TestAutorunDoc(t *testing.T) {
	checkGenerated(t, "docs/autorun.md", gate.AutorunDoc(), "TestAutorunDoc")
	for _, m := range gate.Mechanisms {
		if !strings.HasPrefix(m.Doc, "https://") || len(m.Paths) == 0 {
			t.Errorf("%s: a mechanism needs its documentation's https address and its paths", m.Tool)
		}
	}
}

// TestRulesDoc keeps docs/rules.md in step with the rule registries, and
// checks that no rule id is registered twice; -update rewrites the file.
func TestRulesDoc(t *testing.T) {
	seen := map[string]bool{}
	for _, r := range descriptors.Rules() {
		seen[r.ID] = true
	}
	for _, r := range slices.Concat(plan.Rules(), rollback.Rules(), gate.Rules()) {
		if seen[r.ID] {
			t.Errorf("rule id %s is registered twice", r.ID)
		}
		seen[r.ID] = true
	}
	const name = "docs/rules.md"
	got := rulesDoc()
	if *update {
		if err := os.WriteFile(name, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(string(want), string(got)); d != "" {
		t.Errorf("%s is stale; run go test -run TestRulesDoc -update (-file +generated):\n%s", name, d)
	}
}

// TestDeps enforces the dependency direction of STYLE.md: only cmd imports
// the CLI and styling libraries, only main imports cmd, and every import is
// on the allow-list below.
func TestDeps(t *testing.T) {
	out, err := exec.Command("go", "list", "-f", `{{.ImportPath}}: {{join .Imports " "}}`, "./...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	const mod = "github.com/act-project/act"
	// allowed maps a package (relative to the module) to the module-local and
	// third-party imports it may have; the standard library is always allowed.
	allowed := map[string][]string{
		"":                  {"cmd", "internal/prefault", "internal/startheap", "sandbox/isolate"},
		"cmd":               {"audit", "descriptors", "diff", "doors", "doors/hook", "doors/mcpserver", "doors/report", "doors/run", "gate", "internal/agentsetup", "internal/applypatch", "internal/atomicfile", "internal/lifecycle", "internal/outcome", "internal/pathglob", "internal/sshsig", "internal/document", "internal/problem", "internal/state", "policy", "review", "schema", "golang.org/x/sys/unix", "github.com/urfave/cli/v2", "github.com/charmbracelet/lipgloss", "internal/timings", "internal/startheap", "github.com/cpuguy83/go-md2man/v2/md2man"},
		"doors":             {"descriptors", "diff", "gate", "internal/outcome", "internal/problem", "policy", "review", "golang.org/x/sys/unix"},
		"doors/report":      {"descriptors", "diff", "gate", "internal/outcome", "internal/problem", "policy", "internal/timings"},
		"doors/mcpserver":   {"diff", "doors", "doors/report", "gate", "internal/document", "internal/lifecycle", "internal/outcome", "internal/problem", "internal/redact", "internal/state", "policy", "review", "schema", "github.com/modelcontextprotocol/go-sdk/mcp", "github.com/modelcontextprotocol/go-sdk/jsonrpc", "github.com/google/jsonschema-go/jsonschema", "internal/timings"},
		"doors/hook":        {"descriptors", "diff", "doors", "gate", "internal/applypatch", "internal/atomicfile", "internal/lifecycle", "internal/pathglob", "internal/state", "policy", "review", "internal/agentsetup", "internal/claudeedit", "internal/timings"},
		"doors/run":         {"doors", "gate", "internal/pathglob"},
		"internal/treesnap": {"internal/digest"},
		// Tests only: the test CLI and helpers of the packages that drive
		// act as a program (the root's tests and agents').
		"internal/clitest":      {"internal/cgrouptest", "internal/treesnap"},
		"agents":                {},
		"promotion":             {},
		"internal/witnesstest":  {"golang.org/x/crypto/ssh", "golang.org/x/crypto/ssh/agent"},
		"internal/cgrouptest":   {"internal/cgroupfs"},
		"internal/cgroupfs":     {},
		"internal/sshsig":       {"golang.org/x/crypto/ssh", "golang.org/x/crypto/ssh/agent"},
		"descriptors":           {"internal/credstore", "internal/document", "internal/problem", "internal/pathglob", "schema", "internal/timings"},
		"policy":                {"audit", "descriptors", "internal/document", "internal/problem", "internal/pathglob", "internal/state", "schema", "go.yaml.in/yaml/v3", "golang.org/x/sys/unix"},
		"bench/internal/runner": {},
		"schema":                {"cuelang.org/go/cue", "cuelang.org/go/pkg/list", "cuelang.org/go/pkg/strings", "cuelang.org/go/cue/errors", "cuelang.org/go/cue/ast", "cuelang.org/go/cue/token", "cuelang.org/go/encoding/jsonschema", "cuelang.org/go/encoding/json"},
		"internal/document":     {"internal/problem", "go.yaml.in/yaml/v3"},
		"internal/problem":      {},
		"internal/outcome":      {"internal/problem"},
		"internal/atomicfile":   {},
		"internal/digest":       {"golang.org/x/sys/unix"},
		"internal/egress":       {},
		"internal/credstore":    {"internal/pathglob", "internal/redact"},
		"internal/claudeedit":   {},
		"internal/parallel":     {},
		"sandbox/isolate":       {"internal/cgroupfs", "internal/rmtree", "golang.org/x/sys/unix", "internal/timings"},
		"internal/rmtree":       {},
		"internal/timings":      {"golang.org/x/sys/unix"},
		"internal/redact":       {},
		"internal/overlay":      {"golang.org/x/sys/unix"},
		"internal/configedit":   {"go.yaml.in/yaml/v3"},
		"internal/agentsetup":   {"internal/atomicfile", "internal/configedit", "internal/outcome", "github.com/pelletier/go-toml/v2", "github.com/pelletier/go-toml/v2/unstable"},
		"sandbox":               {"descriptors", "internal/overlay", "internal/rmtree", "golang.org/x/sys/unix"},
		"diff":                  {"internal/digest", "internal/overlay", "internal/parallel", "internal/pathglob", "github.com/aymanbagabas/go-udiff", "github.com/aymanbagabas/go-udiff/lcs", "golang.org/x/sys/unix"},
		"plan":                  {"descriptors", "diff", "internal/atomicfile", "internal/digest", "internal/configedit", "internal/egress", "internal/lifecycle", "internal/state", "internal/parallel", "internal/pathglob", "internal/problem", "internal/redact", "policy", "sandbox", "sandbox/isolate", "golang.org/x/sys/unix", "internal/timings", "internal/credstore", "golang.org/x/mod/module", "golang.org/x/mod/sumdb/dirhash"},
		"internal/pathglob":     {},
		"internal/applypatch":   {},
		"internal/lifecycle":    {},
		"internal/startheap":    {},
		"internal/prefault":     {},
		"internal/state":        {"github.com/gofrs/flock"},
		"audit":                 {"internal/atomicfile", "internal/redact", "github.com/secure-systems-lab/go-securesystemslib/dsse", "golang.org/x/mod/sumdb/note", "golang.org/x/mod/sumdb/tlog", "golang.org/x/sys/unix", "internal/timings"},
		"gate":                  {"audit", "descriptors", "diff", "internal/atomicfile", "internal/document", "internal/digest", "internal/lifecycle", "internal/outcome", "internal/pathglob", "internal/problem", "internal/rmtree", "internal/sshsig", "internal/state", "plan", "policy", "rollback", "sandbox", "internal/timings"},
		"review":                {"descriptors", "diff", "internal/lifecycle", "internal/pathglob", "plan"},
		"rollback":              {"diff", "plan", "internal/timings", "internal/atomicfile", "internal/digest", "internal/lifecycle", "internal/outcome", "internal/parallel", "internal/pathglob", "internal/problem", "internal/state", "golang.org/x/sys/unix"},

		// Rows 8 and 9's in-process timer.
		"bench/internal/auditbench": {"audit", "golang.org/x/sys/unix"},
	}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		pkg, imports, _ := strings.Cut(line, ":")
		rel := strings.TrimPrefix(strings.TrimPrefix(pkg, mod), "/")
		allow, ok := allowed[rel]
		if !ok {
			t.Errorf("package %s is not in TestDeps' allow-list: add it with its imports", pkg)
			continue
		}
		for _, imp := range strings.Fields(imports) {
			if !strings.Contains(strings.SplitN(imp, "/", 2)[0], ".") {
				continue // standard library
			}
			name := strings.TrimPrefix(strings.TrimPrefix(imp, mod), "/")
			if !slices.Contains(allow, name) {
				t.Errorf("%s imports %s, which the dependency rules do not allow", pkg, imp)
			}
			if (strings.Contains(imp, "urfave/cli") || strings.Contains(imp, "lipgloss")) && rel != "cmd" {
				t.Errorf("%s imports %s: only cmd may", pkg, imp)
			}
		}
	}
}
