package gate

import (
	"bytes"
	"fmt"
	"strings"

	"github.com/act-project/act/internal/pathglob"
)

// A Mechanism is one way a tool runs code from a project's files without
// the person's deliberate act: opening a folder in an editor, entering a
// directory, starting Python, committing, installing, pushing. A change
// to a file of one is HIGH (docs/autorun.md, generated from Mechanisms by
// TestAutorunDoc). The list is the second line of defence: a file it
// misses is still LOW only where the person's review shows it.
type Mechanism struct {
	// Kind groups the mechanisms in the doc.
	Kind string
	// Tool is who runs the code; How says when, without being asked.
	Tool, How string
	// Paths are globs of absolute paths ("/**/" any directory).
	Paths []string
	// Doc is the tool's own documentation of the mechanism.
	Doc string
	// Dependency marks installed dependency code: loaded by the
	// person's own programs, it is what a package manager is run to
	// write, so MEDIUM (a person sees it first); everything else is HIGH.
	Dependency bool
}

// Mechanisms is the one list of mechanisms.
var Mechanisms = []Mechanism{
	{"editor, IDE and dev container project configuration", "VS Code",
		"runs a task marked runOn: folderOpen, and programs its settings name (interpreters, formatters, terminals), when the folder or workspace is opened",
		[]string{"/**/.vscode/**", "/**/*.code-workspace"}, "https://code.visualstudio.com/docs/editor/tasks", false},
	{"editor, IDE and dev container project configuration", "Dev Containers (VS Code, Codespaces, devcontainer CLI)",
		"runs initializeCommand on the host and the other lifecycle commands when the container is built or opened",
		[]string{"/**/.devcontainer/**", "/**/.devcontainer.json"}, "https://containers.dev/implementors/json_reference/", false},
	{"editor, IDE and dev container project configuration", "Zed",
		"reads project settings and tasks (language servers, formatters and their commands) when the project is opened",
		[]string{"/**/.zed/**"}, "https://zed.dev/docs/configuring-zed", false},
	{"editor, IDE and dev container project configuration", "Helix",
		"reads a workspace's languages.toml and config.toml: the language server and formatter commands it starts with a file",
		[]string{"/**/.helix/**"}, "https://docs.helix-editor.com/languages.html", false},
	{"editor, IDE and dev container project configuration", "Neovim and Vim ('exrc')",
		"sources .nvim.lua, .nvimrc or .exrc from the directory it starts in",
		[]string{"/**/.nvim.lua", "/**/.nvimrc", "/**/.exrc", "/**/.vimrc"}, "https://neovim.io/doc/user/options.html#'exrc'", false},
	{"editor, IDE and dev container project configuration", "JetBrains IDEs",
		"run a project's startup tasks and run configurations from .idea when the project is opened",
		[]string{"/**/.idea/**"}, "https://www.jetbrains.com/help/idea/settings-tools-startup-tasks.html", false},
	{"editor, IDE and dev container project configuration", "Emacs",
		"applies .dir-locals.el (its eval forms once marked safe) to every file opened below it",
		[]string{"/**/.dir-locals.el", "/**/.dir-locals-2.el"}, "https://www.gnu.org/software/emacs/manual/html_node/emacs/Directory-Variables.html", false},
	{"editor, IDE and dev container project configuration", "GDB",
		"auto-loads .gdbinit and OBJFILE-gdb.py scripts beside what it debugs",
		[]string{"/**/.gdbinit", "/**/*-gdb.py", "/**/*-gdb.gdb", "/**/*-gdb.scm"}, "https://sourceware.org/gdb/current/onlinedocs/gdb.html/Auto_002dloading.html", false},
	{"git hook managers", "Lefthook",
		"runs the commands of lefthook.yml from the git hooks it installs (commit, push, checkout, merge)",
		[]string{"/**/lefthook.yml", "/**/.lefthook.yml", "/**/lefthook.yaml", "/**/.lefthook.yaml", "/**/lefthook.json", "/**/.lefthook.json", "/**/lefthook.toml", "/**/.lefthook.toml", "/**/lefthook-local.yml", "/**/.lefthook-local.yml", "/**/.lefthook/**", "/**/.lefthook-local/**"},
		"https://lefthook.dev/configuration/", false},
	{"git hook managers", "Overcommit",
		"runs the hooks .overcommit.yml enables at every commit, and its repository's own hooks",
		[]string{"/**/.overcommit.yml", "/**/.git-hooks/**"}, "https://github.com/sds/overcommit#configuration", false},
	{"git hook managers", "Husky",
		"runs the scripts in .husky/ as git hooks (core.hooksPath)",
		[]string{"/**/.husky/**"}, "https://typicode.github.io/husky/", false},
	{"git hook managers", "lint-staged",
		"runs the commands of its configuration on the staged files, from a pre-commit hook",
		[]string{"/**/.lintstagedrc", "/**/.lintstagedrc.*", "/**/lint-staged.config.*"}, "https://github.com/lint-staged/lint-staged#configuration", false},
	{"git hook managers", "pre-commit",
		"runs the hooks .pre-commit-config.yaml names (repo: local runs any command) at every commit",
		[]string{"/**/.pre-commit-config.yaml", "/**/.pre-commit-config.yml", "/**/.pre-commit-hooks.yaml"}, "https://pre-commit.com/", false},
	{"git hook managers", "git (core.hooksPath)",
		"runs hooks from the directory a repository's core.hooksPath names, by convention .githooks/",
		[]string{"/**/.githooks/**"}, "https://git-scm.com/docs/githooks", false},
	{"git hook managers", "git (include.path)",
		"reads a project .gitconfig a repository's config includes: its core.fsmonitor, core.pager, aliases and filters run with the next git command",
		[]string{"/**/.gitconfig"}, "https://git-scm.com/docs/git-config#_includes", false},
	{"shell and environment auto-loaders", "direnv",
		"runs .envrc (and .env, with dotenv) in the shell on entering the directory, once allowed",
		[]string{"/**/.envrc", "/**/.env"}, "https://direnv.net/", false},
	{"shell and environment auto-loaders", "mise",
		"on entering the directory sets its environment, sources the scripts _.source names and runs its enter hooks; .tool-versions chooses the programs that run",
		[]string{"/**/mise.toml", "/**/.mise.toml", "/**/mise.local.toml", "/**/.mise.local.toml", "/**/mise.*.toml", "/**/.mise/**", "/**/.config/mise/**", "/**/mise/config.toml", "/**/.tool-versions"},
		"https://mise.jdx.dev/configuration.html", false},
	{"shell and environment auto-loaders", "asdf",
		"chooses from .tool-versions the version, so the program, every shim runs",
		[]string{"/**/.tool-versions"}, "https://asdf-vm.com/manage/configuration.html", false},
	{"Python start-up and virtual environment activation", "Python (site)",
		"imports the modules a .pth file's import lines name, and sitecustomize and usercustomize, at every start",
		[]string{"/**/*.pth", "/**/sitecustomize.py", "/**/usercustomize.py"}, "https://docs.python.org/3/library/site.html", false},
	{"Python start-up and virtual environment activation", "Python (site-packages)",
		"imports installed packages, and the modules a .pth file names, from site-packages: dependency code (MEDIUM)",
		[]string{"/**/site-packages/**", "/**/dist-packages/**"}, "https://docs.python.org/3/library/site.html", true},
	{"Python start-up and virtual environment activation", "Python virtual environments",
		"source bin/activate in the shell that activates the environment; pyvenv.cfg chooses the interpreter and its library",
		[]string{"/**/bin/activate", "/**/bin/activate.*", "/**/bin/activate_this.py", "/**/bin/Activate.ps1", "/**/pyvenv.cfg"},
		"https://docs.python.org/3/library/venv.html", false},
	{"Python start-up and virtual environment activation", "pdb",
		"runs .pdbrc from the working directory when the debugger starts",
		[]string{"/**/.pdbrc", "/**/.pdbrc.py"}, "https://docs.python.org/3/library/pdb.html", false},
	{"package-manager hooks", "pnpm",
		"runs .pnpmfile.cjs's hooks at every install",
		[]string{"/**/.pnpmfile.cjs", "/**/.pnpmfile.mjs", "/**/pnpmfile.js"}, "https://pnpm.io/pnpmfile", false},
	{"package-manager hooks", "npm",
		"takes script-shell, node-options and the git and registry settings of a project .npmrc for every npm command",
		[]string{"/**/.npmrc"}, "https://docs.npmjs.com/cli/configuring-npm/npmrc", false},
	{"package-manager hooks", "Yarn",
		"runs the file yarnPath names instead of itself, and the plugins .yarnrc.yml loads, for every yarn command",
		[]string{"/**/.yarnrc", "/**/.yarnrc.yml", "/**/.yarnrc.yaml", "/**/.yarn/plugins/**", "/**/.yarn/releases/**"}, "https://yarnpkg.com/configuration/yarnrc", false},
	{"package-manager hooks", "Cargo",
		"runs the runner, rustc-wrapper and aliases of .cargo/config.toml for every cargo command below it",
		[]string{"/**/.cargo/config", "/**/.cargo/config.toml"}, "https://doc.rust-lang.org/cargo/reference/config.html", false},
	{"package-manager hooks", "Node.js (node_modules)",
		"loads code from node_modules for every require and import, and its packages' bin scripts for npm run and npx: dependency code (MEDIUM)",
		[]string{"/**/node_modules/**"}, "https://nodejs.org/api/modules.html#loading-from-node_modules-folders", true},
	{"CI workflows", "GitHub Actions",
		"runs a workflow's jobs, with the repository's secrets, on the next push or pull request",
		[]string{"/**/.github/workflows/**", "/**/.github/actions/**"}, "https://docs.github.com/en/actions/writing-workflows/workflow-syntax-for-github-actions", false},
	{"CI workflows", "GitLab CI/CD",
		"runs .gitlab-ci.yml's jobs, with the project's variables, on the next push",
		[]string{"/**/.gitlab-ci.yml", "/**/.gitlab/ci/**"}, "https://docs.gitlab.com/ee/ci/yaml/", false},
	{"CI workflows", "CircleCI",
		"runs .circleci/config.yml's jobs on the next push",
		[]string{"/**/.circleci/**"}, "https://circleci.com/docs/configuration-reference/", false},
}

// autorunMatcher matches paths against Mechanisms: a literal last
// element by map, other patterns after a cheap check that the path holds
// each of their literal elements.
type autorunMatcher struct {
	names map[string]*Mechanism
	pats  []autorunPattern
}

type autorunPattern struct {
	m        *Mechanism
	pat      string
	basename bool     // "/**/NAME": matched against the last element
	literals []string // the pattern's elements without a wildcard
}

func newAutorun() *autorunMatcher {
	a := &autorunMatcher{names: map[string]*Mechanism{}}
	for i := range Mechanisms {
		m := &Mechanisms[i]
		for _, p := range m.Paths {
			rest, ok := strings.CutPrefix(p, "/**/")
			switch {
			case ok && !strings.Contains(rest, "/") && !pathglob.HasMeta(rest):
				if a.names[rest] == nil {
					a.names[rest] = m
				}
			case ok && !strings.Contains(rest, "/"):
				a.pats = append(a.pats, autorunPattern{m: m, pat: "/" + rest, basename: true})
			default:
				ap := autorunPattern{m: m, pat: p}
				for _, e := range strings.Split(p, "/") {
					if e != "" && !pathglob.HasMeta(e) {
						ap.literals = append(ap.literals, e)
					}
				}
				a.pats = append(a.pats, ap)
			}
		}
	}
	return a
}

// match is the mechanism that runs the file at path, or nil.
func (a *autorunMatcher) match(path string) *Mechanism {
	name := path[strings.LastIndexByte(path, '/')+1:]
	if m := a.names[name]; m != nil {
		return m
	}
	for _, p := range a.pats {
		if p.basename {
			if pathglob.Match(p.pat, "/"+name) {
				return p.m
			}
			continue
		}
		if hasElements(path, p.literals) && pathglob.Match(p.pat, path) {
			return p.m
		}
	}
	return nil
}

// hasElements reports whether each of elems is an element of path.
func hasElements(path string, elems []string) bool {
	for _, e := range elems {
		i := strings.Index(path, "/"+e)
		for i >= 0 {
			if end := i + 1 + len(e); end == len(path) || path[end] == '/' {
				break
			}
			j := strings.Index(path[i+1:], "/"+e)
			if j < 0 {
				i = -1
				break
			}
			i += 1 + j
		}
		if i < 0 {
			return false
		}
	}
	return true
}

// AutorunDoc renders docs/autorun.md from Mechanisms.
func AutorunDoc() []byte {
	var b bytes.Buffer
	b.WriteString(`# Files tools run on their own

<!-- Generated by "go test -run TestAutorunDoc -update" from gate.Mechanisms. Do not edit. -->

A file in one of these places is code, or chooses code, that a tool runs
without the person's deliberate act: opening a folder in an editor, entering
a directory, starting Python, committing, installing, pushing. A plan whose
real diff creates or changes one is graded **HIGH** by act
([risk.md](risk.md)) — installed dependency code (` + "`node_modules`" + `,
` + "`site-packages`" + `), which a package manager is run to write, **MEDIUM** — so
under the default policy a person must confirm it.

The list is of *mechanisms*, each cited from the tool's own documentation,
and it is the second line of defence: a change is LOW only where the
person's own review shows it (in git, what ` + "`git status`" + ` shows or
what a commit writes), so a file this list misses is still not LOW when it
is ignored, hidden in a dot-directory outside git, or inside a git
directory. The places a home directory starts code from are in
[persistence.md](persistence.md). Each path is matched in any
directory; ` + "`**`" + ` is any number of directories.
`)
	kind := ""
	for _, m := range Mechanisms {
		if m.Kind != kind {
			kind = m.Kind
			fmt.Fprintf(&b, "\n## %s\n\n| tool | runs, without being asked | paths |\n|---|---|---|\n", strings.ToUpper(kind[:1])+kind[1:])
		}
		var ps []string
		for _, p := range m.Paths {
			ps = append(ps, "`"+strings.TrimPrefix(p, "/**/")+"`")
		}
		fmt.Fprintf(&b, "| [%s](%s) | %s | %s |\n", m.Tool, m.Doc, m.How, strings.Join(ps, ", "))
	}
	return b.Bytes()
}
