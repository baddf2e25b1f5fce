package hook

import (
	"fmt"
	"regexp"
	"strings"
	"sync"

	"github.com/act-project/act/internal/agentsetup"
)

// Claude Code's own permissions.deny rules for Bash (docs/agents.md,
// "Claude Code's deny rules"): Claude Code checks them against the
// command it runs, which behind act's hook is act's replacement (act apply
// --as-command), never the model's command. So the hook applies them to
// the model's command itself, before anything else, failing closed: the
// command as a whole and each simple command in it (split at ;, &, &&,
// ||, |, newlines, and inside $(…), `…` and (…)), each also without its
// leading VAR=value assignments, the process wrappers Claude Code strips
// and more (timeout, time, nice, nohup, stdbuf, env, command, builtin,
// exec) and its redirections. A rule matches as Claude Code documents it:
// "Bash" (or "Bash(*)") every command; "Bash(prefix:*)" the prefix alone
// or followed by a space; a "*" any run of characters, a trailing " *"
// also nothing (Bash(ls *) matches ls and ls -la, not lsof); else the
// command exactly.

// claudeDenyDecision is the hook's deny of command when Claude Code's
// deny rules for the workspace ws deny it, or when act cannot read them;
// nil when they let it through.
func claudeDenyDecision(host Host, ws, command string) *hookDecision {
	rules, err := agentsetup.ClaudeDenyRules(host.ClaudePlaces(), ws)
	if err != nil {
		return &hookDecision{PermissionDecision: "deny", PermissionDecisionReason: fmt.Sprintf(
			"act cannot read Claude Code's permission rules, which it applies to every Bash command (Claude Code would check them against act's replacement instead): %v. Nothing was run; act denies Bash commands until the settings file is fixed.", err)}
	}
	if r, ok := claudeDenies(rules, command); ok {
		return &hookDecision{PermissionDecision: "deny", PermissionDecisionReason: fmt.Sprintf(
			"Claude Code's permission rule %s (permissions.deny in %s) denies this command; nothing was run.", r.Rule, r.File)}
	}
	return nil
}

// claudeDenies returns the first Bash rule of rules that denies command.
func claudeDenies(rules []agentsetup.ClaudeRule, command string) (agentsetup.ClaudeRule, bool) {
	var cands []string
	for _, c := range append([]string{command}, simpleCommands(command)...) {
		c = strings.TrimSpace(c)
		if c == "" {
			continue
		}
		cands = append(cands, c)
		if n := normalCommand(c); n != "" && n != c {
			cands = append(cands, n)
		}
	}
	for _, r := range rules {
		content, ok := bashRuleContent(r.Rule)
		if !ok {
			continue
		}
		if content == "" || content == "*" {
			return r, true
		}
		for _, c := range cands {
			if bashRuleMatches(content, c) {
				return r, true
			}
		}
	}
	return agentsetup.ClaudeRule{}, false
}

// bashRuleContent is the content of a Bash rule ("" for Bash itself), or
// false for another tool's rule.
func bashRuleContent(rule string) (string, bool) {
	rule = strings.TrimSpace(rule)
	if rule == "Bash" {
		return "", true
	}
	if !strings.HasPrefix(rule, "Bash(") || !strings.HasSuffix(rule, ")") {
		return "", false
	}
	c := rule[len("Bash(") : len(rule)-1]
	c = strings.NewReplacer(`\(`, "(", `\)`, ")", `\\`, `\`).Replace(c)
	return strings.TrimSpace(c), true
}

// bashRuleMatches says a rule's content matches command text c.
func bashRuleMatches(content, c string) bool {
	if p, ok := strings.CutSuffix(content, ":*"); ok {
		return c == p || strings.HasPrefix(c, p+" ") || strings.HasPrefix(c, p+"\t")
	}
	if !strings.Contains(content, "*") {
		return c == content
	}
	// * is any run of characters (\* a star); a single trailing " *"
	// may match nothing.
	var re strings.Builder
	re.WriteString(`(?s)^`)
	stars := strings.Count(content, "*") - strings.Count(content, `\*`)
	body, optional := content, false
	if stars == 1 && strings.HasSuffix(content, " *") && !strings.HasSuffix(content, `\ *`) {
		body, optional = strings.TrimSuffix(content, " *"), true
	}
	for i := 0; i < len(body); i++ {
		switch {
		case body[i] == '\\' && i+1 < len(body) && body[i+1] == '*':
			re.WriteString(`\*`)
			i++
		case body[i] == '*':
			re.WriteString(`.*`)
		default:
			re.WriteString(regexp.QuoteMeta(body[i : i+1]))
		}
	}
	if optional {
		re.WriteString(`(?:[ \t].*)?`)
	}
	re.WriteString(`$`)
	m, err := regexp.MatchString(re.String(), c)
	return err == nil && m
}

// simpleCommands splits a shell command into the text of its simple
// commands, at the operators outside quotes, and the commands inside
// command substitutions and subshells (here-document bodies come out as
// lines: more candidates, never fewer).
func simpleCommands(s string) []string {
	var out []string
	var cur strings.Builder
	cut := func() {
		out = append(out, cur.String())
		cur.Reset()
	}
	// stack of open contexts: '(' a subshell or $(…), '`' backquotes,
	// '"' double quotes.
	var stack []byte
	top := func() byte {
		if len(stack) == 0 {
			return 0
		}
		return stack[len(stack)-1]
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if top() == '"' {
			switch {
			case c == '\\' && i+1 < len(s):
				cur.WriteByte(c)
				cur.WriteByte(s[i+1])
				i++
			case c == '"':
				stack = stack[:len(stack)-1]
				cur.WriteByte(c)
			case c == '$' && i+1 < len(s) && s[i+1] == '(':
				cur.WriteString("$(")
				cut()
				stack = append(stack, '(')
				i++
			case c == '`':
				cur.WriteByte(c)
				cut()
				stack = append(stack, '`')
			default:
				cur.WriteByte(c)
			}
			continue
		}
		switch {
		case c == '\\' && i+1 < len(s):
			cur.WriteByte(c)
			cur.WriteByte(s[i+1])
			i++
		case c == '\'':
			j := strings.IndexByte(s[i+1:], '\'')
			if j < 0 {
				cur.WriteString(s[i:])
				i = len(s)
				break
			}
			cur.WriteString(s[i : i+j+2])
			i += j + 1
		case c == '"':
			stack = append(stack, '"')
			cur.WriteByte(c)
		case c == '`' && top() == '`':
			stack = stack[:len(stack)-1]
			cut()
		case c == '`':
			cut()
			stack = append(stack, '`')
		case c == '(':
			cut()
			stack = append(stack, '(')
		case c == ')' && top() == '(':
			stack = stack[:len(stack)-1]
			cut()
		case c == ';', c == '\n', c == '|', c == '&':
			cut()
			if i+1 < len(s) && (s[i+1] == c && c != ';' && c != '\n' || c == '|' && s[i+1] == '&') {
				i++
			}
		case c == '{' || c == '}':
			// a group's braces (a word of their own); inside a word
			// (a{b,c}) they only split more finely.
			cut()
		default:
			cur.WriteByte(c)
		}
	}
	cut()
	return out
}

// wrappers are commands that run the rest of their words as a command.
var wrappers = map[string]bool{"timeout": true, "time": true, "nice": true, "nohup": true, "stdbuf": true,
	"env": true, "command": true, "builtin": true, "exec": true}

// assignment is a NAME=value word.
var assignment = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*=`) })

// redirection is a redirection word, its target in it or in the next
// word.
var redirection = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^(?:[0-9]*(?:>>|>\||>&|<&|<<<|<<|<>|>|<)|&>>|&>)(.*)$`)
})

// normalCommand is simple command c without its leading assignments and
// wrappers (with their options and, for timeout, the duration) and its
// redirections, its words joined by single spaces; "" when nothing is
// left.
func normalCommand(c string) string {
	words := shellWords(c)
	var kept []string
	for i := 0; i < len(words); i++ {
		if m := redirection().FindStringSubmatch(words[i]); m != nil {
			if m[1] == "" {
				i++ // the target is the next word
			}
			continue
		}
		kept = append(kept, words[i])
	}
	for len(kept) > 0 {
		w := kept[0]
		switch {
		case assignment().MatchString(w):
			kept = kept[1:]
		case wrappers[w]:
			kept = kept[1:]
			// its options, then timeout's duration
			for len(kept) > 0 && strings.HasPrefix(kept[0], "-") {
				opt := kept[0]
				kept = kept[1:]
				if len(kept) > 0 && (opt == "-n" || opt == "-s" || opt == "-k" || opt == "-u" || opt == "-i" && w == "stdbuf" || opt == "-o" || opt == "-e") {
					kept = kept[1:]
				}
			}
			if w == "timeout" && len(kept) > 0 {
				kept = kept[1:]
			}
		default:
			return strings.Join(kept, " ")
		}
	}
	return ""
}

// shellWords splits c into words at unquoted blanks, keeping each word's
// quotes as written.
func shellWords(c string) []string {
	var words []string
	var cur strings.Builder
	in := false
	flush := func() {
		if in {
			words = append(words, cur.String())
			cur.Reset()
			in = false
		}
	}
	for i := 0; i < len(c); i++ {
		ch := c[i]
		switch {
		case ch == ' ' || ch == '\t' || ch == '\n':
			flush()
		case ch == '\\' && i+1 < len(c):
			cur.WriteString(c[i : i+2])
			i++
			in = true
		case ch == '\'' || ch == '"':
			j := i + 1
			for j < len(c) && c[j] != ch {
				if ch == '"' && c[j] == '\\' {
					j++
				}
				j++
			}
			j = min(j, len(c)-1)
			cur.WriteString(c[i : j+1])
			i = j
			in = true
		default:
			cur.WriteByte(ch)
			in = true
		}
	}
	flush()
	return words
}
