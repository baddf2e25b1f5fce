package cmd

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/act-project/act/diff"
	"github.com/act-project/act/doors"
	"github.com/act-project/act/gate"
	"github.com/act-project/act/internal/atomicfile"
	"github.com/act-project/act/internal/lifecycle"
	"github.com/act-project/act/internal/state"
	"github.com/act-project/act/plan"
	"github.com/act-project/act/rollback"
)

// A Write, Edit or MultiEdit a person allows at Claude Code's prompt is
// made by Claude Code's own tool, not by act. So that act rollback undoes
// it all the same, the PreToolUse hook that asks keeps a copy of every file
// the plan replaces (in the plan's directory, adopt/N) and notes the tool
// call's plan (hooks/<key>); the PostToolUse hook that follows the call
// then adopts the plan (gate.Adopt): only where the real files are exactly
// what the plan makes of them, it records the action as applied, with the
// copies as its backups (docs/agents.md, "A yes at Claude Code's prompt").

// hookCallFile is the file naming the plan of one tool call of a session.
// Its name is a digest, so nothing of the input reaches a path.
func hookCallFile(home string, in *hookInput) string {
	sum := sha256.Sum256([]byte(in.SessionID + "\x00" + in.ToolUseID))
	return state.Dir{Root: home}.HookNote(hex.EncodeToString(sum[:16]))
}

// keepForAdoption keeps, for plan p that a person is asked about, a copy
// of each regular file it replaces, and notes p as the plan of the tool
// call in; without a tool_use_id there is nothing to adopt later.
func keepForAdoption(home string, p *plan.Plan, in *hookInput) error {
	if in.ToolUseID == "" {
		return nil
	}
	dir := state.Dir{Root: home}.Adopt(p.ID)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	for i, c := range p.Changes {
		if c.Kind != diff.Modify || c.Type != diff.TypeFile {
			continue
		}
		cp := state.Dir{Root: home}.AdoptCopy(p.ID, i)
		if err := os.Remove(cp); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		if err := rollback.KeepCopy(c.Path, cp); err != nil {
			return fmt.Errorf("keeping a copy of %s: %w", c.Path, err)
		}
	}
	if err := atomicfile.SyncDir(dir); err != nil {
		return err
	}
	f := hookCallFile(home, in)
	if err := os.MkdirAll(filepath.Dir(f), 0o700); err != nil {
		return err
	}
	return atomicfile.WriteFile(f, []byte(p.ID+"\n"), 0o600)
}

// postToolOutput is a PostToolUse hook's answer: context for Claude, or
// a block that shows Claude the reason (the tool has run already).
type postToolOutput struct {
	Decision           string            `json:"decision,omitempty"`
	Reason             string            `json:"reason,omitempty"`
	HookSpecificOutput *postToolSpecific `json:"hookSpecificOutput,omitempty"`
}

type postToolSpecific struct {
	HookEventName     string `json:"hookEventName"`
	AdditionalContext string `json:"additionalContext"`
}

// runPostToolUse answers a PostToolUse input within timeout: no output
// when there is nothing to adopt; an error or the timeout exit 2, which
// shows Claude the reason on stderr.
func runPostToolUse(ctx context.Context, env *Env, in *hookInput, wsFlag string, timeout time.Duration) error {
	out, err := within(ctx, timeout, func(ctx context.Context) (*postToolOutput, error) {
		return hookAdopt(ctx, env, in, wsFlag)
	})
	if err != nil {
		return hookBlock(env, err)
	}
	if out == nil {
		return nil
	}
	b, err := json.Marshal(out)
	if err != nil {
		return hookBlock(env, err)
	}
	_, err = fmt.Fprintf(env.Stdio.Out, "%s\n", b)
	return err
}

// hookAdopt is act hook claude-code's PostToolUse: the adoption of the
// plan a person allowed at the prompt, when there is one for this call.
func hookAdopt(ctx context.Context, env *Env, in *hookInput, wsFlag string) (*postToolOutput, error) {
	if in.ToolUseID == "" || in.ToolName == "Bash" {
		return nil, nil // a Bash's yes runs act apply itself
	}
	home, err := env.stateDir()
	if err != nil {
		return nil, err
	}
	f := hookCallFile(home, in)
	data, err := os.ReadFile(f)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil // act did not ask about this call
	}
	if err != nil {
		return nil, err
	}
	id := strings.TrimSpace(string(data))
	if _, _, err := hookWorkspace(env, in, wsFlag); err != nil {
		return nil, err
	}
	res := &result{}
	pol, err := env.loadPolicy(res)
	if err != nil {
		return nil, err
	}
	g := env.gate(pol)
	e, err := g.Load(id)
	if err != nil {
		return nil, err
	}
	// The call's own file: a note naming another plan adopts nothing
	// that this call did not write (the tree is checked below too).
	var fi hookFileInput
	if err := json.Unmarshal(in.ToolInput, &fi); err != nil {
		return nil, fmt.Errorf("%s's tool_input: %v", in.ToolName, err)
	}
	if !planWrites(e.Plan, fi.FilePath, in.Cwd) {
		return nil, fmt.Errorf("plan %s does not write %s", id, fi.FilePath)
	}
	if e.State != lifecycle.Planned {
		os.Remove(f)
		return nil, nil // adopted, applied or refused already
	}
	copies := map[int]string{}
	for i := range e.Plan.Changes {
		c := state.Dir{Root: home}.AdoptCopy(id, i)
		if _, err := os.Lstat(c); err == nil {
			copies[i] = c
		}
	}
	// The yes was given at Claude Code's prompt, which act asked for only
	// where the policy counts a flag as a person's confirmation.
	out, err := g.Adopt(ctx, e, gate.NewApproval(gate.ViaFlag), copies)
	if why, ok := doors.ProblemsText(err); ok {
		return &postToolOutput{Decision: "block", Reason: clipReason(fmt.Sprintf(
			"act could not record this %s as the change a person allowed (plan %s): %s. act rollback cannot undo it; tell the person.", in.ToolName, id, why))}, nil
	}
	if err != nil {
		return nil, err
	}
	os.Remove(f)
	os.RemoveAll(state.Dir{Root: home}.Adopt(id))
	env.witnessAfter(pol) // audit.witness_after: bounded, never failing the hook
	actionID := e.Plan.ActionID
	if out != nil && out.Action != nil {
		actionID = out.Action.ActionID
	}
	return &postToolOutput{HookSpecificOutput: &postToolSpecific{HookEventName: "PostToolUse", AdditionalContext: fmt.Sprintf(
		"act recorded this %s, which a person allowed, as action %s (plan %s); undo: %s", in.ToolName, actionID, id, hookActCommand(env, "rollback", actionID))}}, nil
}

// planWrites reports whether plan p changes the file a Write or Edit
// names (relative to cwd).
func planWrites(p *plan.Plan, path, cwd string) bool {
	if path == "" {
		return false
	}
	if !filepath.IsAbs(path) {
		path = filepath.Join(cwd, path)
	}
	path = filepath.Clean(path)
	for _, c := range p.Changes {
		if c.Path == path && c.Type == diff.TypeFile {
			return true
		}
	}
	return false
}
