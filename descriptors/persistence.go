package descriptors

import (
	"strings"

	"github.com/act-project/act/internal/pathglob"
)

// codeLater lists the places where a file makes something run later that
// act does not refuse outright — a project has its own git hooks, a
// virtual environment its own .pth files — but asks a person about: a
// plan whose real diff touches one is graded HIGH (docs/persistence.md).
// Entries starting with "~/" are relative to every home root.
var codeLater = []struct {
	kind  string
	paths []string
}{
	{"a Python start-up file", []string{
		"/**/site-packages/*.pth", "/**/dist-packages/*.pth",
		"/**/sitecustomize.py", "/**/usercustomize.py",
	}},
	{"git hooks or configuration", []string{
		"/**/.git", "/**/.git/hooks/**", "/**/.git/config", "/**/.githooks/**",
		"~/.gitconfig", "~/.config/git/**",
	}},
	{"a shell's, editor's or debugger's start-up file", []string{
		"~/.bash_aliases", "~/.bash_completion", "~/.bash_completion.d/**", "~/.inputrc",
		"~/.config/fish/**", "~/.vimrc", "~/.vim/**", "~/.config/nvim/**", "~/.exrc",
		"~/.emacs", "~/.emacs.d/**", "~/.gdbinit", "~/.config/gdb/**", "/**/.gdbinit",
		"~/.tmux.conf", "~/.config/tmux/**", "~/.screenrc",
	}},
	{"a project's tool configuration that runs code", []string{
		"/**/.npmrc", "/**/.yarnrc", "/**/.yarnrc.yml", "/**/.cargo/config", "/**/.cargo/config.toml",
		"/**/.vscode/tasks.json", "/**/.vscode/settings.json", "/**/.idea/**",
		"/**/.pre-commit-config.yaml", "/**/.husky/**", "/**/.envrc",
	}},
	{"a program on PATH", []string{"~/.local/bin/**", "~/bin/**", "~/.cargo/bin/**", "~/go/bin/**",
		"~/.pyenv/shims/**", "~/.pyenv/bin/**", "~/.rbenv/shims/**", "~/.nvm/**/bin/**", "~/.npm-global/bin/**",
		"~/.deno/bin/**", "~/.bun/bin/**", "~/.volta/bin/**", "~/.asdf/shims/**"}},
	{"an SSH client setting or key", []string{"~/.ssh/**"}},
	{"a tool's credentials or configuration", []string{
		"~/.aws/**", "~/.kube/**", "~/.docker/**", "~/.npmrc", "~/.yarnrc", "~/.config/pip/**",
		"~/.pip/**", "~/.pypirc", "~/.netrc", "~/.cargo/config*", "~/.gnupg/**",
	}},
	{"a directory's environment (direnv)", []string{"/**/.envrc"}},
}

// A PersistenceEntry is one row of act's list of places that run code
// later: where, what it is, and what act does about it.
type PersistenceEntry struct {
	Kind  string
	Paths []string
	// Refused is true for a place a descriptor may not declare as an
	// effect at all (forbidden.persistence-outside-scope); false for one
	// act asks a person about when a plan touches it (graded HIGH).
	Refused bool
}

// PersistenceTable is the whole list, for documentation.
func PersistenceTable() []PersistenceEntry {
	var out []PersistenceEntry
	for _, k := range persistence {
		out = append(out, PersistenceEntry{k.kind, k.paths, true})
	}
	for _, k := range codeLater {
		out = append(out, PersistenceEntry{k.kind, k.paths, false})
	}
	return out
}

// RunsCodeLater reports whether a change to the file at path plants
// something that runs code later, outside any review — any place of the
// list, refused or asked about — and names its kind. homes are the user's
// home directories ("~/" entries are relative to each).
func RunsCodeLater(path string, homes []string) (kind string, ok bool) {
	return NewCodeLater(homes).Match(path)
}

// CodeLater is RunsCodeLater with the list expanded for its homes once,
// for grading many paths (a plan's changes).
type CodeLater struct {
	pats []codeLaterPattern
}

type codeLaterPattern struct {
	kind, pat, prefix string
	// lit is the pattern's longest literal run, which every path it
	// matches holds (literalRun): most paths hold none of the patterns'.
	lit string
}

// literalRun returns the longest run of pat that every path pat matches
// holds as it is: pat split at its wildcards, each `**` element taken
// with the slash before it (`/a/**` matches `/a`, which holds `/a` but
// not `/a/`).
func literalRun(pat string) string {
	var best string
	start := 0 // of the run being read
	for i := 0; i <= len(pat); i++ {
		end := i // the run ends before pat[i:] …
		switch {
		case i == len(pat):
		case strings.HasPrefix(pat[i:], "/**"):
			i += len("/**") - 1 // … a `**` element, with its slash
		case pat[i] == '*' || pat[i] == '?':
			// … a wildcard
		default:
			continue
		}
		if end-start > len(best) {
			best = pat[start:end]
		}
		start = i + 1
	}
	return best
}

// NewCodeLater expands the list for homes ("~/" entries are relative to
// each).
func NewCodeLater(homes []string) *CodeLater {
	m := &CodeLater{}
	for _, e := range PersistenceTable() {
		for _, q := range e.Paths {
			for _, pat := range expandTilde(q, homes) {
				m.pats = append(m.pats, codeLaterPattern{e.Kind, pat, pathglob.Prefix(pat), literalRun(pat)})
			}
		}
	}
	return m
}

// Match reports whether a change to the file at path plants something
// that runs code later, and names its kind.
func (m *CodeLater) Match(path string) (kind string, ok bool) {
	for _, p := range m.pats {
		// The pattern's literal leading directories first: most paths
		// are under none of a home's, and this costs no allocation.
		if pathglob.Within(path, p.prefix) && strings.Contains(path, p.lit) && pathglob.Match(p.pat, path) {
			return p.kind, true
		}
	}
	return "", false
}

func expandTilde(q string, homes []string) []string {
	rest, ok := strings.CutPrefix(q, "~/")
	if !ok {
		return []string{q}
	}
	var out []string
	for _, h := range homes {
		if h != "" && h != "/" {
			out = append(out, strings.TrimSuffix(h, "/")+"/"+rest)
		}
	}
	return out
}
