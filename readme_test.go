package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"
)

// A tutorialStep is one "$ command" of the README's tutorial and the
// output the README shows for it.
type tutorialStep struct {
	cmd  string
	want []string
}

// tutorialSteps reads the console blocks between the tutorial markers of
// README.md.
func tutorialSteps(t *testing.T) []tutorialStep {
	b, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	text := string(b)
	start := strings.Index(text, "<!-- tutorial -->")
	end := strings.Index(text, "<!-- /tutorial -->")
	if start < 0 || end < start {
		t.Fatal("README.md has no <!-- tutorial --> … <!-- /tutorial --> section")
	}
	var steps []tutorialStep
	in := false
	for _, line := range strings.Split(text[start:end], "\n") {
		switch {
		case strings.HasPrefix(line, "```console"):
			in = true
		case strings.HasPrefix(line, "```"):
			in = false
		case in && strings.HasPrefix(line, "$ "):
			steps = append(steps, tutorialStep{cmd: strings.TrimPrefix(line, "$ ")})
		case in && len(steps) > 0:
			steps[len(steps)-1].want = append(steps[len(steps)-1].want, line)
		}
	}
	if len(steps) < 10 {
		t.Fatalf("the tutorial has %d steps", len(steps))
	}
	return steps
}

// TestREADMETutorial runs the README's tutorial, every command in one
// shell as a reader would type them, with the test CLI as act and the
// tutorial's directory under the test's own HOME, and checks each output
// line against the README's (<…> matches anything on the line).
func TestREADMETutorial(t *testing.T) {
	steps := tutorialSteps(t)
	var sh strings.Builder
	for i, s := range steps {
		cmd := strings.ReplaceAll(s.cmd, "/tmp/act-tutorial", "$HOME/act-tutorial")
		fmt.Fprintf(&sh, "echo '@@step %d'\n{ %s\n} 2>&1\n", i, cmd)
	}
	dir := t.TempDir()
	script := "exec bash tutorial.sh\ntutorialcheck\n-- tutorial.sh --\n" + sh.String()
	if err := os.WriteFile(filepath.Join(dir, "tutorial.txtar"), []byte(script), 0o644); err != nil {
		t.Fatal(err)
	}
	examples, _ := filepath.Abs("examples")
	testscript.Run(t, testscript.Params{
		Dir:                 dir,
		RequireExplicitExec: true,
		// The state dir is the user's default (HOME is the passwd entry's
		// home here), as for a reader: the lines act hands out name no
		// --home (docs/state.md).
		Setup: func(e *testscript.Env) error {
			err := scriptSetup(examples)(e)
			e.Setenv("ACT_HOME", "")
			return err
		},
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			"tutorialcheck": func(ts *testscript.TestScript, neg bool, args []string) {
				home := ts.Getenv("HOME")
				got := map[int][]string{}
				n := -1
				for _, line := range strings.Split(strings.TrimSuffix(ts.ReadFile("stdout"), "\n"), "\n") {
					if _, err := fmt.Sscanf(line, "@@step %d", &n); err == nil && strings.HasPrefix(line, "@@step ") {
						got[n] = nil
						continue
					}
					got[n] = append(got[n], strings.ReplaceAll(line, home+"/act-tutorial", "/tmp/act-tutorial"))
				}
				for i, s := range steps {
					if !linesMatch(s.want, got[i]) {
						ts.Fatalf("README tutorial step %q printed:\n%s\nthe README shows:\n%s",
							s.cmd, strings.Join(got[i], "\n"), strings.Join(s.want, "\n"))
					}
				}
			},
		},
	})
}

// linesMatch reports whether got matches want line by line, where <…> in
// a line of want matches any text.
func linesMatch(want, got []string) bool {
	for len(want) > 0 && want[len(want)-1] == "" {
		want = want[:len(want)-1]
	}
	for len(got) > 0 && got[len(got)-1] == "" {
		got = got[:len(got)-1]
	}
	if len(want) != len(got) {
		return false
	}
	for i := range want {
		parts := strings.Split(want[i], "<…>")
		for j := range parts {
			parts[j] = regexp.QuoteMeta(parts[j])
		}
		if !regexp.MustCompile("^" + strings.Join(parts, ".+?") + "$").MatchString(got[i]) {
			return false
		}
	}
	return true
}

// TestREADMEInstall runs the README's install lines as a reader would,
// into a GOPATH of the test's own, and checks that act is then on the
// PATH: the tutorial that follows needs it there.
func TestREADMEInstall(t *testing.T) {
	if testing.Short() {
		t.Skip("builds act (-short)")
	}
	t.Parallel()
	b, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	text := string(b)
	start := strings.Index(text, "<!-- install -->")
	end := strings.Index(text, "<!-- /install -->")
	if start < 0 || end < start {
		t.Fatal("README.md has no <!-- install --> … <!-- /install --> section")
	}
	var lines []string
	for _, l := range strings.Split(text[start:end], "\n") {
		if l != "" && !strings.HasPrefix(l, "```") && !strings.HasPrefix(l, "<!--") {
			lines = append(lines, l)
		}
	}
	if len(lines) == 0 || lines[len(lines)-1] != "act --version" {
		t.Fatalf("the install section does not end with act --version: %q", lines)
	}
	modcache, err := exec.Command("go", "env", "GOMODCACHE").Output()
	if err != nil {
		t.Fatal(err)
	}
	gopath := t.TempDir()
	cmd := exec.Command("bash", "-euc", strings.Join(lines, "\n"))
	// A PATH without any act: only what the lines install is found.
	cmd.Env = append(os.Environ(), "GOPATH="+gopath, "GOMODCACHE="+strings.TrimSpace(string(modcache)),
		"GOBIN=", "PATH="+filepath.Dir(goTool(t))+":/usr/bin:/bin")
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "act version ") {
		t.Fatalf("the README's install lines: %v\n%s", err, out)
	}
	if _, err := os.Stat(filepath.Join(gopath, "bin", "act")); err != nil {
		t.Errorf("act is not where the README says: %v", err)
	}
}

// goTool is the go command that runs the tests.
func goTool(t *testing.T) string {
	if p, err := exec.LookPath("go"); err == nil {
		return p
	}
	return filepath.Join(runtime.GOROOT(), "bin", "go")
}
