package descriptors

import (
	"slices"
	"testing"
)

// TestSubcommands: the command lines a deny rule looks through (wrappers,
// shell scripts, find), quotes removed as the shell removes them.
func TestSubcommands(t *testing.T) {
	for _, c := range []struct {
		argv []string
		want [][]string // among the subcommands
		not  [][]string // not among them
	}{
		{argv: []string{"rm", "-rf", "x"}, want: [][]string{{"rm", "-rf", "x"}}},
		{argv: []string{"/bin/rm", "x"}, want: [][]string{{"/bin/rm", "x"}}},
		{argv: []string{"env", "-u", "X", "A=b", "rm", "x"}, want: [][]string{{"rm", "x"}}},
		{argv: []string{"/usr/bin/env", "--", "A=b", "rm", "x"}, want: [][]string{{"rm", "x"}}},
		{argv: []string{"env", "-S", "rm -f 'a b'", "c"}, want: [][]string{{"rm", "-f", "a b", "c"}}},
		{argv: []string{"nice", "-n", "5", "timeout", "-s", "KILL", "10s", "nohup", "command", "rm", "x"}, want: [][]string{{"rm", "x"}}},
		{argv: []string{"xargs", "-0", "-I", "{}", "rm", "{}"}, want: [][]string{{"rm", "{}"}}},
		{argv: []string{"sudo", "-u", "root", "rm", "x"}, want: [][]string{{"rm", "x"}}},
		{argv: []string{"busybox", "rm", "x"}, want: [][]string{{"rm", "x"}}},
		{argv: []string{"find", ".", "-name", "*.go", "-exec", "rm", "-f", "{}", ";"}, want: [][]string{{"rm", "-f", "{}"}}},
		{argv: []string{"find", ".", "-execdir", "/bin/rm", "{}", "+"}, want: [][]string{{"/bin/rm", "{}"}}},
		{argv: []string{"find", ".", "-name", "x", "-delete"}, want: [][]string{{"rm", "{}"}}},
		{argv: []string{"sh", "-c", "rm x"}, want: [][]string{{"rm", "x"}}},
		{argv: []string{"bash", "-o", "pipefail", "-ec", "cd d && rm -rf 'a b' 2>/dev/null; echo ok"}, want: [][]string{{"cd", "d"}, {"rm", "-rf", "a b"}, {"echo", "ok"}}},
		{argv: []string{"sh", "-c", `X=1 r"m" a; \rm b; r''m c; r$(true)m d`}, want: [][]string{{"rm", "a"}, {"rm", "b"}, {"rm", "c"}, {"rm", "d"}}},
		{argv: []string{"sh", "-c", `echo "$(rm a)" ` + "`rm b`" + ` <(rm c)`}, want: [][]string{{"rm", "a"}, {"rm", "b"}, {"rm", "c"}}},
		{argv: []string{"sh", "-c", "if true; then eval 'rm a'; fi; for f in *; do xargs rm; done"}, want: [][]string{{"rm", "a"}, {"rm"}}},
		{argv: []string{"sh", "-c", "sh -c \"env rm a\""}, want: [][]string{{"rm", "a"}}},
		{argv: []string{"sh", "-c", "cat <<EOF\nrm a\nEOF\nrm b"}, want: [][]string{{"cat"}, {"rm", "b"}}, not: [][]string{{"rm", "a"}}},
		{argv: []string{"sh", "-c", "echo rm a # rm b"}, not: [][]string{{"rm", "a"}, {"rm", "b"}}},
		{argv: []string{"command", "-v", "rm"}, not: [][]string{{"rm"}}},
		{argv: []string{"sh", "script.sh"}, not: [][]string{{"script.sh"}}},
		{argv: []string{"su", "-c", "rm a", "root"}, want: [][]string{{"rm", "a"}}},
		{argv: []string{"watch", "-n", "1", "rm", "a"}, want: [][]string{{"rm", "a"}}},
	} {
		got := Subcommands(c.argv)
		if len(got) == 0 || !slices.Equal(got[0], c.argv) {
			t.Errorf("Subcommands(%q)[0] = %q, want argv itself", c.argv, got)
		}
		for _, w := range c.want {
			if !slices.ContainsFunc(got, func(g []string) bool { return slices.Equal(g, w) }) {
				t.Errorf("Subcommands(%q) = %q, lacks %q", c.argv, got, w)
			}
		}
		for _, w := range c.not {
			if slices.ContainsFunc(got, func(g []string) bool { return slices.Equal(g, w) }) {
				t.Errorf("Subcommands(%q) = %q, has %q", c.argv, got, w)
			}
		}
	}
}

// TestSubcommandsBounded: a script nested without end, or one of very many
// commands, ends.
func TestSubcommandsBounded(t *testing.T) {
	s := "rm x"
	for range 50 {
		s = "sh -c " + `"` + s + `"`
	}
	Subcommands([]string{"sh", "-c", s})
	long := ""
	for range 5000 {
		long += "rm x;"
	}
	if n := len(Subcommands([]string{"sh", "-c", long})); n > maxSubcommands+1 {
		t.Errorf("%d subcommands, want at most %d", n, maxSubcommands+1)
	}
}
