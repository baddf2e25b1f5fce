package hook

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/act-project/act/descriptors"
	"github.com/act-project/act/doors"
	"github.com/act-project/act/gate"
	"github.com/act-project/act/internal/applypatch"
	"github.com/act-project/act/internal/pathglob"
	"github.com/act-project/act/policy"
	"github.com/act-project/act/review"
)

// act hook codex (docs/agents.md, "Codex CLI"): Codex CLI's PreToolUse
// hook speaks Claude Code's format (openai/codex,
// codex-rs/hooks/src/events/pre_tool_use.rs) but enforces only deny: its
// output parser rejects "ask", and "allow" without updatedInput, as
// unsupported and then runs the call. Exit 2 with a reason on stderr
// blocks; any other failure lets the call run. So every answer of act
// hook codex is a deny: what the policy allows, act promotes itself in
// the hook and says so; what needs a person waits in act pending.

// A Harness is an agent harness whose hook act answers.
type Harness struct {
	// Name is the harness's, the hook's subcommand and the door's name
	// in the audit log.
	Name  string
	tools map[string]bool // the tool names it decides; others pass through
	// denyOnly: the harness enforces only deny (Codex CLI). The hook
	// promotes an allowed plan itself and queues one a person must
	// confirm, and answers deny either way.
	denyOnly bool
	// NeedsWorkspace, when set, is the error of a call without
	// --workspace (the harness names no project directory).
	NeedsWorkspace string
}

var (
	// ClaudeCode is Claude Code's PreToolUse and PostToolUse hook.
	ClaudeCode = &Harness{Name: "claude-code", tools: hookTools}
	// Codex names its shell tools (shell, exec_command, …) "Bash" in a
	// hook's input and its patch tool "apply_patch", the raw patch in
	// tool_input.command (codex-rs/core/src/tools/hook_names.rs).
	Codex = &Harness{Name: "codex", tools: map[string]bool{"Bash": true, "apply_patch": true}, denyOnly: true,
		NeedsWorkspace: "no workspace: give --workspace DIR (Codex sets no project variable, and the input's cwd is the agent's to move, so it never sets the workspace)"}
)

// hookRefusal is a tool call act refuses before planning it (a patch
// that does not fit the tree): the hook denies it with this reason.
type hookRefusal struct{ why string }

func (r *hookRefusal) Error() string { return r.why }

// refusalOf is the deny of err when it is a hookRefusal.
func refusalOf(err error) (*hookDecision, bool) {
	var r *hookRefusal
	if !errors.As(err, &r) {
		return nil, false
	}
	return &hookDecision{PermissionDecision: "deny", PermissionDecisionReason: r.why}, true
}

// maxPatchFile is the largest file act reads to apply a patch to it, and
// maxPatchRead the most it reads for one patch, all files together: a
// patch naming many large files must not exhaust memory, since a crashed
// hook is one Codex runs the call after.
const (
	maxPatchFile = 16 << 20
	maxPatchRead = 2 * maxPatchFile
)

// codexPatchDescriptor is the short descriptor of an apply_patch whose
// tool_input is tool, applied in cwd (the input's) inside workspace ws:
// the patch's effect on the tree as it is now (applypatch.Plan), one
// step per path — DIRECTORY_CREATE for each directory a new file needs,
// then FILE_WRITE with the whole new content of each added, updated or
// moved-to file, then FILE_DELETE of each deleted or moved-from file —
// as a MULTI_STEP_COMPOSITE when there is more than one. A whole content
// rather than edits: the plan records the file it was made from, so a
// file changed since is a conflict at promotion, and the dry run shows
// the diff. A patch that does not parse or fit is a hookRefusal.
func codexPatchDescriptor(tool map[string]json.RawMessage, cwd, ws string, caps policy.ResourceCaps, homes []string) (*descriptors.Descriptor, error) {
	var text string
	if err := json.Unmarshal(tool["command"], &text); err != nil || strings.TrimSpace(text) == "" {
		return nil, errors.New("apply_patch's tool_input has no command (the patch)")
	}
	refuse := func(err error) error {
		return &hookRefusal{"act refused this apply_patch, nothing was changed: " + err.Error()}
	}
	hunks, err := applypatch.Parse(text)
	if err != nil {
		return nil, refuse(err)
	}
	dir, err := patchDir(cwd, ws)
	if err != nil {
		return nil, err
	}
	files := &patchFiles{ws: ws, added: addedOnly(hunks, dir)}
	changes, err := applypatch.Plan(hunks, dir, files.check, files.read)
	if err != nil {
		return nil, refuse(err)
	}
	if len(changes) == 0 {
		return nil, refuse(errors.New("the patch changes no file"))
	}
	var writes, deletes []descriptors.Step
	var scope, made []string
	modes := readNewModes()
	recursive := false
	size := 0
	for _, c := range changes {
		if c.Delete {
			deletes = append(deletes, descriptors.BuiltStep(descriptors.FileDeleteOp{Paths: []string{c.Path}}))
			s, _ := descriptors.FileScope(c.Path, homes)
			scope = append(scope, s)
			continue
		}
		missing, base := missingDirs(filepath.Dir(c.Path))
		for _, d := range missing {
			if !slices.Contains(made, d) {
				made = append(made, d)
				writes = append(writes, descriptors.BuiltStep(descriptors.DirectoryCreateOp{Path: d, Mode: modes.dir()}))
			}
		}
		if len(missing) > 0 {
			recursive = true
		}
		content := c.Content
		// A file the patch makes gets the mode Codex's own apply_patch
		// would give it (newModes.file).
		op := descriptors.FileWriteOp{Path: c.Path, Content: &content, Mode: modes.file(c.Path)}
		if c.Mode != 0 {
			op.Mode = fmt.Sprintf("%04o", c.Mode.Perm())
		}
		writes = append(writes, descriptors.BuiltStep(op))
		size += len(c.Content)
		if len(missing) > 0 {
			scope = append(scope, descriptors.MadeDirScope(missing, base, homes))
		} else {
			s, _ := descriptors.FileScope(c.Path, homes)
			scope = append(scope, s)
		}
	}
	slices.Sort(scope)
	var names []string
	for _, h := range hunks {
		s := h.Kind.String() + " " + h.Path
		if h.MoveTo != "" {
			s += " (moved to " + h.MoveTo + ")"
		}
		names = append(names, s)
	}
	steps := append(writes, deletes...)
	intent := review.Intent("apply_patch: " + strings.Join(names, ", "))
	fs := descriptors.FilesystemScope{Paths: slices.Compact(scope), Recursive: recursive}
	// A FILE_DELETE must run in the sandbox (rule sandbox.required).
	sandboxed := len(deletes) > 0
	if len(steps) == 1 {
		return descriptors.Built(intent, steps[0].Op, nil, fs, hookFileResources(size, caps), sandboxed), nil
	}
	return descriptors.Built(intent, nil, steps, fs, hookFileResources(size, caps), sandboxed), nil
}

// patchDir is the directory a patch's relative paths are resolved
// against, as Codex resolves them: the input's cwd (the workspace when
// there is none). A cwd that is the workspace or inside it through a
// symbolic link is named under the workspace.
func patchDir(cwd, ws string) (string, error) {
	if cwd == "" {
		return ws, nil
	}
	if !filepath.IsAbs(cwd) {
		return "", fmt.Errorf("the hook input's cwd %q is not absolute", cwd)
	}
	cwd = filepath.Clean(cwd)
	if pathglob.Within(cwd, ws) {
		return cwd, nil
	}
	rc, err1 := filepath.EvalSymlinks(cwd)
	rw, err2 := filepath.EvalSymlinks(ws)
	if err1 == nil && err2 == nil && pathglob.Within(rc, rw) {
		rel, _ := filepath.Rel(rw, rc)
		return filepath.Join(ws, rel), nil
	}
	return cwd, nil // relative paths then lie outside: refused
}

// patchFiles is what applypatch.Plan sees of the tree for a patch in the
// workspace ws: only paths below it, as named and once symbolic links are
// followed, checked before anything is read there (a refusal must not
// tell the model whether a file outside exists or what it holds) — and
// the files the patch only adds, wherever they are: an added file's whole
// content is in the patch, so nothing of what it replaces reaches the
// model, and where it lies is the gate's to grade, as for Claude Code's
// Write (a ~/.bashrc waits for a person: docs/agents.md).
type patchFiles struct {
	ws    string
	added map[string]bool
	size  int64 // bytes read so far
}

// addedOnly is the set of absolute paths (relative ones resolved in dir)
// that hunks only add: no other hunk names them.
func addedOnly(hunks []applypatch.Hunk, dir string) map[string]bool {
	abs := func(p string) string {
		if !filepath.IsAbs(p) {
			p = filepath.Join(dir, p)
		}
		return filepath.Clean(p)
	}
	added, other := map[string]bool{}, map[string]bool{}
	for _, h := range hunks {
		if h.Kind == applypatch.Add && h.MoveTo == "" {
			if added[abs(h.Path)] {
				other[abs(h.Path)] = true
			}
			added[abs(h.Path)] = true
			continue
		}
		other[abs(h.Path)] = true
		if h.MoveTo != "" {
			other[abs(h.MoveTo)] = true
		}
	}
	for p := range other {
		delete(added, p)
	}
	return added
}

// check refuses a path a patch may not touch.
func (f *patchFiles) check(p string) error {
	switch {
	case pathglob.HasMeta(p):
		return fmt.Errorf("%s holds a glob character (* or ?)", p)
	case f.added[p] && !pathglob.Within(p, f.ws) && !pathglob.Within(f.ws, p):
		return nil
	case p == f.ws || !pathglob.Within(p, f.ws):
		return fmt.Errorf("%s is outside the workspace %s", p, f.ws)
	case !realWithin(p, f.ws):
		return fmt.Errorf("%s is outside the workspace %s once symbolic links are followed", p, f.ws)
	}
	return nil
}

// read is readPatchFile, within maxPatchRead for the whole patch.
//
// A file the patch only adds outside the workspace is not read at all: it
// is planned as new (its whole content is in the patch), and what is
// there — a file, a directory, a link — is the gate's to find, so no
// refusal here tells the model whether it exists or what it is.
func (f *patchFiles) read(p string) ([]byte, fs.FileMode, error) {
	if f.added[p] && !pathglob.Within(p, f.ws) {
		return nil, 0, fs.ErrNotExist
	}
	b, mode, err := readPatchFile(p)
	if f.size += int64(len(b)); f.size > maxPatchRead {
		return nil, 0, fmt.Errorf("the patch names files of more than %d bytes in all", maxPatchRead)
	}
	return b, mode, err
}

// realWithin says p, once the symbolic links of its nearest existing
// ancestor are followed, lies below the workspace ws (also resolved).
func realWithin(p, ws string) bool {
	rws, err := filepath.EvalSymlinks(ws)
	if err != nil {
		return false
	}
	for d := p; ; d = filepath.Dir(d) {
		if r, err := filepath.EvalSymlinks(d); err == nil {
			rel, _ := filepath.Rel(d, p)
			full := filepath.Join(r, rel)
			return full != rws && pathglob.Within(full, rws)
		} else if !errors.Is(err, fs.ErrNotExist) || d == filepath.Dir(d) {
			return false
		}
	}
}

// readPatchFile reads a file a patch names: a regular file (not a link,
// which apply_patch would follow out of the workspace), at most
// maxPatchFile bytes.
func readPatchFile(p string) ([]byte, fs.FileMode, error) {
	fi, err := os.Lstat(p)
	if err != nil {
		return nil, 0, err
	}
	switch {
	case fi.IsDir():
		return nil, 0, fmt.Errorf("%s is a directory", p)
	case fi.Mode()&fs.ModeSymlink != 0:
		return nil, 0, fmt.Errorf("%s is a symbolic link: act applies a patch to regular files only", p)
	case !fi.Mode().IsRegular():
		return nil, 0, fmt.Errorf("%s is not a regular file", p)
	case fi.Size() > maxPatchFile:
		return nil, 0, fmt.Errorf("%s is larger than %d bytes", p, maxPatchFile)
	}
	b, err := os.ReadFile(p)
	return b, fi.Mode(), err
}

// codexDecide translates the gate's decision dec on plan p for act hook
// codex: always a deny, since Codex enforces nothing else. Allowed, the
// gate has promoted p and the reason says so, with a command's output; a
// person needed, p is queued for act apply PLAN_ID --confirm.
func codexDecide(door *doors.Door, dec *gate.Decision, p *gate.Plan, tool string) *hookDecision {
	deny := func(why string) *hookDecision {
		return &hookDecision{PermissionDecision: "deny", PermissionDecisionReason: why}
	}
	what := codexWhat(tool)
	if dec.Verdict == gate.Promoted {
		id, undo := door.Action(dec, p)
		if tool != "Bash" {
			return deny(fmt.Sprintf("act applied this patch itself as action %s (plan %s; undo: %s): %s. This is not a failure: the files now hold the patch and nothing more is needed; do not apply it again.",
				id, p.ID, undo, doors.ChangeSummary(p)))
		}
		why := fmt.Sprintf("act ran this command in its sandbox and applied what it changed as action %s (plan %s; undo: %s): %s. This is not a failure: do not run the command again.",
			id, p.ID, undo, doors.ChangeSummary(p))
		if len(p.Changes) == 0 {
			// Nothing to undo: the command's output is the answer.
			why = "act ran this command in its sandbox; it changed nothing. This is not a failure: do not run the command again."
		}
		for _, c := range p.Commands {
			if c.Field != "operation" {
				continue
			}
			why += fmt.Sprintf("\nIt exited with status %d.", c.ExitCode)
			all := review.Brief(door.ActLine("show", p.ID, "--full") + " shows it")
			if out := review.Output(review.Captured{Text: c.Stdout, Cut: c.StdoutCut}, all); out != "" {
				why += "\nIts output:\n" + out
			}
			if out := review.Output(review.Captured{Text: c.Stderr, Cut: c.StderrCut}, all); out != "" {
				why += "\nIts error output:\n" + out
			}
		}
		return deny(why)
	}
	return deny(fmt.Sprintf("act: a person must confirm this %s (%s). act dry-ran it as plan %s and nothing was changed; the plan is pending: a person runs %s --confirm (%s lists it, %s shows it). Codex cannot ask a person for act, so this call is denied: tell the person, and do not retry it another way.\n%s",
		what, strings.Join(dec.Why, "; "), p.ID, door.ActLine("apply", p.ID), door.ActLine("pending"), door.ActLine("show", p.ID), planText(door, p)))
}

// codexWhat names what a Codex tool call is in act's reasons.
func codexWhat(tool string) string {
	if tool == "Bash" {
		return "command"
	}
	return "patch"
}

// codexDenyOnly makes d a deny for a harness that enforces nothing else
// (a "ask" or an "allow" Codex would run the call on): act fails closed.
func codexDenyOnly(d *hookDecision) {
	if d.PermissionDecision == "deny" {
		return
	}
	d.PermissionDecision, d.UpdatedInput = "deny", nil
	d.PermissionDecisionReason = strings.TrimSpace(d.PermissionDecisionReason + "\nCodex cannot ask a person for act, so act denies this call.")
}
