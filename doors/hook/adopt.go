package hook

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
func hookCallFile(home state.Dir, in *hookInput) string {
	sum := sha256.Sum256([]byte(in.SessionID + "\x00" + in.ToolUseID))
	return home.HookNote(hex.EncodeToString(sum[:16]))
}

// keepForAdoption keeps, for plan p that a person is asked about, a copy
// of each regular file it replaces, and notes p as the plan of the tool
// call in; without a tool_use_id there is nothing to adopt later.
func keepForAdoption(home state.Dir, p *gate.Plan, in *hookInput) error {
	if in.ToolUseID == "" {
		return nil
	}
	dir := home.Adopt(p.ID)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	for i, c := range p.Changes {
		if c.Kind != diff.Modify || c.Type != diff.TypeFile {
			continue
		}
		cp := home.AdoptCopy(p.ID, i)
		if err := os.Remove(cp); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		if err := gate.KeepCopy(c.Path, cp); err != nil {
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

// answerPostToolUse answers a PostToolUse input within timeout: nothing
// when there is nothing to adopt; an error or the timeout blocks, which
// shows Claude the reason.
func answerPostToolUse(ctx context.Context, host Host, in *hookInput, wsFlag string, timeout time.Duration) ([]byte, error) {
	out, err := within(ctx, timeout, func(ctx context.Context) (*postToolOutput, error) {
		return hookAdopt(ctx, host, in, wsFlag)
	})
	if err != nil || out == nil {
		return nil, err
	}
	b, err := json.Marshal(out)
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

// hookAdopt is act hook claude-code's PostToolUse: the adoption of the
// plan a person allowed at the prompt, when there is one for this call.
func hookAdopt(ctx context.Context, host Host, in *hookInput, wsFlag string) (*postToolOutput, error) {
	if in.ToolUseID == "" || in.ToolName == "Bash" {
		return nil, nil // a Bash's yes runs act apply itself
	}
	home, err := host.StateDir()
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
	if _, _, err := hookWorkspace(host, in, wsFlag); err != nil {
		return nil, err
	}
	door, err := host.Door(ClaudeCode.Name)
	if err != nil {
		return nil, err
	}
	g := door.Gate
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
		c := home.AdoptCopy(id, i)
		if _, err := os.Lstat(c); err == nil {
			copies[i] = c
		}
	}
	// Where the plan needs a person, the yes was asked at Claude Code's
	// prompt, which act does only where the policy counts a flag as a
	// person's confirmation; act does not see it, and the record says so
	// (gate.Adopt), with who the session reports answers it (a person, or
	// a program).
	ap := gate.NewApproval(gate.ViaFlag)
	ap.Reported = claudeAnswerer(host, in).reported
	out, err := g.Adopt(ctx, e, ap, copies)
	if why, ok := doors.ProblemsText(err); ok {
		return &postToolOutput{Decision: "block", Reason: clipReason(fmt.Sprintf(
			"act could not record this %s as the change it asked about (plan %s): %s. act rollback cannot undo it; tell the person.", in.ToolName, id, why))}, nil
	}
	if err != nil {
		return nil, err
	}
	os.Remove(f)
	os.RemoveAll(home.Adopt(id))
	actionID, undo := door.Action(&gate.Decision{Verdict: gate.Promoted, Outcome: out}, e.Plan)
	return &postToolOutput{HookSpecificOutput: &postToolSpecific{HookEventName: "PostToolUse", AdditionalContext: fmt.Sprintf(
		"act recorded this %s as action %s (plan %s): it wrote exactly the change act asked about; undo: %s", in.ToolName, actionID, id, undo)}}, nil
}

// planWrites reports whether plan p changes the file a Write or Edit
// names (relative to cwd).
func planWrites(p *gate.Plan, path, cwd string) bool {
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
