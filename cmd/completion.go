package cmd

import (
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/act-project/act/gate"
	"github.com/act-project/act/internal/state"
)

func newCompletionCommand(env *Env) *cli.Command {
	return &cli.Command{
		Name:      "completion",
		Usage:     "print a shell completion script (bash, zsh or fish)",
		UsageText: "act completion bash|zsh|fish",
		Description: `Prints a script that completes act's commands, flags, and the plan and
   action ids in the state directory.

EXAMPLES:
   act completion fish > ~/.config/fish/completions/act.fish
   act completion zsh > "${fpath[1]}/_act"
   source <(act completion bash)

` + endsWith("success", 1, 2).help(),
		Action: func(c *cli.Context) error {
			if c.NArg() != 1 {
				return usagef("completion takes one shell (bash, zsh or fish), got %d arguments", c.NArg())
			}
			script, err := completionScript(c.App, c.Args().First())
			if err != nil {
				return err
			}
			_, err = io.WriteString(env.Stdio.Out, script)
			return err
		},
	}
}

// newIDsCommand is the hidden helper the completion scripts call: the
// plan ids (pending first) or action ids in the state directory.
func newIDsCommand(env *Env) *cli.Command {
	return &cli.Command{
		Name:   "__ids",
		Hidden: true,
		Action: func(c *cli.Context) error {
			home, err := env.stateDir()
			if err != nil {
				return nil
			}
			kind := c.Args().First()
			var ids []string
			if kind == "" || kind == "plan" {
				ids, _ = gate.PlanIDs(state.Dir{Root: home})
				slices.Sort(ids)
			}
			if kind == "" || kind == "action" {
				ents, _ := os.ReadDir(state.Dir{Root: home}.Actions())
				for _, e := range ents {
					if id, ok := strings.CutSuffix(e.Name(), ".json"); ok {
						ids = append(ids, id)
					}
				}
			}
			for _, id := range ids {
				fmt.Fprintln(env.Stdio.Out, id)
			}
			return nil
		},
	}
}

// idKinds says which ids a command's argument is.
var idKinds = map[string]string{"apply": "plan", "show": "", "deny": "plan", "rollback": "action"}

func completionScript(app *cli.App, shell string) (string, error) {
	var cmds []string
	flags := map[string][]string{}
	for _, c := range app.VisibleCommands() {
		cmds = append(cmds, c.Name)
		for _, f := range c.VisibleFlags() {
			for _, n := range f.Names() {
				if len(n) > 1 {
					flags[c.Name] = append(flags[c.Name], "--"+n)
				}
			}
		}
	}
	cmds = append(cmds, "help", "version")
	var global []string
	for _, f := range app.VisibleFlags() {
		global = append(global, "--"+f.Names()[0])
	}
	switch shell {
	case "bash":
		var b strings.Builder
		b.WriteString("# bash completion for act: source <(act completion bash)\n_act() {\n")
		b.WriteString("  local cur=${COMP_WORDS[COMP_CWORD]} cmd=\"\" w\n")
		b.WriteString("  for w in \"${COMP_WORDS[@]:1:COMP_CWORD-1}\"; do case $w in -*) ;; *) cmd=$w; break;; esac; done\n")
		fmt.Fprintf(&b, "  if [ -z \"$cmd\" ]; then COMPREPLY=($(compgen -W %q -- \"$cur\")); return; fi\n", strings.Join(append(cmds, global...), " "))
		b.WriteString("  case $cmd in\n")
		for _, c := range cmds {
			words := strings.Join(append(flags[c], global...), " ")
			if kind, ok := idKinds[c]; ok {
				fmt.Fprintf(&b, "    %s) COMPREPLY=($(compgen -W \"%s $(act __ids %s 2>/dev/null)\" -- \"$cur\"));;\n", c, words, kind)
			} else if c == "completion" {
				fmt.Fprintf(&b, "    %s) COMPREPLY=($(compgen -W \"bash zsh fish\" -- \"$cur\"));;\n", c)
			} else if c == "new" {
				fmt.Fprintf(&b, "    %s) COMPREPLY=($(compgen -W \"%s %s\" -- \"$cur\"));;\n", c, words, strings.Join(newTypeNames(), " "))
			} else {
				fmt.Fprintf(&b, "    %s) COMPREPLY=($(compgen -W %q -- \"$cur\") $(compgen -f -- \"$cur\"));;\n", c, words)
			}
		}
		b.WriteString("  esac\n}\ncomplete -o default -F _act act\n")
		return b.String(), nil
	case "zsh":
		var b strings.Builder
		b.WriteString("#compdef act\n# zsh completion for act: act completion zsh > \"${fpath[1]}/_act\"\n_act() {\n")
		b.WriteString("  local -a words_; local cmd=${words[2]}\n")
		fmt.Fprintf(&b, "  if (( CURRENT == 2 )); then compadd -- %s; return; fi\n", strings.Join(append(cmds, global...), " "))
		b.WriteString("  case $cmd in\n")
		for _, c := range cmds {
			words := strings.Join(append(flags[c], global...), " ")
			switch kind, ok := idKinds[c]; {
			case ok:
				fmt.Fprintf(&b, "    %s) compadd -- %s $(act __ids %s 2>/dev/null);;\n", c, words, kind)
			case c == "completion":
				fmt.Fprintf(&b, "    %s) compadd -- bash zsh fish;;\n", c)
			case c == "new":
				fmt.Fprintf(&b, "    %s) compadd -- %s %s;;\n", c, words, strings.Join(newTypeNames(), " "))
			default:
				fmt.Fprintf(&b, "    %s) compadd -- %s; _files;;\n", c, words)
			}
		}
		b.WriteString("  esac\n}\ncompdef _act act\n")
		return b.String(), nil
	case "fish":
		var b strings.Builder
		b.WriteString("# fish completion for act: act completion fish > ~/.config/fish/completions/act.fish\n")
		fmt.Fprintf(&b, "complete -c act -n '__fish_use_subcommand' -f -a '%s'\n", strings.Join(cmds, " "))
		for _, c := range cmds {
			for _, f := range flags[c] {
				fmt.Fprintf(&b, "complete -c act -n '__fish_seen_subcommand_from %s' -l %s\n", c, strings.TrimPrefix(f, "--"))
			}
			if kind, ok := idKinds[c]; ok {
				fmt.Fprintf(&b, "complete -c act -n '__fish_seen_subcommand_from %s' -f -a '(act __ids %s 2>/dev/null)'\n", c, kind)
			}
		}
		fmt.Fprintf(&b, "complete -c act -n '__fish_seen_subcommand_from completion' -f -a 'bash zsh fish'\n")
		fmt.Fprintf(&b, "complete -c act -n '__fish_seen_subcommand_from new' -f -a '%s'\n", strings.Join(newTypeNames(), " "))
		for _, g := range global {
			fmt.Fprintf(&b, "complete -c act -l %s\n", strings.TrimPrefix(g, "--"))
		}
		return b.String(), nil
	}
	return "", usagef("completion knows bash, zsh and fish, not %q", shell)
}

func newTypeNames() []string {
	var out []string
	for t := range newTypes {
		out = append(out, string(t))
	}
	slices.Sort(out)
	return out
}
