package hook

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/act-project/act/internal/timings"

	"github.com/act-project/act/descriptors"
	"github.com/act-project/act/diff"
	"github.com/act-project/act/doors"
	"github.com/act-project/act/gate"
	"github.com/act-project/act/internal/pathglob"
	"github.com/act-project/act/internal/state"
	"github.com/act-project/act/policy"
	"github.com/act-project/act/review"
)

// maxHookInput is the most bytes of hook input act reads.
const maxHookInput = 64 << 20

// maxHookReason is the most characters of a decision's reason.
const maxHookReason = 12000

// hookInput is what Claude Code sends a PreToolUse hook (the fields act
// reads).
type hookInput struct {
	SessionID      string          `json:"session_id"`
	HookEventName  string          `json:"hook_event_name"`
	ToolName       string          `json:"tool_name"`
	ToolInput      json.RawMessage `json:"tool_input"`
	ToolUseID      string          `json:"tool_use_id"`
	PermissionMode string          `json:"permission_mode"`
	Cwd            string          `json:"cwd"`
}

// hookDecision is a PreToolUse hook's decision.
type hookDecision struct {
	HookEventName            string                     `json:"hookEventName"`
	PermissionDecision       string                     `json:"permissionDecision"`
	PermissionDecisionReason string                     `json:"permissionDecisionReason,omitempty"`
	UpdatedInput             map[string]json.RawMessage `json:"updatedInput,omitempty"`
}

type hookOutput struct {
	HookSpecificOutput hookDecision `json:"hookSpecificOutput"`
}

// hookTools are the tools the hook decides; any other passes through.
var hookTools = map[string]bool{"Write": true, "Edit": true, "MultiEdit": true, "Bash": true}

// Answer answers one hook input of harness h, read from r, within
// timeout: the line to print on stdout (nil: nothing, a tool act does not
// handle, which the harness decides as without act), or the error that
// blocks the call (the caller exits 2 with it on stderr).
func Answer(ctx context.Context, host Host, h *Harness, r io.Reader, wsFlag string, timeout time.Duration) ([]byte, error) {
	if timeout <= 0 {
		return nil, fmt.Errorf("--timeout must be positive, got %s", timeout)
	}
	data, err := io.ReadAll(io.LimitReader(r, maxHookInput+1))
	if err != nil {
		return nil, fmt.Errorf("reading the hook input: %v", err)
	}
	if len(data) > maxHookInput {
		return nil, fmt.Errorf("the hook input is larger than %d bytes", maxHookInput)
	}
	var in hookInput
	if err := json.Unmarshal(data, &in); err != nil {
		return nil, fmt.Errorf("the hook input is not JSON: %v", err)
	}
	if err := exactKeys(data); err != nil {
		return nil, err
	}
	if in.HookEventName == "PostToolUse" && h == ClaudeCode {
		return answerPostToolUse(ctx, host, &in, wsFlag, timeout)
	}
	if in.HookEventName != "PreToolUse" {
		return nil, fmt.Errorf("act hook %s answers PreToolUse, got hook_event_name %q", h.Name, in.HookEventName)
	}
	if !h.tools[in.ToolName] {
		return nil, nil // not act's: the agent's harness decides as it would without act
	}
	d, err := within(ctx, timeout, func(ctx context.Context) (*hookDecision, error) {
		return hookDecide(ctx, host, h, &in, wsFlag)
	})
	if err != nil {
		return nil, err
	}
	if h.denyOnly {
		codexDenyOnly(d)
	}
	d.HookEventName = "PreToolUse"
	d.PermissionDecisionReason = clipReason(d.PermissionDecisionReason)
	b, err := json.Marshal(hookOutput{*d})
	if err != nil {
		return nil, err
	}
	return append(review.JSONVisible(b), '\n'), nil
}

// within returns f's answer, given a context ending after timeout: a
// panic in f is an error, and so is no answer in time (f may still be
// stopping; the hook does not wait for it).
func within[T any](ctx context.Context, timeout time.Duration, f func(context.Context) (T, error)) (T, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	type answer struct {
		v   T
		err error
	}
	done := make(chan answer, 1)
	go func() {
		defer func() {
			if r := recover(); r != nil {
				done <- answer{err: fmt.Errorf("internal error: %v", r)}
			}
		}()
		v, err := f(ctx)
		done <- answer{v, err}
	}()
	var zero T
	select {
	case a := <-done:
		if a.err != nil && ctx.Err() != nil {
			return zero, fmt.Errorf("no decision within %s (--timeout): %v", timeout, a.err)
		}
		return a.v, a.err
	case <-ctx.Done():
		return zero, fmt.Errorf("no decision within %s (--timeout)", timeout)
	}
}

// clipReason is a reason as the agent's harness shows it to a person or
// the model: escaped, at most maxHookReason characters, a cut saying so
// (review.Reason).
func clipReason(s string) string { return review.Reason(s, maxHookReason) }

// hookWorkspace resolves the hook's workspace (wsFlag, else
// $CLAUDE_PROJECT_DIR, which Claude Code sets to the project it was started
// in) and makes it one of this session; it returns it and the directory a
// command runs in: the input's cwd when inside it, else the workspace. The
// input's cwd never chooses the workspace: the agent moves it (a cd in a
// Bash call), and nothing the agent controls may widen where its changes
// flow (docs/agents.md).
func hookWorkspace(host Host, in *hookInput, wsFlag string) (ws, workdir string, err error) {
	cwd := in.Cwd
	if cwd != "" && !filepath.IsAbs(cwd) {
		return "", "", fmt.Errorf("the hook input's cwd %q is not absolute", cwd)
	}
	dir := wsFlag
	if dir == "" {
		dir = host.Getenv("CLAUDE_PROJECT_DIR")
	}
	if dir == "" {
		return "", "", errors.New("no workspace: give --workspace DIR (Claude Code's CLAUDE_PROJECT_DIR is not set either); the input's cwd is the agent's to move, so it never sets the workspace")
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", "", err
	}
	if pathglob.HasMeta(abs) {
		return "", "", fmt.Errorf("the workspace %s holds a glob character (* or ?)", abs)
	}
	if fi, err := os.Stat(abs); err != nil {
		return "", "", fmt.Errorf("the workspace: %v", err)
	} else if !fi.IsDir() {
		return "", "", fmt.Errorf("the workspace %s is not a directory", abs)
	}
	if ws, err = host.Workspace(abs); err != nil {
		return "", "", err
	}
	workdir = ws
	if cwd != "" {
		if c, err := filepath.EvalSymlinks(cwd); err == nil && pathglob.Within(c, ws) {
			workdir = c
		}
	}
	return ws, workdir, nil
}

// hookEdit is one of a MultiEdit's edits, as Claude Code sends it.
type hookEdit struct {
	OldString  *string `json:"old_string"`
	NewString  *string `json:"new_string"`
	ReplaceAll bool    `json:"replace_all"`
}

// hookFileInput is a Write's, Edit's or MultiEdit's tool_input.
type hookFileInput struct {
	FilePath   string     `json:"file_path"`
	Content    *string    `json:"content"`
	OldString  *string    `json:"old_string"`
	NewString  *string    `json:"new_string"`
	ReplaceAll bool       `json:"replace_all"`
	Edits      []hookEdit `json:"edits"`
}

// hookFileDescriptor is the short FILE_WRITE descriptor of a Write, Edit
// or MultiEdit (act derives its effects and stamps its ids); an Edit's in
// the workspace ws as Claude Code's Edit makes it (hookEditDescriptor).
func hookFileDescriptor(tool string, raw json.RawMessage, cwd, ws string, caps policy.ResourceCaps, homes []string) (*descriptors.Descriptor, error) {
	var fi hookFileInput
	if err := json.Unmarshal(raw, &fi); err != nil {
		return nil, fmt.Errorf("%s's tool_input: %v", tool, err)
	}
	if fi.FilePath == "" {
		return nil, fmt.Errorf("%s's tool_input has no file_path", tool)
	}
	path := fi.FilePath
	if !filepath.IsAbs(path) {
		if cwd == "" {
			return nil, fmt.Errorf("%s's file_path %q is relative and the input has no cwd", tool, path)
		}
		path = filepath.Join(cwd, path)
	}
	path = filepath.Clean(path)
	edit := func(old, new *string, all bool) (descriptors.Edit, error) {
		if old == nil || new == nil {
			return descriptors.Edit{}, fmt.Errorf("%s's edit lacks old_string or new_string", tool)
		}
		return descriptors.Edit{Old: *old, New: *new, ReplaceAll: all}, nil
	}
	var edits []descriptors.Edit
	switch tool {
	case "Write":
		if fi.Content == nil {
			return nil, errors.New("Write's tool_input has no content")
		}
		return hookWriteDescriptor(review.Intent(tool+" "+path), path, *fi.Content, caps, homes), nil
	case "Edit":
		e, err := edit(fi.OldString, fi.NewString, fi.ReplaceAll)
		if err != nil {
			return nil, err
		}
		edits = []descriptors.Edit{e}
	case "MultiEdit":
		if len(fi.Edits) == 0 {
			return nil, errors.New("MultiEdit's tool_input has no edits")
		}
		for _, x := range fi.Edits {
			e, err := edit(x.OldString, x.NewString, x.ReplaceAll)
			if err != nil {
				return nil, err
			}
			edits = append(edits, e)
		}
	default:
		return nil, fmt.Errorf("act does not plan a %s", tool)
	}
	return hookEditDescriptor(tool, path, edits, ws, caps, homes)
}

// hookWriteDescriptor is the FILE_WRITE of content to path. Claude Code's
// Write makes the directories a file goes in: so does act, a
// DIRECTORY_CREATE step for each missing directory before the write
// (docs/agents.md). The scope is the file's directory, or the
// file itself where that is a home (~/.bashrc: descriptors.FileScope);
// one that makes directories is scoped, recursive, to the nearest that
// exists, or to the outermost it makes where that is a home
// (descriptors.MadeDirScope).
func hookWriteDescriptor(intent, path, content string, caps policy.ResourceCaps, homes []string) *descriptors.Descriptor {
	modes := readNewModes()
	op := descriptors.FileWriteOp{Path: path, Content: &content, Mode: modes.file(path)}
	if missing, base := missingDirs(filepath.Dir(path)); len(missing) > 0 {
		// One DIRECTORY_CREATE for each, with the mode Claude Code's
		// Write gives every directory it makes (newModes.dir).
		var steps []descriptors.Step
		for _, d := range missing {
			mkdir := descriptors.BuiltStep(descriptors.DirectoryCreateOp{Path: d, Mode: modes.dir()})
			mkdir.Effects.Filesystem = descriptors.FilesystemEffects{Create: []string{d}, Modify: []string{}, Delete: []string{}}
			steps = append(steps, mkdir)
		}
		write := descriptors.BuiltStep(op)
		write.Effects.Filesystem = descriptors.FilesystemEffects{Create: []string{path}, Modify: []string{}, Delete: []string{}}
		return descriptors.Built(intent, nil, append(steps, write),
			descriptors.FilesystemScope{Paths: []string{descriptors.MadeDirScope(missing, base, homes)}, Recursive: true}, hookFileResources(len(content), caps), false)
	}
	scope, _ := descriptors.FileScope(path, homes)
	return descriptors.Built(intent, op, nil, descriptors.FilesystemScope{Paths: []string{scope}}, hookFileResources(len(content), caps), false)
}

// newModes are the modes a hook's descriptor plans for what it makes,
// from this process's umask, read once per descriptor (umask).
type newModes struct {
	mask uint32
	ok   bool // the umask was read
}

func readNewModes() newModes {
	mask, ok := umask()
	return newModes{mask, ok}
}

// file is the mode a Write of path plans where it makes the file: act's
// own 0644, less what the umask the hook shares with the agent takes
// away, so that it is the mode the agent's own tool gives the file (0666
// less the umask) wherever the umask narrows it: 0600 under 077, where a
// plan of 0644 would not be what the tool makes, and a call a person
// allowed at the agent's prompt could not be adopted (docs/agents.md). A
// umask that leaves group write (002) is not followed: the plan stays
// 0644, as a group-writable file is graded MEDIUM and a new file would
// then always ask. "" (act's own) for a path that exists, which keeps its
// mode either way, or where the umask cannot be read.
func (n newModes) file(path string) string {
	if _, err := os.Lstat(path); !errors.Is(err, fs.ErrNotExist) {
		return ""
	}
	return n.narrowed(0o644)
}

// dir is file's for a directory the Write makes: 0755 less what the umask
// takes away (0700 under 077, as the tool makes it).
func (n newModes) dir() string { return n.narrowed(0o755) }

// narrowed is mode less the bits the umask clears, or "" where the umask
// could not be read.
func (n newModes) narrowed(mode uint32) string {
	if !n.ok {
		return ""
	}
	return fmt.Sprintf("%04o", mode&^n.mask)
}

// umask is this process's umask, from /proc/self/status (Linux 4.7):
// umask(2) can only read it by setting it, which another goroutine's
// file creation could see.
func umask() (uint32, bool) {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0, false
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "Umask:"); ok {
			n, err := strconv.ParseUint(strings.TrimSpace(v), 8, 32)
			return uint32(n) & 0o777, err == nil
		}
	}
	return 0, false
}

// hookFileResources are the resources of a file change the hook makes,
// of size bytes, within the policy's caps.
func hookFileResources(size int, caps policy.ResourceCaps) descriptors.Resources {
	return caps.Within(descriptors.Resources{MaxCPUMs: 10000, MaxMemoryMB: 256, MaxDiskMB: int64(size>>20)*2 + 64, MaxDurationMs: 30000})
}

// missingDirs returns the directories on the way to dir that do not
// exist, outermost first, and the nearest one that does (or that is not
// a directory: the plan then says so). None when dir exists.
func missingDirs(dir string) (missing []string, base string) {
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Lstat(d); err == nil || !errors.Is(err, fs.ErrNotExist) || d == filepath.Dir(d) {
			slices.Reverse(missing)
			return missing, d
		}
		missing = append(missing, d)
	}
}

// hookDecide plans the tool call of in and decides it.
func hookDecide(ctx context.Context, host Host, h *Harness, in *hookInput, wsFlag string) (*hookDecision, error) {
	end := timings.Start(ctx, "workspace and policy: load")
	ws, workdir, err := hookWorkspace(host, in, wsFlag)
	end()
	if err != nil {
		return nil, err
	}
	door, err := host.Door(h.Name)
	if err != nil {
		return nil, err
	}
	g := door.Gate
	pol := g.Policy
	homes := descriptors.HomeRoots(g.EnvHome, g.UserHome) // what no file's scope may be
	bash := in.ToolName == "Bash"
	var tool map[string]json.RawMessage
	if err := json.Unmarshal(in.ToolInput, &tool); err != nil || tool == nil {
		return nil, fmt.Errorf("%s's tool_input is not a JSON object", in.ToolName)
	}
	var d *descriptors.Descriptor
	var command string
	if bash {
		if err := json.Unmarshal(tool["command"], &command); err != nil || strings.TrimSpace(command) == "" {
			return nil, errors.New("Bash's tool_input has no command")
		}
		if h == ClaudeCode {
			end := timings.Start(ctx, "Claude Code's deny rules")
			dec := claudeDenyDecision(host, ws, command)
			end()
			if dec != nil {
				return dec, nil
			}
		}
		d = doors.CommandDescriptor([]string{"sh", "-c", command}, ws, workdir, pol.ResourceCaps)
		if h == ClaudeCode {
			// Claude Code's shell keeps the directory a command ends in:
			// the dry run records it (cdAfter).
			op := d.Op.(descriptors.CommandExecutionOp)
			op.ReportCwd = true
			d.Op = op
		}
	} else if in.ToolName == "apply_patch" {
		d, err = codexPatchDescriptor(tool, in.Cwd, ws, pol.ResourceCaps, homes)
		if dec, refused := refusalOf(err); refused {
			return dec, nil
		}
	} else {
		d, err = hookFileDescriptor(in.ToolName, in.ToolInput, in.Cwd, ws, pol.ResourceCaps, homes)
		if dec, refused := refusalOf(err); refused {
			return dec, nil
		}
	}
	if err != nil {
		return nil, err
	}
	deny := func(why string) *hookDecision {
		return &hookDecision{PermissionDecision: "deny", PermissionDecisionReason: why}
	}
	ck, err := door.Check(ctx, d)
	if err != nil {
		if why, ok := doors.ProblemsText(err); ok {
			return deny("act refused this " + in.ToolName + ": " + why), nil
		}
		return nil, err
	}
	defer ck.Release()
	collected := &doors.Output{}
	// The dry run has part of the hook's time: a command still running
	// at its end is answered by the policy's hooks.cannot_dry_run, with
	// time left to stop it and say so.
	dctx, stop := context.WithCancel(ctx)
	defer stop()
	if dl, ok := ctx.Deadline(); ok {
		dctx, stop = context.WithDeadline(ctx, dl.Add(-time.Until(dl)/5))
		defer stop()
	}
	started := time.Now()
	p, err := door.DryRun(dctx, ck, collected.Line)
	if err != nil {
		if ctx.Err() != nil {
			return nil, err
		}
		if dctx.Err() != nil {
			return cannotDryRun(g, d, in, claudeAnswerer(host, in), time.Since(started), collected), nil
		}
		if code, failed := doors.CommandFailed(err); failed {
			out, errOut := review.Output(collected.Captured(1), review.Brief("")), review.Output(collected.Captured(2), review.Brief(""))
			why := fmt.Sprintf("act ran this command in its sandbox and it exited with status %d; nothing was changed.", code)
			if out != "" {
				why += "\nIts output:\n" + out
			}
			if errOut != "" {
				why += "\nIts error output:\n" + errOut
			}
			for _, n := range doors.NetworkNotes(err) {
				why += "\nact: " + n
			}
			return deny(why), nil
		}
		if why, ok := doors.ProblemsText(err); ok {
			return deny("act's dry run refused this " + in.ToolName + ": " + why), nil
		}
		return nil, err
	}
	e, err := g.EntryOf(p)
	if err != nil {
		return nil, err
	}
	// Who would answer act's question at Claude Code's prompt: Codex asks
	// no one.
	who := answerer{unseen: "Codex cannot ask a person for act"}
	if !h.denyOnly {
		who = claudeAnswerer(host, in)
	}
	unseen := who.unseen
	// The gate decides, records and promotes; the hook translates. A Bash
	// it allows is promoted by its replacement (act apply --as-command),
	// unless it changed nothing: the gate records that it ran now, and
	// what replaces the call only prints its output (replay).
	dec, err := g.Submit(ctx, e, gate.Door{Prompt: !h.denyOnly && unseen == "", Later: bash && !h.denyOnly})
	if err != nil {
		why, ok := doors.ProblemsText(err)
		switch {
		case !ok:
			return nil, err
		case dec != nil && h.denyOnly: // the promotion's refusal
			return deny(fmt.Sprintf("act could not apply this %s (plan %s), nothing was changed: %s", codexWhat(in.ToolName), p.ID, why)), nil
		case dec != nil:
			return deny(fmt.Sprintf("act could not apply this %s (plan %s): %s", in.ToolName, p.ID, why)), nil
		}
		return deny(fmt.Sprintf("act's policy blocks this %s (plan %s): %s", in.ToolName, p.ID, why)), nil
	}
	if h.denyOnly {
		return codexDecide(door, dec, p, in.ToolName), nil
	}
	apply := door.ActLine("apply", p.ID)
	// What replaces a Bash command ends as the command would: its output
	// and exit code (docs/agents.md, "Bash is promoted by act").
	asCommand := host.Replacement(p.ID)
	cd := ""
	if bash {
		cd = cdAfter(p, ws, workdir)
	}
	why := strings.Join(dec.Why, "; ")
	switch dec.Verdict {
	case gate.Allowed:
		return &hookDecision{PermissionDecision: "allow",
			PermissionDecisionReason: fmt.Sprintf("act dry-ran this %s as plan %s; the policy allows it", in.ToolName, p.ID),
			UpdatedInput:             withCommand(tool, asCommand+cd)}, nil
	case gate.Promoted:
		if bash {
			line, err := replay(g.Home, p)
			if err != nil {
				return nil, err
			}
			return &hookDecision{PermissionDecision: "allow",
				PermissionDecisionReason: fmt.Sprintf("act dry-ran this %s as plan %s; it changed nothing, and the policy allows it: act recorded that it ran, and what runs instead prints its output", in.ToolName, p.ID),
				UpdatedInput:             withCommand(tool, line+cd)}, nil
		}
		return hookPromoted(door, dec, p, in.ToolName), nil
	case gate.Ask:
		// A yes in Claude Code's prompt is what --confirm is; the record
		// says who was reported to give it (a person, or a program). The
		// plan is rendered only for whoever is asked.
		d := &hookDecision{PermissionDecision: "ask", PermissionDecisionReason: fmt.Sprintf("act: a person must confirm this %s (%s). act dry-ran it as plan %s:\n%s", in.ToolName, why, p.ID, planText(door, p))}
		if bash {
			d.UpdatedInput = withCommand(tool, asCommand+" --confirm --yes-from "+who.reported+cd)
		} else if h == ClaudeCode {
			if err := keepForAdoption(g.Home, p, in); err != nil {
				return nil, err
			}
		}
		return d, nil
	}
	// Only a yes typed at a terminal or a signature counts, or Claude
	// Code would not show a person the question: a click in Claude Code
	// is no confirmation. The plan waits in act pending.
	because := fmt.Sprintf("the host policy counts only %s as a person's confirmation", viaName(g.Via()))
	if g.Via() == gate.ViaFlag {
		because = unseen
	}
	return deny(fmt.Sprintf("act: a person must confirm this %s (%s), and %s. The plan %s is pending: a person runs %s --confirm (%s lists it). Do not retry it another way.",
		in.ToolName, why, because, p.ID, apply, door.ActLine("pending"))), nil
}

// promptUnseen says why Claude Code would not show a person an "ask" for
// the call in, or "" when it would. Claude Code approves a hook's ask
// without asking in some permission modes (bypassPermissions and auto:
// anthropics/claude-code#77212, #51255; acceptEdits, for file edits, is
// not known not to), so only the modes where it is known to ask are
// trusted: default, and acceptEdits for a Bash (docs/agents.md).
func promptUnseen(in *hookInput) string {
	switch {
	case in.PermissionMode == "default":
		return ""
	case in.PermissionMode == "acceptEdits" && in.ToolName == "Bash":
		return ""
	case in.PermissionMode == "":
		return "the hook input names no permission_mode, so act cannot tell that Claude Code would show a person its question"
	}
	return fmt.Sprintf("Claude Code runs in permission mode %q, where it may approve act's question without showing it to a person", in.PermissionMode)
}

// cannotDryRun is the decision on a command whose dry run did not finish
// in ran (its part of the hook's time): the policy's hooks.cannot_dry_run (deny by
// default; ask only where a yes in the agent's prompt counts as a
// person's), with what the command printed until it was stopped.
func cannotDryRun(g *gate.Gate, d *descriptors.Descriptor, in *hookInput, who answerer, ran time.Duration, collected *doors.Output) *hookDecision {
	pol := g.Policy
	tool := in.ToolName
	why := fmt.Sprintf("act could not dry-run this %s: it was still running in act's sandbox when act stopped it, after %s of the hook's time. It may wait on the network, which the policy does not give the sandbox, or on a local service, which the sandbox cannot reach; nothing was changed.",
		tool, ran.Round(time.Second))
	if out := review.Output(collected.Captured(1), review.Brief("")) + review.Output(collected.Captured(2), review.Brief("")); out != "" {
		why += "\nIts output until then:\n" + strings.TrimRight(out, "\n")
	}
	// What the policy decides of the call undry-run binds the answer: a
	// mode it denies stays denied (hooks.cannot_dry_run never loosens it).
	if dec := g.Unplanned(d); dec.Mode == policy.Deny || len(dec.Blocked) > 0 {
		return &hookDecision{PermissionDecision: "deny", PermissionDecisionReason: why +
			"\nThe policy denies it without its dry run: " + dec.Reason + "."}
	}
	if pol.Hooks.CannotDryRun == policy.HookAsk && pol.Confirmation.Via == policy.ViaFlag && who.unseen == "" {
		return &hookDecision{PermissionDecision: "ask", PermissionDecisionReason: why +
			"\nThe policy (hooks.cannot_dry_run: ask) leaves it to a person: a yes runs it OUTSIDE act's sandbox, unreviewed, and act rollback cannot undo it."}
	}
	return &hookDecision{PermissionDecision: "deny", PermissionDecisionReason: why +
		"\nThe policy (hooks.cannot_dry_run) refuses such commands. Run what can be checked offline, or ask the person to run this one."}
}

// hookPromote promotes the allowed plan p of a Write, Edit or MultiEdit
// in the hook, as act apply PLAN_ID does, so that act rollback undoes it.
// The call is then denied, the reason saying act applied it: an Edit's
// old text is gone, and Claude Code's Write refuses a file it has not
// read, or one changed since it read it — which act's promotion made it.
func hookPromoted(door *doors.Door, dec *gate.Decision, p *gate.Plan, tool string) *hookDecision {
	id, undo := door.Action(dec, p)
	what := "edit"
	if tool == "Write" {
		what = "content"
	}
	return &hookDecision{PermissionDecision: "deny", PermissionDecisionReason: fmt.Sprintf(
		"act applied this %s itself as action %s (plan %s; undo: %s): the file now holds the %s, and nothing more is needed. This is not a failure: do not retry it.", tool, id, p.ID, undo, what)}
}

// planText is plan p as the text of a reason: escaped and, unless the
// review is full, bounded (review.PlanText).
func planText(door *doors.Door, p *gate.Plan) string {
	o := door.Review
	o.Brief = !o.Full
	return review.PlanText(p, p.State, o)
}

// viaName says what policy confirmation.via counts.
func viaName(via string) string {
	switch via {
	case gate.ViaTerminal:
		return "a yes typed at a terminal"
	case gate.ViaSigned:
		return "an SSH signature by a listed approver"
	}
	return via
}

// replay keeps the output of the Bash call of plan p, which changed
// nothing and which the gate recorded as run, in the plan's directory,
// and returns the shell command that prints it as act apply --as-command
// would (doors.AsCommand): "cat" of each non-empty stream, or ":" when
// there is none. The files are new (a directory made here, files opened
// exclusively, never through a link), so nothing else is written.
func replay(home state.Dir, p *gate.Plan) (string, error) {
	stdout, stderr, code, ok := doors.AsCommand(p)
	if !ok || code != 0 {
		// Not expected: a command that exits non-zero gets no plan.
		return "", fmt.Errorf("plan %s records no successful run of its command", p.ID)
	}
	dir := home.Replay(p.ID)
	if stdout == "" && stderr == "" {
		return ":", nil
	}
	if err := os.Mkdir(dir, 0o700); err != nil {
		return "", fmt.Errorf("keep the output of plan %s: %w", p.ID, err)
	}
	var parts []string
	for _, s := range []struct{ name, data, redirect string }{{"stdout", stdout, ""}, {"stderr", stderr, " >&2"}} {
		if s.data == "" {
			continue
		}
		name := filepath.Join(dir, s.name)
		f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, 0o600)
		if err != nil {
			return "", fmt.Errorf("keep the output of plan %s: %w", p.ID, err)
		}
		_, err = f.WriteString(s.data)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return "", fmt.Errorf("keep the output of plan %s: %w", p.ID, err)
		}
		parts = append(parts, "cat -- "+shellQuote(name)+s.redirect)
	}
	return strings.Join(parts, " && "), nil
}

// withCommand is a copy of a Bash tool input with its command replaced
// (updatedInput replaces the whole input).
func withCommand(tool map[string]json.RawMessage, command string) map[string]json.RawMessage {
	out := make(map[string]json.RawMessage, len(tool))
	for k, v := range tool {
		out[k] = v
	}
	b, _ := json.Marshal(command)
	out["command"] = b
	return out
}

// cdAfter is what ends a Bash call's replacement so that Claude Code's
// shell, which keeps its directory from one call to the next, ends where
// the command ended in the dry run (report_cwd): " && \builtin cd --
// 'DIR'", or "" where the command ended where it started. The directory
// is the sandbox's word, so it is taken only when it is absolute, clean,
// printable and inside the workspace ws, and a directory now or one the
// plan creates; a command that ended outside the workspace resets the
// shell to the workspace, as Claude Code resets it to the project
// (docs/agents.md, "The shell's directory").
func cdAfter(p *gate.Plan, ws, workdir string) string {
	var cwd string
	for _, c := range p.Commands {
		if c.Field == "operation" {
			cwd = c.Cwd
		}
	}
	switch {
	case cwd == "" || cwd == workdir:
		return ""
	case !filepath.IsAbs(cwd) || filepath.Clean(cwd) != cwd || !utf8.ValidString(cwd) ||
		strings.ContainsFunc(cwd, func(r rune) bool { return unicode.IsControl(r) || !unicode.IsPrint(r) && r != ' ' }):
		return ""
	case cwd != ws && !pathglob.Within(cwd, ws):
		if workdir == ws {
			return ""
		}
		cwd = ws
	case !isDir(cwd) && !planMakesDir(p, cwd):
		return ""
	}
	return ` && \builtin cd -- ` + shellQuote(cwd)
}

// isDir says path is a directory now (through symbolic links).
func isDir(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.IsDir()
}

// planMakesDir says plan p creates the directory dir.
func planMakesDir(p *gate.Plan, dir string) bool {
	for _, c := range p.Changes {
		if c.Path == dir && c.Kind == diff.Create && c.Type == diff.TypeDir {
			return true
		}
	}
	return false
}

// shellQuote is s single-quoted for a POSIX shell.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
