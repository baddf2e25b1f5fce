package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/act-project/act/doors"
	"github.com/act-project/act/doors/report"
	"github.com/act-project/act/gate"
	"github.com/act-project/act/internal/document"
	"github.com/act-project/act/internal/lifecycle"
	"github.com/act-project/act/internal/outcome"
	"github.com/act-project/act/internal/problem"
	"github.com/act-project/act/internal/redact"
	"github.com/act-project/act/internal/state"
	"github.com/act-project/act/schema"
)

// The tools: each translates its input into the gate's session API and
// the gate's answer into the --json document (report.Result, answer).

func (s *server) schema(ctx context.Context, _ *mcp.CallToolRequest, _ noInput) (*mcp.CallToolResult, schemaOutput, error) {
	b, err := schema.JSONSchema()
	if err != nil {
		return nil, schemaOutput{}, err
	}
	var js any
	if err := json.Unmarshal(b, &js); err != nil {
		return nil, schemaOutput{}, err
	}
	return nil, schemaOutput{JSONSchema: js, Guide: guide}, nil
}

// descriptorBytes is the descriptor argument as text: a string as given,
// an object as JSON. Anything bigger than document.MaxSize is cut just past
// it, so that the parser refuses it as the command line does.
func descriptorBytes(v any) ([]byte, error) {
	var data []byte
	switch d := v.(type) {
	case string:
		data = []byte(d)
	case map[string]any:
		b, err := json.MarshalIndent(d, "", "  ")
		if err != nil {
			return nil, fmt.Errorf("descriptor: %w", err)
		}
		data = b
	default:
		return nil, problem.List{{Rule: "parse.syntax", Field: descriptorName, File: descriptorName, Layer: problem.Parse,
			Message: fmt.Sprintf("the descriptor must be an object or its YAML or JSON text, not %T", v)}}
	}
	if len(data) > document.MaxSize+1 {
		data = data[:document.MaxSize+1]
	}
	return data, nil
}

// check runs the gate's checks (parse, schema, rules, policy: gate.Check)
// on the descriptor argument under the policy as it is now, filling res.
// The door it returns is the call's.
func (s *server) check(ctx context.Context, res *report.Result, v any, acting bool) (*doors.Door, *gate.Checked, error) {
	data, err := descriptorBytes(v)
	if err != nil {
		return nil, nil, err
	}
	door, err := s.door(ctx)
	if err != nil {
		return nil, nil, err
	}
	res.File = descriptorName
	ck, err := door.Gate.Check(ctx, descriptorName, data, acting)
	res.FillChecked(ck)
	if err != nil {
		return nil, nil, err
	}
	return door, ck, nil
}

func (s *server) validate(ctx context.Context, _ *mcp.CallToolRequest, in descriptorInput) (*mcp.CallToolResult, toolOutput, error) {
	res := &report.Result{}
	_, _, err := s.check(ctx, res, in.Descriptor, false)
	r, out, err := s.answer("act_validate", res, outcome.Valid.Status, err)
	if out.ExitCode == outcome.OK.Code {
		out.Next = "act_plan this descriptor"
	}
	return r, out, err
}

func (s *server) plan(ctx context.Context, req *mcp.CallToolRequest, in descriptorInput) (*mcp.CallToolResult, toolOutput, error) {
	res := &report.Result{}
	door, ck, err := s.check(ctx, res, in.Descriptor, true)
	defer ck.Release()
	var p *gate.Plan
	if err == nil {
		// A client that asks for progress sees the commands' output as
		// it comes.
		var progress func(stream int, line string)
		if req != nil && req.Params != nil && req.Session != nil {
			if token := req.Params.GetProgressToken(); token != nil {
				progress = notifyProgress(ctx, req.Session, token)
			}
		}
		var pre *gate.PrePlan
		p, pre, err = door.Gate.PlanChecked(ctx, ck, gate.PlanOptions{File: res.File, Progress: progress})
		if err == nil {
			res.FillPlan(p)
			res.Warnings = ck.Locate(res.Warnings)
			res.PlanWarnings(p, pre)
		}
	}
	r, out, err := s.answer("act_plan", res, outcome.Planned.Status, err)
	if p != nil {
		out.Diff, out.DiffCut = planDiff(s.host.Home(), p)
		for _, c := range p.Commands {
			out.Commands = append(out.Commands, toolCommand{Argv: c.Argv, ExitCode: c.ExitCode, Signal: c.Signal, CapHit: c.CapHit,
				Stdout: c.Stdout, Stderr: c.Stderr, OutputCut: c.StdoutCut || c.StderrCut, WallMs: c.WallMs})
		}
		out.Next = fmt.Sprintf("act_apply with plan_id %s", p.ID)
	}
	return r, out, err
}

// planDiff is the unified diff of p's text files, capped at maxDiff.
func planDiff(home state.Dir, p *gate.Plan) (string, bool) {
	var b strings.Builder
	cut := false
	for i, d := range gate.TextDiffs(home, p) {
		var part string
		switch {
		case d.Err != nil:
			part = fmt.Sprintf("# %s: no diff: %v\n", p.Changes[i].Path, d.Err)
		case d.Binary:
			part = fmt.Sprintf("# %s: binary file, compared by size and sha256\n", p.Changes[i].Path)
		case d.Text != "":
			part = d.Text
			if !strings.HasSuffix(part, "\n") {
				part += "\n"
			}
			if d.Cut {
				part += fmt.Sprintf("# diff of %s cut at %d bytes\n", p.Changes[i].Path, gate.MaxTextDiff)
				cut = true
			}
		}
		if b.Len()+len(part) > maxDiff {
			return b.String(), true
		}
		b.WriteString(part)
	}
	return b.String(), cut
}

func (s *server) apply(ctx context.Context, _ *mcp.CallToolRequest, in planIDInput) (*mcp.CallToolResult, toolOutput, error) {
	res := &report.Result{}
	door, e, err := s.load(ctx, res, in.PlanID)
	var p *gate.Plan
	var out *gate.Outcome
	var reads []gate.ReadOut
	if err == nil {
		p = e.Plan
		// The agent's approval is always the empty one: a plan that needs
		// a person is queued, never promoted.
		out, reads, err = applyPlan(ctx, res, door.Gate, e)
		if err == nil && out != nil && door.Promoted != nil {
			door.Promoted(out) // audit.witness_after: bounded, never failing the call
		}
	}
	success := outcome.Succeeded.Status
	if err == nil && out.AlreadyApplied {
		success = outcome.AlreadyApplied.Status
	}
	r, o, err := s.answer("act_apply", res, success, err)
	switch {
	case o.Status == outcome.Queued.Status:
		o.State = string(lifecycle.Pending)
		o.Next = fmt.Sprintf("a person must confirm this at their terminal: %s (you cannot); check with act_status", door.ActLine("apply", p.ID, "--confirm"))
	case o.ExitCode == outcome.OK.Code && p != nil && len(p.Changes) == 0:
		// A read (or an action that found nothing to change): nothing
		// to undo.
		o.State = string(lifecycle.Applied)
		if len(reads) > 0 {
			o.Content, o.ContentCut = readContent(reads, door.Gate.Policy.Redact.PII)
			o.Next = "done: the file's content is in content; it changed nothing, so there is nothing to roll back"
		} else {
			o.Next = "done: it changed nothing, so there is nothing to roll back"
		}
	case o.ExitCode == outcome.OK.Code && p != nil:
		o.State = string(lifecycle.Applied)
		o.Next = fmt.Sprintf("act_rollback with action_id %s undoes it", p.ActionID)
	}
	return r, o, err
}

// applyPlan is the gate's apply of saved plan e (gate.Apply) with the
// agent's approval, the empty one: res gets the policy's decision now and,
// when queued, why. A block or a change list the descriptor does not
// allow is placed in the descriptor's file (report.PlanLocator); a
// conflict is of the tree, not of it.
func applyPlan(ctx context.Context, res *report.Result, g *gate.Gate, e *gate.Entry) (*gate.Outcome, []gate.ReadOut, error) {
	adm, out, err := g.Apply(ctx, e, gate.Approval{}, nil, nil)
	var reads []gate.ReadOut
	if adm != nil {
		reads = adm.Reads
	}
	res.FillAdmission(adm)
	// The gate's typed outcomes (expired, queued, reverted) carry their
	// own exit code and status (outcome.Of).
	var need *gate.ConfirmationRequired
	var probs problem.List
	switch {
	case errors.As(err, &need):
		res.Reason = strings.Join(need.Why, "; ")
	case errors.As(err, &probs) && probs.Layer() != problem.Conflict:
		return out, reads, report.PlanLocator(e.Plan)(probs)
	}
	return out, reads, err
}

// readContent is what FILE_READs read, as act_apply returns it: each
// file's first gate.MaxReadContent bytes, redacted as command output is
// (secrets; personal data too when pii), invalid UTF-8 replaced, files
// after the first each under a "==> PATH <==" line. cut reports a file
// longer than what was kept.
func readContent(reads []gate.ReadOut, pii bool) (content string, cut bool) {
	var b strings.Builder
	for i, r := range reads {
		if len(reads) > 1 {
			if i > 0 {
				b.WriteString("\n")
			}
			fmt.Fprintf(&b, "==> %s <==\n", r.Path)
		}
		text := strings.ToValidUTF8(string(r.Content), "\uFFFD")
		if pii {
			text = redact.PII(text)
		} else {
			text = redact.String(text)
		}
		b.WriteString(text)
		cut = cut || r.Truncated
	}
	return b.String(), cut
}

// load is the saved plan id (checked to be a plan id first) as the gate
// holds it now, with the call's door, under the policy now.
func (s *server) load(ctx context.Context, res *report.Result, id string) (*doors.Door, *gate.Entry, error) {
	if !gate.IsPlanID(id) {
		return nil, nil, fmt.Errorf("%q is not a plan id (16 lowercase hex digits): %w", id, gate.ErrNotFound)
	}
	door, err := s.door(ctx)
	if err != nil {
		return nil, nil, err
	}
	e, err := door.Gate.Load(id)
	if err != nil {
		return nil, nil, err
	}
	res.FillPlan(e.Plan)
	return door, e, nil
}

func (s *server) status(ctx context.Context, _ *mcp.CallToolRequest, in statusInput) (*mcp.CallToolResult, toolOutput, error) {
	res := &report.Result{}
	if actionIDRE().MatchString(in.ID) {
		a, err := gate.LoadAction(s.host.Home(), in.ID)
		if err != nil {
			return s.answer("act_status", res, "ok", err)
		}
		res.ActionID, res.PlanID, res.ActionType, res.Changes = a.ActionID, a.PlanID, a.ActionType, a.Changes
		res.Summary = report.SummaryOf(a.Changes)
		r, out, err := s.answer("act_status", res, "ok", nil)
		out.State = string(a.State)
		return r, out, err
	}
	door, e, err := s.load(ctx, res, in.ID)
	if err != nil {
		if errors.Is(err, gate.ErrNotFound) && !gate.IsPlanID(in.ID) {
			err = fmt.Errorf("%q is neither a plan id (16 hex digits) nor an action id (a UUID): %w", in.ID, gate.ErrNotFound)
		}
		return s.answer("act_status", res, "ok", err)
	}
	g, p := door.Gate, e.Plan
	st := string(e.State)
	var why []string
	if e.State == lifecycle.Expired {
		res.Warnings = append(res.Warnings, problem.Problem{Rule: gate.RuleExpired, Message: (&gate.ExpiredError{
			PlanID: p.ID, Age: -g.Left(p) + g.Policy.PlanExpiry, Expiry: g.Policy.PlanExpiry}).Error()})
	}
	if e.State.Waiting() {
		// Where it stands is the gate's answer now: blocked, or what a
		// person would still have to confirm. A look: nothing recorded.
		adm, aerr := g.Admit(e)
		var probs problem.List
		switch {
		case errors.As(aerr, &probs):
			res.Warnings = append(res.Warnings, report.PlanLocator(p)(probs)...)
		case aerr != nil:
			res.Warnings = append(res.Warnings, problem.Problem{Rule: "error", Message: aerr.Error()})
		}
		if adm != nil {
			res.FillAdmission(adm)
			why = adm.Confirm
		}
	}
	r, out, err := s.answer("act_status", res, "ok", nil)
	out.State, out.NeedsConfirmation = st, why
	if st == string(lifecycle.Pending) || len(why) > 0 && st == string(lifecycle.Planned) {
		out.Next = "waiting for a person: " + door.ActLine("apply", p.ID, "--confirm")
	}
	return r, out, err
}

func (s *server) rollback(ctx context.Context, _ *mcp.CallToolRequest, in actionIDInput) (*mcp.CallToolResult, toolOutput, error) {
	res := &report.Result{ActionID: in.ActionID}
	if !actionIDRE().MatchString(in.ActionID) {
		return s.answer("act_rollback", res, outcome.RolledBack.Status, fmt.Errorf("%q is not an action id (a UUID): %w", in.ActionID, gate.ErrNotFound))
	}
	door, err := s.door(ctx)
	var out *gate.Outcome
	if err == nil {
		// Never forced, with no approval: forcing is a person's.
		out, err = door.Gate.Rollback(ctx, in.ActionID, false, gate.Approval{}, nil, nil)
		if err == nil && out != nil && door.Promoted != nil {
			// What follows a promotion follows a rollback too: the
			// recoveries it made, audit.witness_after (bounded, never
			// failing the call).
			door.Promoted(out)
		}
	}
	if out != nil && out.Action != nil {
		res.PlanID, res.ActionType, res.Changes = out.Action.PlanID, out.Action.ActionType, out.Action.Changes
	}
	r, o, err := s.answer("act_rollback", res, outcome.RolledBack.Status, err)
	if o.ExitCode == outcome.OK.Code {
		o.State = string(lifecycle.RolledBack)
	}
	return r, o, err
}
