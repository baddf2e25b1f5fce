package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/act-project/act/internal/clitest"

	"github.com/act-project/act/sandbox/isolate"
)

// hookStep is what a recorded PreToolUse call of testdata/hook/session
// must get: one of the decisions ("" is no output: the tool passes
// through), and, when act applied it in the hook, "applied" in the reason.
type hookStep struct {
	decisions []string
	applied   bool
	// reason, if set, must match the decision's reason.
	reason *regexp.Regexp
	check  func(t *testing.T, proj string)
}

// TestHookSession replays a recorded Claude Code session (testdata/hook/session,
// in order) against a small Go module, applying each decision as Claude Code
// would (allow: the tool runs, with updatedInput; ask: a person says yes and
// it runs; deny: nothing), then checks the tree, act audit verify, and that
// rolling back every applied action, newest first, restores the tree byte for
// byte, modes too.
func TestHookSession(t *testing.T) {
	t.Parallel()
	if err := isolate.Available(); err != nil {
		t.Skipf("commands cannot be isolated here: %v", err)
	}
	for _, tool := range []string{"go", "gofmt", "git"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s is not installed", tool)
		}
	}
	act, err := exec.LookPath("act") // the tests' act, as TestMain installs it
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	home, state := filepath.Join(dir, "home"), filepath.Join(dir, "state")
	proj := filepath.Join(home, "proj")
	pol := filepath.Join(dir, "policy.yaml")
	files := map[string]string{
		"go.mod":       "module example.com/calc\n\ngo 1.21\n",
		"calc.go":      "package calc\n\n// Add returns a plus b.\nfunc Add(a, b int) int {   return a + b }\n",
		"calc_test.go": "package calc\n\nimport \"testing\"\n\nfunc TestAdd(t *testing.T) {\n\tif Add(2, 3) != 5 {\n\t\tt.Fatal(\"Add(2, 3) != 5\")\n\t}\n}\n",
		"README.md":    "# calc\n\nTODO: more. TODO\n",
		"a.txt":        "banana\n",
		"run.sh":       "#!/bin/sh\necho run\n",
		// Under the policy's sensitive paths: an Edit of it asks a person.
		"config/settings.txt": "mode = dev\n",
		// npm's project configuration, the only one npm reads in the
		// sandbox (which masks the home and passes no npm_config_*): a
		// registry on the loopback, which the sandbox does not have, and
		// no retries, so that npm install fails at once, as it would after
		// a minute of retries against the real registry.
		".npmrc": "registry=http://127.0.0.1:9/\nfetch-retries=0\n",
	}
	for name, data := range files {
		write(t, filepath.Join(proj, name), data)
	}
	// No command rule: go test, gofmt -w and git commit are graded by
	// their diffs (docs/risk.md, "Commands"), LOW, and need no one.
	write(t, pol, `risk: {sensitive_paths: ["`+proj+`/config/**"]}
`)
	env := []string{"HOME=" + home, "ACT_HOME=" + state, "ACT_POLICY=" + pol,
		"ACT_TEST_NOW=" + time.Now().UTC().Truncate(time.Second).Format(time.RFC3339),
		"GOTOOLCHAIN=local", "GOFLAGS=", "GIT_CONFIG_NOSYSTEM=1", "NO_COLOR=1", "TERM=dumb",
		// The recorded session was Claude Code's terminal UI: attended, a
		// person answers its prompt.
		"CLAUDE_CODE_SESSION_ATTENDED=1"}
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if k == "PATH" || k == "TMPDIR" || k == "LANG" {
			env = append(env, kv)
		}
	}
	run := func(stdin []byte, name string, args ...string) (stdout, stderr string, err error) {
		c := exec.Command(name, args...)
		c.Dir, c.Env = proj, env
		c.Stdin = bytes.NewReader(stdin)
		var o, e bytes.Buffer
		c.Stdout, c.Stderr = &o, &e
		err = c.Run()
		return o.String(), e.String(), err
	}
	must := func(name string, args ...string) string {
		t.Helper()
		out, errOut, err := run(nil, name, args...)
		if err != nil {
			t.Fatalf("%s %s: %v\n%s%s", name, strings.Join(args, " "), err, out, errOut)
		}
		return out
	}
	must("git", "init", "-q")
	must("git", "config", "user.name", "Hook Session")
	must("git", "config", "user.email", "hook@example.com")
	must("git", "add", "-A")
	must("git", "commit", "-q", "-m", "start")
	// The sandbox's go test uses the build cache of the password
	// database's home (the user running these tests), read-only under a
	// throwaway layer (docs/sandbox-filesystem.md, "Caches"): warm, it
	// built these tests. The go test after the session, unsandboxed with
	// HOME's empty cache, uses a cache of its own, seeded from the go
	// command's; without a seed, a go test here fills it.
	gocache := filepath.Join(dir, "gocache")
	goTest := func() string {
		t.Helper()
		env = append(env, "GOCACHE="+gocache)
		defer func() { env = env[:len(env)-1] }()
		return must("go", "test", "./...")
	}
	if seedGoCache(t, proj, env, gocache) == 0 {
		goTest()
	}
	before := hashTree(t, proj)

	has := func(name, want string) func(t *testing.T, proj string) {
		return func(t *testing.T, proj string) {
			t.Helper()
			got, err := os.ReadFile(filepath.Join(proj, name))
			if err != nil || !strings.Contains(string(got), want) {
				t.Errorf("%s = %q (%v), want it to hold %q", name, got, err, want)
			}
		}
	}
	gone := func(name string) func(t *testing.T, proj string) {
		return func(t *testing.T, proj string) {
			t.Helper()
			if _, err := os.Lstat(filepath.Join(proj, name)); err == nil {
				t.Errorf("%s exists", name)
			}
		}
	}
	same := func(t *testing.T, proj string) {}
	steps := map[string]hookStep{
		"01_read_readme":     {decisions: []string{""}, check: same},
		"02_write_new":       {decisions: []string{"deny"}, applied: true, check: has("sub.go", "func Sub")},
		"03_edit":            {decisions: []string{"deny"}, applied: true, check: has("calc.go", "return b + a")},
		"04_multiedit":       {decisions: []string{"deny"}, applied: true, check: has("README.md", "# calc, a calculator\n\ndone: more. done\n")},
		"05_glob":            {decisions: []string{""}, check: same},
		"06_bash_go_test":    {decisions: []string{"allow"}, check: same},
		"07_bash_gofmt":      {decisions: []string{"allow"}, check: has("calc.go", "func Add(a, b int) int { return b + a }")},
		"08_bash_git_commit": {decisions: []string{"allow"}, check: func(t *testing.T, proj string) { checkCommits(t, run, 2) }},
		"09_bash_rm_readme":  {decisions: []string{"ask"}, check: gone("README.md")},
		"10_bash_mv":         {decisions: []string{"ask"}, check: has("b.txt", "banana")},
		// npm without the network: it fails in the sandbox at once (the
		// project's .npmrc: a registry on the loopback, no retries), and
		// the deny shows the model why (where npm is installed).
		"11_bash_npm": {decisions: []string{"deny"}, check: gone("node_modules"), reason: npmFailed()},
		// ~/.bashrc is scoped to itself and graded HIGH (a shell
		// start-up file): a person is asked (here says yes, and Claude
		// Code's own Write writes it).
		"12_write_bashrc": {decisions: []string{"ask"}, check: func(t *testing.T, proj string) { has(".bashrc", "/tmp/evil")(t, home) }},
		// curl | sh: the sandbox has no network, so curl fetches nothing
		// and sh runs nothing: a run that changes nothing, allowed and
		// recorded by the hook — what runs instead prints curl's error,
		// kept from the dry run; nothing ran outside the sandbox.
		"13_bash_curl_sh":       {decisions: []string{"allow"}, check: same},
		"14_grep":               {decisions: []string{""}, check: same},
		"15_edit_absent":        {decisions: []string{"deny"}, check: has("calc.go", "return b + a")},
		"16_write_overwrite":    {decisions: []string{"deny"}, applied: true, check: has("calc_test.go", "func TestSub")},
		"17_bash_go_test_again": {decisions: []string{"allow"}, check: same},
		"18_bash_echo":          {decisions: []string{"allow"}, check: has("out.txt", "hi\n")},
		"19_edit_replace_all":   {decisions: []string{"deny"}, applied: true, check: has("b.txt", "bAnAnA\n")},
		// A Write into a directory that does not exist yet: act makes it,
		// as Claude Code's Write does, and the rollback removes it.
		"20_write_subdir":  {decisions: []string{"deny"}, applied: true, check: has("docs/notes.md", "# Notes\n")},
		"21_bash_failing":  {decisions: []string{"deny"}, check: same},
		"22_write_outside": {decisions: []string{"deny"}, check: func(t *testing.T, proj string) { gone("act-hook-session")(t, "/etc") }},
		"23_bash_chmod": {decisions: []string{"ask"}, check: func(t *testing.T, proj string) {
			if fi, err := os.Stat(filepath.Join(proj, "run.sh")); err != nil || fi.Mode()&0o100 == 0 {
				t.Errorf("run.sh is not executable: %v %v", fi, err)
			}
		}},
		"24_edit_outside": {decisions: []string{"deny"}, check: func(t *testing.T, proj string) { gone(".profile")(t, home) }},
		// A person allows an Edit at the prompt: Claude Code's tool makes
		// it, and the PostToolUse hook records it, so the rollback below
		// undoes it too.
		"25_edit_sensitive": {decisions: []string{"ask"}, check: has("config/settings.txt", "mode = prod\n")},
	}
	recorded, err := filepath.Glob("testdata/hook/session/*.json")
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(recorded)
	if len(recorded) < 20 || len(recorded) != len(steps) {
		t.Fatalf("%d recorded calls for %d steps", len(recorded), len(steps))
	}
	// The actions applied, in the session's order, from the hook's reasons
	// and act apply's "act rollback ID" lines.
	var actions []string
	replayed := 0 // replaced Bash calls whose output was checked
	for _, file := range recorded {
		name := strings.TrimSuffix(filepath.Base(file), ".json")
		step, ok := steps[name]
		if !ok {
			t.Fatalf("%s: no step", file)
		}
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		input := []byte(os.Expand(string(data), func(k string) string {
			switch k {
			case "PROJ":
				return proj
			case "HOME":
				return home
			}
			return "$" + k
		}))
		var in struct {
			ToolName  string          `json:"tool_name"`
			ToolInput json.RawMessage `json:"tool_input"`
		}
		if err := json.Unmarshal(input, &in); err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		// Claude Code blocks the call when the hook exits 2: "block".
		out, errOut, err := run(input, act, "hook", "claude-code", "--workspace", proj, "--timeout", "110s")
		blocked := false
		if err != nil {
			if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 2 || !slices.Contains(step.decisions, "block") {
				t.Fatalf("%s: act hook claude-code: %v\n%s", name, err, errOut)
			}
			blocked = true
			t.Logf("%s: blocked: %s", name, strings.TrimSpace(errOut))
		}
		var dec struct {
			Out struct {
				Decision string                     `json:"permissionDecision"`
				Reason   string                     `json:"permissionDecisionReason"`
				Updated  map[string]json.RawMessage `json:"updatedInput"`
			} `json:"hookSpecificOutput"`
		}
		if out != "" {
			if err := json.Unmarshal([]byte(out), &dec); err != nil {
				t.Fatalf("%s: the decision is not JSON: %v\n%s", name, err, out)
			}
		}
		d := dec.Out.Decision
		if blocked {
			d = "block"
		}
		t.Logf("%s: %s %s", name, or(d, "(no output)"), firstLine(dec.Out.Reason))
		if !slices.Contains(step.decisions, d) {
			t.Fatalf("%s: decision %q, want one of %q\n%s", name, d, step.decisions, out)
		}
		if step.reason != nil && !step.reason.MatchString(dec.Out.Reason) {
			t.Errorf("%s: the reason does not match %q:\n%s", name, step.reason, dec.Out.Reason)
		}
		if got := strings.Contains(dec.Out.Reason, "act applied this"); got != step.applied {
			t.Errorf("%s: applied by act = %v, want %v: %s", name, got, step.applied, dec.Out.Reason)
		}
		if step.applied && !rollbackID.MatchString(dec.Out.Reason) {
			t.Errorf("%s: the reason names no rollback: %s", name, dec.Out.Reason)
		}
		actions = appendActions(actions, dec.Out.Reason)
		if d == "allow" || d == "ask" { // ask: a person says yes
			toolInput := in.ToolInput
			if dec.Out.Updated != nil {
				if toolInput, err = json.Marshal(dec.Out.Updated); err != nil {
					t.Fatal(err)
				}
			}
			if err := runTool(in.ToolName, toolInput, func(command string) (string, string, error) {
				o, e, err := run(nil, "sh", "-c", command)
				actions = appendActions(actions, e) // act apply --as-command's last line
				// The agent sees what the command printed in the sandbox.
				// Its plan: the replacement's (act apply --as-command), or,
				// for a run that changed nothing, the reason's (what
				// replaces the call prints its output).
				m := asCommandPlan.FindStringSubmatch(command)
				if m == nil {
					m = quietPlan.FindStringSubmatch(dec.Out.Reason)
				}
				if m != nil && err == nil {
					var shown struct {
						Data struct {
							Plan struct {
								Commands []struct{ Stdout string } `json:"commands"`
							} `json:"plan"`
						} `json:"data"`
					}
					if jerr := json.Unmarshal([]byte(must(act, "--json", "show", m[1])), &shown); jerr != nil || len(shown.Data.Plan.Commands) == 0 {
						t.Fatalf("%s: act show %s: %v", name, m[1], jerr)
					}
					if want := shown.Data.Plan.Commands[0].Stdout; o != want {
						t.Errorf("%s: the replaced command printed %q, the command in the sandbox %q", name, o, want)
					}
					if o != "" {
						replayed++
					}
				}
				return o, e, err
			}); err != nil {
				t.Fatalf("%s: the tool: %v", name, err)
			}
			// The tool ran: Claude Code runs the PostToolUse hooks.
			if in.ToolName != "Bash" {
				post := bytes.Replace(input, []byte(`"PreToolUse"`), []byte(`"PostToolUse"`), 1)
				out, errOut, err := run(post, act, "hook", "claude-code", "--workspace", proj)
				if err != nil {
					t.Fatalf("%s: the PostToolUse hook: %v\n%s", name, err, errOut)
				}
				if d == "ask" != strings.Contains(out, `"additionalContext":"act recorded this`) {
					t.Errorf("%s: the PostToolUse hook answered %q", name, out)
				}
				actions = appendActions(actions, out)
			}
		}
		step.check(t, proj)
		if t.Failed() {
			t.FailNow()
		}
	}
	if replayed == 0 {
		t.Error("no replaced Bash call printed the output of its command")
	}
	if !strings.Contains(goTest(), "ok") {
		t.Error("go test ./... does not pass on the tree after the session")
	}
	if _, err := os.Stat(filepath.Join(proj, "README.md")); err == nil {
		t.Error("README.md exists after the session")
	}
	must(act, "audit", "verify")

	if fmt.Sprint(hashTree(t, proj)) == fmt.Sprint(before) {
		t.Fatal("the session changed nothing")
	}
	// Write, Edit and MultiEdit applied by the hook, Bash allowed (go test
	// twice, gofmt, git, curl | sh, echo) and asked (rm, mv, chmod).
	if len(actions) < 10 {
		t.Fatalf("%d applied actions in the session, want at least 10: %q", len(actions), actions)
	}
	// Undone newest first.
	for i := len(actions) - 1; i >= 0; i-- {
		must(act, "rollback", actions[i])
	}
	if got := hashTree(t, proj); fmt.Sprint(got) != fmt.Sprint(before) {
		for k, v := range got {
			if before[k] != v {
				t.Errorf("after rollback %s = %s, before the session %s", k, v, before[k])
			}
		}
		for k, v := range before {
			if _, ok := got[k]; !ok {
				t.Errorf("after rollback %s is missing (before: %s)", k, v)
			}
		}
	}
	must(act, "audit", "verify")
}

// runTool runs a tool call as Claude Code's tool would: Write writes the
// file, Edit and MultiEdit replace exact strings, Bash runs sh -c.
func runTool(tool string, input json.RawMessage, sh func(string) (string, string, error)) error {
	var in struct {
		FilePath  string `json:"file_path"`
		Content   string `json:"content"`
		OldString string `json:"old_string"`
		NewString string `json:"new_string"`
		All       bool   `json:"replace_all"`
		Edits     []struct {
			OldString string `json:"old_string"`
			NewString string `json:"new_string"`
			All       bool   `json:"replace_all"`
		} `json:"edits"`
		Command string `json:"command"`
	}
	if err := json.Unmarshal(input, &in); err != nil {
		return err
	}
	switch tool {
	case "Write":
		if err := os.MkdirAll(filepath.Dir(in.FilePath), 0o755); err != nil {
			return err
		}
		return os.WriteFile(in.FilePath, []byte(in.Content), 0o644)
	case "Edit", "MultiEdit":
		if tool == "Edit" {
			in.Edits = append(in.Edits, struct {
				OldString string `json:"old_string"`
				NewString string `json:"new_string"`
				All       bool   `json:"replace_all"`
			}{in.OldString, in.NewString, in.All})
		}
		data, err := os.ReadFile(in.FilePath)
		if err != nil {
			return err
		}
		s := string(data)
		for _, e := range in.Edits {
			if !strings.Contains(s, e.OldString) {
				return fmt.Errorf("%s: %q is not in the file", tool, e.OldString)
			}
			n := 1
			if e.All {
				n = -1
			}
			s = strings.Replace(s, e.OldString, e.NewString, n)
		}
		return os.WriteFile(in.FilePath, []byte(s), 0o644)
	case "Bash":
		out, errOut, err := sh(in.Command)
		if err != nil {
			return fmt.Errorf("sh -c %q: %v\n%s%s", in.Command, err, out, errOut)
		}
		return nil
	}
	return nil // Read, Glob, Grep: nothing changes
}

// checkCommits checks that the project's git history has n commits.
func checkCommits(t *testing.T, run func([]byte, string, ...string) (string, string, error), n int) {
	t.Helper()
	out, errOut, err := run(nil, "git", "rev-list", "--count", "HEAD")
	if err != nil || strings.TrimSpace(out) != fmt.Sprint(n) {
		t.Errorf("git rev-list --count HEAD = %q (%v %s), want %d", out, err, errOut, n)
	}
}

// hashTree is clitest.HashTree.
func hashTree(t *testing.T, root string) map[string]string { return clitest.HashTree(t, root) }

func or(s, alt string) string {
	if s == "" {
		return alt
	}
	return s
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return s
}

// write writes data to name, making its directory (clitest.Write).
func write(t *testing.T, name, data string) { clitest.Write(t, name, data) }

// asCommandPlan finds the plan id in the command the hook put in place of
// a Bash command.
var quietPlan = regexp.MustCompile(`^act dry-ran this Bash as plan ([0-9a-f]{16}); it changed nothing`)

var asCommandPlan = regexp.MustCompile(`act(?: --home \S+)? apply --as-command ([0-9a-f]{16})`)

// rollbackID finds the action id in act's "act rollback ID" (clitest.RollbackID).
var rollbackID = clitest.RollbackID

// appendActions is clitest.AppendActions.
func appendActions(ids []string, text string) []string { return clitest.AppendActions(ids, text) }

// npmFailed matches the reason of a deny of npm install that failed in
// the sandbox: npm's error, where npm is installed.
func npmFailed() *regexp.Regexp {
	re := `(?s)^act ran this command in its sandbox and it exited with status [1-9][0-9]*; nothing was changed\.`
	if _, err := exec.LookPath("npm"); err == nil {
		re += `.*npm error`
	}
	return regexp.MustCompile(re)
}

// TestHookHomeFileNobody runs the hook_claude_code_home testscript as an
// ordinary user: a Write of ~/.bashrc is scoped to the file itself,
// HIGH, denied and queued under claude -p, written by a person's act
// apply --confirm and restored by act rollback, whoever runs act
// (docs/agents.md).
func TestHookHomeFileNobody(t *testing.T) {
	root, err := filepath.Abs(".")
	must(t, err)
	asNobody(t, "TestScript$/^hook_claude_code_home$", "ACT_TEST_ROOT="+root)
}
