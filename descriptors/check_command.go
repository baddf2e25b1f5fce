package descriptors

// Command rules, for COMMAND_EXECUTION argv and verification commands.
//
// argv runs without a shell, but a command can still start one, or wrap
// another command: act looks at every command word it can see statically —
// argv[0], the command a wrapper such as env, nice or timeout runs, and the
// first word of each simple command in a `sh -c` script — and rejects:
//
//   - background execution (forbidden.background-execution): nohup, setsid,
//     disown, daemon, start-stop-daemon, systemd-run, at, batch, crontab,
//     screen, tmux and the like, a `&` that ends a shell command, or a lone
//     "&" at the end of argv (there is no shell to put anything in the
//     background; the intent is plain);
//   - host access (forbidden.host-access): privilege escalation (sudo, su,
//     doas, pkexec, runuser, setpriv), leaving the sandbox's namespaces
//     (nsenter, chroot), and the host's kernel, mount and service managers
//     (mount, umount, modprobe, insmod, rmmod, sysctl, systemctl, service,
//     reboot, shutdown, docker, podman and the like).
//
// This is a static net for plain mistakes and plain intent; the sandbox's
// own PID namespace is what actually ends every process left behind.

import (
	"path"
	"strings"
)

var backgroundCommands = setOf(
	"nohup", "setsid", "disown", "daemon", "daemonize", "start-stop-daemon",
	"systemd-run", "at", "batch", "crontab", "screen", "tmux", "dtach", "abduco",
	"bg",
)

var hostCommands = setOf(
	"sudo", "su", "doas", "pkexec", "runuser", "setpriv", "nsenter", "chroot",
	"mount", "umount", "modprobe", "insmod", "rmmod", "sysctl", "kexec",
	"systemctl", "service", "initctl", "loginctl", "machinectl", "init", "telinit",
	"reboot", "shutdown", "poweroff", "halt", "docker", "podman",
)

// wrappers run the command that follows their options: for each, the
// options that take a separate argument and how many positional arguments
// stand before the command (taskset's mask, flock's lock file).
var wrappers = map[string]struct {
	argOpts     map[string]bool
	positionals int
}{
	"env":      {argOpts: setOf("-u", "--unset", "-C", "--chdir")},
	"nice":     {argOpts: setOf("-n", "--adjustment")},
	"ionice":   {argOpts: setOf("-c", "--class", "-n", "--classdata", "-p", "--pid", "-P", "--pgid", "-u", "--uid")},
	"timeout":  {argOpts: setOf("-s", "--signal", "-k", "--kill-after")},
	"stdbuf":   {argOpts: setOf("-i", "-o", "-e")},
	"time":     {argOpts: setOf("-f", "--format", "-o", "--output")},
	"command":  {},
	"exec":     {argOpts: setOf("-a")},
	"xargs":    {argOpts: setOf("-I", "-n", "-P", "-d", "-E", "-s", "-L", "-a", "--arg-file", "--delimiter", "--max-args", "--max-procs")},
	"chrt":     {argOpts: setOf("-T", "-P", "-D")},
	"taskset":  {positionals: 1},
	"unbuffer": {},
	"flock":    {argOpts: setOf("-w", "--timeout", "-E", "--conflict-exit-code"), positionals: 1},
}

var shells = setOf("sh", "bash", "dash", "zsh", "ksh", "mksh", "ash", "fish", "busybox")

func setOf(names ...string) map[string]bool {
	m := make(map[string]bool, len(names))
	for _, n := range names {
		m[n] = true
	}
	return m
}

// checkArgv checks one command line at field path.
func (c *checker) checkArgv(field []string, argv []string) {
	if len(argv) == 0 || strings.TrimSpace(argv[0]) == "" {
		c.add("command.empty-program", field, "the command has no program name: argv[0] is empty")
		return
	}
	if len(argv) > 1 && argv[len(argv)-1] == "&" {
		c.add("forbidden.background-execution", append(field, idx(len(argv)-1)),
			"argv ends with \"&\", asking to run %q in the background", argv[0])
	}
	for _, w := range commandWords(argv, 0) {
		name := path.Base(w.word)
		el := append(field[:len(field):len(field)], idx(w.arg))
		switch {
		case backgroundCommands[name]:
			c.add("forbidden.background-execution", el,
				"%q runs a command in the background or later, outside the action", w.word)
		case hostCommands[name]:
			c.add("forbidden.host-access", el,
				"%q asks for access to the host outside the sandbox", w.word)
		case w.background:
			c.add("forbidden.background-execution", el,
				"the shell script puts a command in the background with \"&\"")
		}
	}
}

// A commandWord is a word act sees in command position: in argv[arg], or in
// the shell script argv[arg]. background marks a script that uses "&".
type commandWord struct {
	word       string
	arg        int
	background bool
}

// commandWords returns the command words of argv[i:], following wrappers
// and `sh -c` scripts.
func commandWords(argv []string, i int) []commandWord {
	if i >= len(argv) {
		return nil
	}
	out := []commandWord{{word: argv[i], arg: i}}
	name := path.Base(argv[i])
	switch {
	case name == "env" && i+2 < len(argv) && (argv[i+1] == "-S" || argv[i+1] == "--split-string"):
		// env -S "cmd args": a command line split on blanks.
		cmd := strings.Fields(argv[i+2])
		for _, w := range commandWords(append(cmd, argv[i+3:]...), 0) {
			out = append(out, commandWord{word: w.word, arg: i + 2})
		}
	case hasWrapper(name):
		w := wrappers[name]
		j, pos := i+1, w.positionals
		for j < len(argv) {
			a := argv[j]
			switch {
			case w.argOpts[a]:
				j += 2
				continue
			case wrapperArg(a):
				j++
				continue
			case pos > 0:
				pos--
				j++
				continue
			}
			break
		}
		out = append(out, commandWords(argv, j)...)
	case shells[name]:
		for j := i + 1; j+1 < len(argv); j++ {
			a := argv[j]
			if name == "busybox" && j == i+1 && shells[a] {
				continue // busybox sh -c
			}
			if !strings.HasPrefix(a, "-") {
				break
			}
			if strings.HasPrefix(a, "--") || !strings.Contains(a[1:], "c") {
				continue
			}
			cmds, bg := scriptCommands(argv[j+1])
			for _, cmd := range cmds {
				for _, w := range commandWords(cmd, 0) {
					out = append(out, commandWord{word: w.word, arg: j + 1})
				}
			}
			if bg {
				out = append(out, commandWord{word: "&", arg: j + 1, background: true})
			}
			break
		}
	}
	return out
}

func hasWrapper(name string) bool {
	_, ok := wrappers[name]
	return ok
}

// wrapperArg reports whether a is an option or option value of a wrapper
// rather than the command it runs: a flag, an environment assignment, or a
// number or duration (nice -n 10, timeout 5s).
func wrapperArg(a string) bool {
	if strings.HasPrefix(a, "-") || strings.Contains(a, "=") {
		return true
	}
	a = strings.TrimRight(a, "smhd")
	if a == "" {
		return false
	}
	for _, r := range a {
		if (r < '0' || r > '9') && r != '.' {
			return false
		}
	}
	return true
}

// scriptCommands returns the simple commands of a shell script, as words
// from the command name on, and whether the script puts something in the
// background. It is a rough reading: quoted text is blanked out first, and
// commands are split at the shell's separators.
func scriptCommands(script string) ([][]string, bool) {
	s := blankQuotes(script)
	bg := false
	for i := 0; i < len(s); i++ {
		if s[i] != '&' {
			continue
		}
		prev, next := byte(' '), byte(' ')
		if i > 0 {
			prev = s[i-1]
		}
		if i+1 < len(s) {
			next = s[i+1]
		}
		if prev == '&' || next == '&' || prev == '>' || prev == '<' || next == '>' || prev == '|' {
			continue
		}
		bg = true
	}
	seps := func(r rune) bool {
		return strings.ContainsRune(";&|(){}`\n", r)
	}
	var cmds [][]string
	for _, seg := range strings.FieldsFunc(strings.ReplaceAll(s, "$(", "("), seps) {
		words := strings.Fields(seg)
		for len(words) > 0 && scriptPrefix(words[0]) {
			words = words[1:]
		}
		if len(words) > 0 {
			cmds = append(cmds, words)
		}
	}
	return cmds, bg
}

// scriptPrefix reports whether w stands before a command name: an
// assignment or a reserved word.
func scriptPrefix(w string) bool {
	switch w {
	case "!", "if", "then", "else", "elif", "do", "while", "until":
		return true
	}
	return strings.Contains(w, "=") && !strings.HasPrefix(w, "=")
}

// blankQuotes replaces the text inside single and double quotes with "x",
// so that separators in quoted text are not read as the shell's.
func blankQuotes(s string) string {
	b := []byte(s)
	var quote byte
	for i := 0; i < len(b); i++ {
		switch {
		case quote == 0 && (b[i] == '\'' || b[i] == '"'):
			quote = b[i]
		case quote != 0 && b[i] == quote:
			quote = 0
		case quote != 0:
			b[i] = 'x'
		case b[i] == '\\' && i+1 < len(b):
			i++
			b[i] = 'x'
		}
	}
	return string(b)
}
