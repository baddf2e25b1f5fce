package main

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/act-project/act/cmd"
)

var update = flag.Bool("update", false, "rewrite the expected output in testdata/script")

// testNow is the fixed clock of the test CLI: ten minutes after the
// examples' created_at. A script may move it with ACT_TEST_NOW (RFC 3339);
// that variable is read by this test binary only, never by the shipped one.
var testNow = time.Date(2026, 11, 22, 0, 10, 0, 0, time.UTC)

func TestMain(m *testing.M) {
	testscript.Main(m, map[string]func(){
		"act": func() {
			env := cmd.DefaultEnv(cmd.OSStdio())
			now := testNow
			if s := os.Getenv("ACT_TEST_NOW"); s != "" {
				t, err := time.Parse(time.RFC3339, s)
				if err != nil {
					fmt.Fprintln(os.Stderr, "ACT_TEST_NOW:", err)
					os.Exit(1)
				}
				now = t
			}
			env.Now = func() time.Time { return now }
			os.Exit(cmd.MainEnv(os.Args, env))
		},
	})
}

func TestScript(t *testing.T) {
	examples, err := filepath.Abs("examples")
	if err != nil {
		t.Fatal(err)
	}
	testscript.Run(t, testscript.Params{
		Dir:                 "testdata/script",
		RequireExplicitExec: true,
		RequireUniqueNames:  true,
		UpdateScripts:       *update,
		Setup: func(e *testscript.Env) error {
			home := filepath.Join(e.WorkDir, "home")
			if err := os.MkdirAll(home, 0o755); err != nil {
				return err
			}
			e.Setenv("HOME", home)
			e.Setenv("ACT_HOME", filepath.Join(e.WorkDir, ".act"))
			e.Setenv("XDG_STATE_HOME", "")
			e.Setenv("ACT_POLICY", "")
			e.Setenv("NO_COLOR", "")
			e.Setenv("TERM", "dumb")
			e.Setenv("EXAMPLES", examples)
			return nil
		},
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			"exitcode": cmdExitcode,
			"subst":    cmdSubst,
			"planid":   cmdPlanid,
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
	if got != want {
		ts.Fatalf("%s exited with status %d, want %d", args[1], got, want)
	}
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
//	usage: planid VAR
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
		"":                      {"cmd"},
		"cmd":                   {"descriptors", "diff", "plan", "internal/document", "internal/problem", "policy", "schema", "github.com/urfave/cli/v2", "github.com/charmbracelet/lipgloss", "github.com/muesli/termenv"},
		"descriptors":           {"internal/document", "internal/problem", "internal/pathglob", "schema"},
		"policy":                {"descriptors", "internal/document", "internal/problem", "internal/pathglob", "schema", "go.yaml.in/yaml/v3"},
		"bench/internal/runner": {},
		"schema":                {"cuelang.org/go/cue", "cuelang.org/go/cue/cuecontext", "cuelang.org/go/cue/errors", "cuelang.org/go/cue/ast", "cuelang.org/go/cue/token", "cuelang.org/go/encoding/jsonschema", "cuelang.org/go/encoding/json"},
		"internal/document":     {"internal/problem", "go.yaml.in/yaml/v3"},
		"internal/problem":      {},
		"internal/atomicfile":   {},
		"internal/configedit":   {"go.yaml.in/yaml/v3"},
		"sandbox":               {"descriptors", "golang.org/x/sys/unix"},
		"diff":                  {"github.com/aymanbagabas/go-udiff"},
		"plan":                  {"descriptors", "diff", "internal/atomicfile", "internal/configedit", "internal/pathglob", "internal/problem", "policy", "sandbox", "golang.org/x/sys/unix"},
		"internal/pathglob":     {},
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
