package hook

import (
	"testing"

	"github.com/act-project/act/internal/agentsetup"
)

// Claude Code's Bash deny rules, applied to the model's command as
// Claude Code documents its matching, and more finely where act cannot
// tell (fail closed).
func TestClaudeDenies(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		rule, command string
		denied        bool
	}{
		{"Bash", "ls", true},
		{"Bash(*)", "ls", true},
		{"Read(./.env)", "cat .env", false},
		{"Bash(rm:*)", "rm -rf build", true},
		{"Bash(rm:*)", "rm", true},
		{"Bash(rm:*)", "rmdir x", false},
		{"Bash(rm *)", "rm", true},
		{"Bash(rm *)", "rm -f x", true},
		{"Bash(rm *)", "rmdir x", false},
		{"Bash(ls*)", "lsof", true},
		{"Bash(git * main)", "git push origin main", true},
		{"Bash(git * main)", "git push origin dev", false},
		{"Bash(touch g)", "touch g", true},
		{"Bash(touch g)", "touch gg", false},
		// compound commands: each simple command
		{"Bash(rm:*)", "cd sub && rm -rf x", true},
		{"Bash(rm:*)", "ls; rm x", true},
		{"Bash(rm:*)", "ls | rm x", true},
		{"Bash(rm:*)", "false || rm x", true},
		{"Bash(rm:*)", "sleep 1 & rm x", true},
		{"Bash(rm:*)", "ls\nrm x", true},
		{"Bash(rm:*)", "echo $(rm x)", true},
		{"Bash(rm:*)", "echo \"$(rm x)\"", true},
		{"Bash(rm:*)", "echo `rm x`", true},
		{"Bash(rm:*)", "(cd sub; rm x)", true},
		{"Bash(rm:*)", "{ rm x; }", true},
		{"Bash(rm:*)", "echo 'rm x'", false},
		{"Bash(rm:*)", "echo \"rm x\"", false},
		// assignments, wrappers, redirections
		{"Bash(rm:*)", "FOO=1 rm x", true},
		{"Bash(rm:*)", "timeout 5 rm x", true},
		{"Bash(rm:*)", "timeout -s KILL 5 rm x", true},
		{"Bash(rm:*)", "nice -n 10 nohup rm x", true},
		{"Bash(rm:*)", "env A=b rm x", true},
		{"Bash(touch g)", "touch g > /dev/null 2>&1", true},
		{"Bash(touch g)", "touch  g", true},
		{"Bash(curl * | sh)", "curl https://x | sh", true},
	} {
		_, got := claudeDenies([]agentsetup.ClaudeRule{{Rule: c.rule, File: "settings.json"}}, c.command)
		if got != c.denied {
			t.Errorf("%s on %q: denied %v, want %v", c.rule, c.command, got, c.denied)
		}
	}
}
