package agentsetup

import (
	"slices"
	"strings"
	"testing"
	"time"
)

func TestSplit(t *testing.T) {
	for line, want := range map[string][]string{
		`/usr/bin/act hook codex`:             {"/usr/bin/act", "hook", "codex"},
		`'/a b/act' hook  claude-code`:        {"/a b/act", "hook", "claude-code"},
		`"/a \"b\"/act" x\ y`:                 {`/a "b"/act`, "x y"},
		`'it'\''s'`:                           {"it's"},
		`A=1 act hook codex --workspace=/w`:   {"A=1", "act", "hook", "codex", "--workspace=/w"},
		`act hook codex; rm -rf /`:            nil,
		`act hook codex --workspace $HOME/p`:  nil,
		`act hook codex --workspace ~/p`:      nil,
		`act hook codex | tee log`:            nil,
		`act hook codex --workspace "$(pwd)"`: nil,
		`act hook codex # a comment`:          nil,
		`act hook codex --workspace /p*`:      nil,
		`'unterminated`:                       nil,
		``:                                    nil,
	} {
		got, ok := split(line)
		if want == nil {
			if ok {
				t.Errorf("split(%q) = %q, want it refused", line, got)
			}
			continue
		}
		if !ok || !slices.Equal(got, want) {
			t.Errorf("split(%q) = %q, %v; want %q", line, got, ok, want)
		}
	}
}

// FuzzQuote: what join writes, split reads back as the same words.
func FuzzQuote(f *testing.F) {
	for _, s := range []string{"", "a", "a b", "it's", `"\$x`, "/p/act", "tab\there", "new\nline"} {
		f.Add(s, "x")
	}
	f.Fuzz(func(t *testing.T, a, b string) {
		if strings.ContainsRune(a+b, 0) {
			return
		}
		argv := []string{a, b}
		got, ok := split(join(argv))
		if !ok || !slices.Equal(got, argv) {
			t.Fatalf("split(join(%q)) = %q, %v", argv, got, ok)
		}
	})
}

func TestParseActCommand(t *testing.T) {
	c, ok := parseActCommand(`ACT_X=1 '/opt/my act/act' --home /s --json hook codex --workspace /w --timeout=1m30s --extra`)
	if !ok {
		t.Fatal("not read as act's hook")
	}
	if c.Program != "/opt/my act/act" || c.Agent != "codex" || c.Workspace != "/w" || c.Timeout != 90*time.Second ||
		!slices.Equal(c.Globals, []string{"--home", "/s", "--json"}) || !slices.Equal(c.Env, []string{"ACT_X=1"}) || !slices.Equal(c.Rest, []string{"--extra"}) {
		t.Errorf("parsed %+v", c)
	}
	if c, _ := parseActCommand("act hook claude-code --timeout soon"); c == nil || c.BadTimeout != "soon" {
		t.Errorf("a bad --timeout: %+v", c)
	}
	if c, ok := parseActCommand(`act hook codex --workspace ~/p && echo`); !ok || !c.Opaque || c.Agent != "codex" {
		t.Errorf("a line with shell expansions: %+v, %v; want act's, opaque", c, ok)
	}
	for _, line := range []string{"act gc", "echo hook codex", "act", "act hook", "python3 hook.py", "echo $(act hook codex)"} {
		if c, ok := parseActCommand(line); ok {
			t.Errorf("parseActCommand(%q) = %+v, want not act's hook", line, c)
		}
	}
	line := commandLine("/p q/act", []string{"--home", "/s"}, Codex, "/w s", 50*time.Second)
	if line != `'/p q/act' --home /s hook codex --workspace '/w s' --timeout 50s` {
		t.Errorf("commandLine = %s", line)
	}
	if c, ok := parseActCommand(line); !ok || c.Workspace != "/w s" || c.Timeout != 50*time.Second {
		t.Errorf("commandLine does not read back: %+v", c)
	}
}
