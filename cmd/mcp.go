package cmd

// act mcp: the agent's door (docs/mcp.md). The rules of this file:
//
//   - Every tool goes through the same functions as the command line
//     (checkData, planChecked, promoteSaved, the gate): nothing here decides
//     whether an action may go ahead.
//   - The agent can never confirm: act_apply offers the gate an empty
//     approval, so whatever needs a person comes back queued and the plan
//     stays pending for `act apply PLAN_ID --confirm` at a terminal.
//     act_rollback is never forced. No tool takes a policy, a state dir or
//     a confirmation, and every input struct is closed (additionalProperties
//     false), so an extra argument such as confirm or force is refused by
//     the schema before a handler runs.
//   - An id is checked against its form (a plan id is 16 hex digits, an
//     action id a UUID) before it names any path.
//   - Errors are tool results (isError, with the rule, field, line, column
//     and message of --json), never protocol errors.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"runtime/debug"
	"slices"
	"strings"
	"sync"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/urfave/cli/v2"

	"github.com/act-project/act/diff"
	"github.com/act-project/act/doors/report"
	"github.com/act-project/act/gate"
	"github.com/act-project/act/internal/document"
	"github.com/act-project/act/internal/lifecycle"
	"github.com/act-project/act/internal/outcome"
	"github.com/act-project/act/internal/problem"
	"github.com/act-project/act/internal/redact"
	"github.com/act-project/act/internal/state"
	"github.com/act-project/act/plan"
	"github.com/act-project/act/policy"
	"github.com/act-project/act/rollback"
	"github.com/act-project/act/schema"
)

// mcpMaxFrame bounds one inbound JSON-RPC message of `act mcp`: a
// descriptor of document.MaxSize bytes fits even as a JSON string of
// escapes; a longer line is skipped unkept and answered with an error
// (mcp_stdio.go).
const mcpMaxFrame = 8 << 20

// mcpMaxDiff caps the unified diff act_plan returns (each file's diff is
// capped at plan.MaxTextDiff too).
const mcpMaxDiff = 64 << 10

// mcpDescriptorName is the name positions in a descriptor given to a tool
// use.
const mcpDescriptorName = "descriptor"

var actionIDRE = regexp.MustCompile(`^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$`)

func newMCPCommand(env *Env) *cli.Command {
	return &cli.Command{
		Name:      "mcp",
		Usage:     "serve the Model Context Protocol over stdio, for an agent",
		UsageText: "act mcp [--workspace DIR]...   (act [--home DIR] [--policy FILE] mcp [--workspace DIR]...)",
		Description: `Serves act's tools to an MCP client (an agent) over standard input and
   output: act_schema, act_validate, act_plan, act_apply, act_status and
   act_rollback. The agent can never confirm: an action that needs a person
   is left pending, and the answer is "queued" with the plan id; a person
   confirms it with "act apply PLAN_ID --confirm". The state directory and
   the policy are the ones --home and --policy (or their defaults) name;
   the policy is read again on every call, so an edit takes effect at once.
   --workspace DIR adds a workspace for this session, beside the policy's:
   a plan is LOW only when every change lies in one (docs/risk.md); nothing
   the agent sends can widen them. See docs/mcp.md.

EXAMPLES:
   act mcp
   claude mcp add act -- act mcp --workspace ~/src/project

` + endsWith("the client closed the session", 1, 2).help(),
		Flags: []cli.Flag{
			&cli.StringSliceFlag{Name: "workspace", Usage: "a workspace of this session, beside the policy's (a directory)"},
		},
		Action: func(c *cli.Context) error {
			if c.NArg() != 0 {
				return usagef("mcp takes no arguments, got %d", c.NArg())
			}
			if _, err := env.stateDir(); err != nil {
				return err
			}
			for _, w := range c.StringSlice("workspace") {
				if err := env.addWorkspace(w); err != nil {
					return err
				}
			}
			if os.Getenv("GOGC") == "" {
				// A long-running server of short calls: a heap of a few
				// times the live one (about 40 MiB in all) halves the
				// collector's share of each call's CPU.
				debug.SetGCPercent(400)
			}
			home, _ := env.stateDir()
			env.session = gate.NewSession(home)
			defer env.session.Close()
			s := newMCPServer(env)
			out := env.rawOut
			if out == nil {
				out = env.Stdio.Out
			}
			err := s.Run(c.Context, newMCPTransport(env.Stdio.In, out, env.Stdio.Err))
			if err != nil && !errors.Is(err, context.Canceled) && !isEOF(err) {
				return fmt.Errorf("mcp: %w", err)
			}
			return nil
		},
	}
}

// isEOF reports whether err is the end of the session: the client
// closed act's standard input.
func isEOF(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, os.ErrClosed)
}

// mcpServer serves act's tools over one environment: the state dir and
// the policy flags of `act mcp`, the clock and the id generator.
type mcpServer struct{ env *Env }

// newMCPServer returns the MCP server of env, its tools registered.
func newMCPServer(env *Env) *mcp.Server {
	env.caller = "mcp" // the door, in every record the server's calls write
	s := &mcpServer{env: env}
	srv := mcp.NewServer(&mcp.Implementation{Name: "act", Title: "act: validate, dry-run and apply an agent's actions", Version: Version},
		&mcp.ServerOptions{Instructions: mcpInstructions})
	f, t := false, true
	addTool(srv, &mcp.Tool{
		Name:        "act_schema",
		Title:       "Descriptor schema and guide",
		Description: "Returns the JSON Schema of an action descriptor and a short guide to writing one (what each field means, what makes act refuse one, an example per action type). Read it before writing your first descriptor.",
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, IdempotentHint: true, OpenWorldHint: &f},
	}, s.schema)
	addTool(srv, &mcp.Tool{
		Name:        "act_validate",
		Title:       "Validate a descriptor",
		Description: "Checks an action descriptor (a JSON object, or its YAML or JSON text) against the schema, act's rules and this host's policy, without side effects. Answers status (valid, invalid, blocked), the policy mode (allow, confirm, deny) and why, and every problem with its rule id, field, line, column and message: fix them and validate again.",
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, IdempotentHint: true, OpenWorldHint: &f},
	}, s.validate)
	addTool(srv, &mcp.Tool{
		Name:        "act_plan",
		Title:       "Dry-run a descriptor",
		Description: "Validates the descriptor, then dry-runs it into a copy-on-write layer (commands run in a sandbox): the real tree is not touched. Answers the plan id, every change with its mode, size and hash, a unified diff (capped), the command output (capped and redacted), the policy mode and why. A change the descriptor did not declare rejects the plan. Pass the plan id to act_apply. Each action_id may be planned max_runs times when it runs commands: give a new action a new action_id.",
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: false, DestructiveHint: &f, IdempotentHint: false, OpenWorldHint: &f},
	}, s.plan)
	addTool(srv, &mcp.Tool{
		Name:        "act_apply",
		Title:       "Apply a plan",
		Description: "Promotes a plan made by act_plan onto the real tree, all or nothing, if the host's policy, decided now, allows it without a person's confirmation. Otherwise nothing changes, the plan stays pending, and the answer is status \"queued\" with the plan id and the reasons: a person must confirm it at their terminal (act apply PLAN_ID --confirm); you cannot. Check later with act_status.",
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: false, DestructiveHint: &t, IdempotentHint: true, OpenWorldHint: &f},
	}, s.apply)
	addTool(srv, &mcp.Tool{
		Name:        "act_status",
		Title:       "Where a plan or action stands",
		Description: "Given a plan id (16 hex digits) or an action id (a UUID): its state (planned, pending, applied, rolled_back, expired), its changes and, for a plan not yet applied, what would still need a person's confirmation.",
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, IdempotentHint: true, OpenWorldHint: &f},
	}, s.status)
	addTool(srv, &mcp.Tool{
		Name:        "act_rollback",
		Title:       "Roll back an applied action",
		Description: "Restores what an applied action changed, all or nothing. It refuses, changing nothing, if any of those paths changed since the apply; then only a person can force it.",
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: false, DestructiveHint: &t, IdempotentHint: false, OpenWorldHint: &f},
	}, s.rollback)
	srv.AddReceivingMiddleware(publishDescriptorSchema, escapeToolText)
	return srv
}

// descriptorTools are the tools that take a descriptor: their published
// input schema holds the descriptor's JSON Schema.
var descriptorTools = []string{"act_validate", "act_plan"}

// publishDescriptorSchema answers tools/list with the real JSON Schema of
// the descriptor as the descriptor argument of act_validate and act_plan
// (or its YAML or JSON text), so a model writes one with no other fetch.
// The server itself accepts any object or string there: what does not
// match is answered by act's own checks, with their rule ids and
// positions, not by the SDK's schema validation.
func publishDescriptorSchema(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		res, err := next(ctx, method, req)
		lr, ok := res.(*mcp.ListToolsResult)
		if err != nil || !ok || method != "tools/list" {
			return res, err
		}
		in, serr := descriptorInputSchema()
		if serr != nil {
			return res, err
		}
		out := *lr
		out.Tools = make([]*mcp.Tool, len(lr.Tools))
		for i, t := range lr.Tools {
			if slices.Contains(descriptorTools, t.Name) {
				c := *t
				c.InputSchema = in
				t = &c
			}
			out.Tools[i] = t
		}
		return &out, nil
	}
}

var (
	descInputOnce   sync.Once
	descInputSchema map[string]any
	descInputErr    error
)

// descriptorInputSchema is the input schema of a tool that takes a
// descriptor: {descriptor}, the descriptor's JSON Schema (act schema
// --jsonschema, its definitions moved to the top) or a string.
func descriptorInputSchema() (map[string]any, error) {
	descInputOnce.Do(func() {
		b, err := schema.JSONSchema()
		if err != nil {
			descInputErr = err
			return
		}
		var d map[string]any
		if descInputErr = json.Unmarshal(b, &d); descInputErr != nil {
			return
		}
		defs, _ := d["$defs"].(map[string]any)
		delete(d, "$defs")
		delete(d, "$schema")
		defs["Descriptor"] = d
		descInputSchema = map[string]any{
			"type":                 "object",
			"additionalProperties": false,
			"required":             []any{"descriptor"},
			"properties": map[string]any{
				"descriptor": map[string]any{
					"description": "the action descriptor: a JSON object (the short form may leave out descriptor_version, action_id, created_at, created_by, sandbox_type, rollback_type and a file operation's effects: act fills them in), or its text in YAML or JSON (at most 1 MiB)",
					"anyOf": []any{
						map[string]any{"$ref": "#/$defs/Descriptor"},
						map[string]any{"type": "string", "description": "the descriptor as YAML or JSON text"},
					},
				},
			},
			"$defs": defs,
		}
	})
	return descInputSchema, descInputErr
}

const mcpInstructions = `act checks and carries out actions on this machine for you. Write an action descriptor (act_schema has the schema and a guide), check it with act_validate and fix every problem it names, dry-run it with act_plan, then promote the plan with act_apply. When the host's policy wants a person to confirm, act_apply answers "queued": tell the user the plan id and the reason; they confirm it at their terminal with "act apply PLAN_ID --confirm". You cannot confirm, deny or force anything.`

// addTool registers a typed tool whose input schema is inferred from In,
// then tightened: the descriptor is an object or a string, ids have their
// form.
func addTool[In, Out any](srv *mcp.Server, t *mcp.Tool, h mcp.ToolHandlerFor[In, Out]) {
	in, err := jsonschema.For[In](nil)
	if err != nil {
		panic(fmt.Sprintf("tool %s: %v", t.Name, err))
	}
	if p := in.Properties["descriptor"]; p != nil {
		p.Types = []string{"object", "string"}
	}
	if p := in.Properties["plan_id"]; p != nil {
		p.Pattern = "^[0-9a-f]{16}$"
	}
	if p := in.Properties["action_id"]; p != nil {
		p.Pattern = actionIDRE.String()
	}
	if p := in.Properties["id"]; p != nil {
		p.Pattern = "^([0-9a-f]{16}|" + strings.Trim(actionIDRE.String(), "^$") + ")$"
	}
	t.InputSchema = in
	mcp.AddTool(srv, t, h)
}

// The tools' inputs. Each is closed: an argument not listed is refused.
type (
	noInput         struct{}
	descriptorInput struct {
		Descriptor any `json:"descriptor" jsonschema:"the action descriptor: a JSON object, or its text in YAML or JSON (at most 1 MiB)"`
	}
	planIDInput struct {
		PlanID string `json:"plan_id" jsonschema:"the plan id act_plan returned: 16 lowercase hex digits"`
	}
	statusInput struct {
		ID string `json:"id" jsonschema:"a plan id (16 hex digits) or an action id (the descriptor's action_id, a UUID)"`
	}
	actionIDInput struct {
		ActionID string `json:"action_id" jsonschema:"the action_id of an applied action (a UUID)"`
	}
)

// toolOutput is every tool's structured answer: the fields of --json, and
// what a plan shows on the command line.
type toolOutput struct {
	Status     string `json:"status" jsonschema:"the outcome: valid, planned, succeeded, already_applied, rolled_back, queued, ok; or invalid, blocked, failed, rejected, expired, not_found, error"`
	ExitCode   int    `json:"exit_code" jsonschema:"the exit code the command line would give (docs/exit-codes.md)"`
	ActionID   string `json:"action_id,omitempty"`
	PlanID     string `json:"plan_id,omitempty"`
	ActionType string `json:"action_type,omitempty"`
	RiskLevel  string `json:"risk_level,omitempty" jsonschema:"the risk the descriptor declares"`
	Mode       string `json:"mode,omitempty" jsonschema:"the host policy's mode for this action: allow, confirm or deny"`
	ModeSource string `json:"mode_source,omitempty"`
	Reason     string `json:"reason,omitempty" jsonschema:"why: the policy's reason, or why a person must confirm"`
	// Risk is act's own assessment next to the declared one.
	Risk *gate.Risk `json:"risk,omitempty"`
	// State is where a plan or action stands (act_status).
	State string `json:"state,omitempty" jsonschema:"planned, pending, applied, rolled_back or expired"`
	// NeedsConfirmation lists why a person must confirm before the plan is
	// applied; empty when act_apply would apply it now.
	NeedsConfirmation []string        `json:"needs_confirmation,omitempty"`
	Changes           []diff.Change   `json:"changes,omitempty"`
	Summary           *report.Summary `json:"summary,omitempty"`
	Diff              string          `json:"diff,omitempty" jsonschema:"the unified diff of the text files the plan changes"`
	DiffCut           bool            `json:"diff_cut,omitempty" jsonschema:"true when the diff was cut at 64 KiB"`
	Commands          []toolCommand   `json:"commands,omitempty"`
	// Content is what an applied FILE_READ read (each file's, in step
	// order), redacted as command output is.
	Content    string        `json:"content,omitempty" jsonschema:"what an applied FILE_READ read: the file's text, secrets redacted, at most 1 MiB per file"`
	ContentCut bool          `json:"content_cut,omitempty" jsonschema:"true when a file read was longer than 1 MiB and content holds only its start"`
	Errors     []jsonProblem `json:"errors"`
	Warnings   []jsonProblem `json:"warnings"`
	Next       string        `json:"next,omitempty" jsonschema:"what to do next"`
}

// toolCommand is a command the dry run ran in the sandbox, its output
// capped and redacted.
type toolCommand struct {
	Argv      []string `json:"argv"`
	ExitCode  int      `json:"exit_code"`
	Signal    string   `json:"signal,omitempty"`
	CapHit    string   `json:"cap_hit,omitempty"`
	Stdout    string   `json:"stdout"`
	Stderr    string   `json:"stderr"`
	OutputCut bool     `json:"output_cut,omitempty"`
	WallMs    int64    `json:"wall_ms"`
}

// schemaOutput is act_schema's answer.
type schemaOutput struct {
	JSONSchema any    `json:"json_schema" jsonschema:"the descriptor's JSON Schema (draft 2020-12)"`
	Guide      string `json:"guide" jsonschema:"how to write a descriptor act accepts"`
}

// answer turns a command's result and error into a tool result, as finish
// does for --json: the status, exit code and errors of the same table.
// Only a refusal or an error is isError; queued is an answer, not an error.
func (s *mcpServer) answer(tool string, res *result, success string, err error) (*mcp.CallToolResult, toolOutput, error) {
	o := outcomeOf(err)
	code := o.Code
	out := toolOutput{
		Status: statusOf(o, success), ExitCode: code,
		ActionID: res.ActionID, PlanID: res.PlanID, ActionType: res.ActionType, RiskLevel: res.RiskLevel,
		Mode: res.Mode, ModeSource: res.ModeSource, Reason: res.Reason, Risk: res.Risk,
		Changes: res.Changes, Summary: res.Summary,
		Errors: []jsonProblem{}, Warnings: append([]jsonProblem{}, res.Warnings...),
	}
	var probs problem.List
	var le *policy.LoadError
	switch {
	case errors.As(err, &probs):
		out.Errors = append(out.Errors, probs...)
	case errors.As(err, &le) && len(le.Problems) > 0:
		out.Errors = append(out.Errors, le.Problems...)
	case err != nil:
		out.Errors = append(out.Errors, jsonProblem{Rule: ruleOf(o), Message: err.Error()})
	}
	// One line per call on stderr, which MCP clients keep in their logs.
	// One write, so that concurrent calls do not interleave their lines.
	line := "act: mcp: " + tool
	if res.ActionID != "" {
		line += " action " + res.ActionID
	}
	if res.PlanID != "" {
		line += " plan " + res.PlanID
	}
	io.WriteString(s.env.Stdio.Err, line+": "+out.Status+"\n")
	return &mcp.CallToolResult{IsError: code != outcome.OK.Code && out.Status != outcome.Queued.Status}, out, nil
}

// home is the state dir of this server.
func (s *mcpServer) home() (state.Dir, error) {
	dir, err := s.env.stateDir()
	return state.Dir{Root: dir}, err
}

func (s *mcpServer) schema(ctx context.Context, _ *mcp.CallToolRequest, _ noInput) (*mcp.CallToolResult, schemaOutput, error) {
	b, err := schema.JSONSchema()
	if err != nil {
		return nil, schemaOutput{}, err
	}
	var js any
	if err := json.Unmarshal(b, &js); err != nil {
		return nil, schemaOutput{}, err
	}
	return nil, schemaOutput{JSONSchema: js, Guide: mcpGuide}, nil
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
		return nil, problem.List{{Rule: "parse.syntax", Field: mcpDescriptorName, File: mcpDescriptorName, Layer: problem.Parse,
			Message: fmt.Sprintf("the descriptor must be an object or its YAML or JSON text, not %T", v)}}
	}
	if len(data) > document.MaxSize+1 {
		data = data[:document.MaxSize+1]
	}
	return data, nil
}

// checkDescriptor runs validate's checks on the descriptor argument under
// the policy as it is now.
func (s *mcpServer) checkDescriptor(ctx context.Context, res *result, v any, acting bool) (*checked, error) {
	data, err := descriptorBytes(v)
	if err != nil {
		return nil, err
	}
	pol, err := s.env.loadPolicy(res)
	if err != nil {
		return nil, err
	}
	return s.env.checkData(ctx, res, pol, mcpDescriptorName, data, acting)
}

func (s *mcpServer) validate(ctx context.Context, _ *mcp.CallToolRequest, in descriptorInput) (*mcp.CallToolResult, toolOutput, error) {
	res := &result{}
	_, err := s.checkDescriptor(ctx, res, in.Descriptor, false)
	r, out, err := s.answer("act_validate", res, outcome.Valid.Status, err)
	if out.ExitCode == outcome.OK.Code {
		out.Next = "act_plan this descriptor"
	}
	return r, out, err
}

func (s *mcpServer) plan(ctx context.Context, req *mcp.CallToolRequest, in descriptorInput) (*mcp.CallToolResult, toolOutput, error) {
	res := &result{}
	ck, err := s.checkDescriptor(ctx, res, in.Descriptor, true)
	defer ck.release()
	var p *plan.Plan
	if err == nil && req != nil && req.Params != nil && req.Session != nil {
		// A client that asks for progress sees the commands' output as
		// it comes.
		if token := req.Params.GetProgressToken(); token != nil {
			ck.progress = mcpProgress(ctx, req.Session, token)
		}
	}
	if err == nil {
		p, err = planChecked(ctx, s.env, res, ck)
	}
	r, out, err := s.answer("act_plan", res, outcome.Planned.Status, err)
	if p != nil {
		home, _ := s.home()
		out.Diff, out.DiffCut = planDiff(home.Root, p)
		for _, c := range p.Commands {
			out.Commands = append(out.Commands, toolCommand{Argv: c.Argv, ExitCode: c.ExitCode, Signal: c.Signal, CapHit: c.CapHit,
				Stdout: c.Stdout, Stderr: c.Stderr, OutputCut: c.StdoutCut || c.StderrCut, WallMs: c.WallMs})
		}
		out.Next = fmt.Sprintf("act_apply with plan_id %s", p.ID)
	}
	return r, out, err
}

// planDiff is the unified diff of p's text files, capped at mcpMaxDiff.
func planDiff(stateDir string, p *plan.Plan) (string, bool) {
	var b strings.Builder
	cut := false
	for i, d := range plan.TextDiffs(stateDir, p) {
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
				part += fmt.Sprintf("# diff of %s cut at %d bytes\n", p.Changes[i].Path, plan.MaxTextDiff)
				cut = true
			}
		}
		if b.Len()+len(part) > mcpMaxDiff {
			return b.String(), true
		}
		b.WriteString(part)
	}
	return b.String(), cut
}

func (s *mcpServer) apply(ctx context.Context, _ *mcp.CallToolRequest, in planIDInput) (*mcp.CallToolResult, toolOutput, error) {
	res := &result{}
	e, g, err := s.loadPlan(res, in.PlanID)
	var p *plan.Plan
	var out *rollback.Outcome
	var reads []gate.ReadOut
	if err == nil {
		p = e.Plan
		// The agent's approval is always the empty one: a plan that needs
		// a person is queued, never promoted.
		out, reads, err = promoteSaved(ctx, res, g, p, planLocator(p), gate.Approval{}, nil, nil)
		if err == nil && out != nil && !out.AlreadyApplied {
			s.env.witnessAfter(g.Policy) // audit.witness_after: bounded, never failing the call
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
		o.Next = fmt.Sprintf("a person must confirm this at their terminal: %s (you cannot); check with act_status", s.env.actLine("apply", p.ID, "--confirm"))
	case o.ExitCode == outcome.OK.Code && p != nil && len(p.Changes) == 0:
		// A read (or an action that found nothing to change): nothing
		// to undo.
		o.State = string(lifecycle.Applied)
		if len(reads) > 0 {
			o.Content, o.ContentCut = readContent(reads, g.Policy.Redact.PII)
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

// readContent is what FILE_READs read, as act_apply returns it: each
// file's first plan.MaxReadContent bytes, redacted as command output is
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

// loadPlan loads the saved plan id (checked to be a plan id first) from
// the gate's store, under the policy now.
func (s *mcpServer) loadPlan(res *result, id string) (*gate.Entry, *gate.Gate, error) {
	if !plan.IsID(id) {
		return nil, nil, fmt.Errorf("%q is not a plan id (16 lowercase hex digits): %w", id, plan.ErrNotFound)
	}
	pol, err := s.env.loadPolicy(res)
	if err != nil {
		return nil, nil, err
	}
	g := s.env.gate(pol)
	e, err := g.Load(id)
	if err != nil {
		return nil, nil, err
	}
	fillPlan(res, e.Plan)
	return e, g, nil
}

func (s *mcpServer) status(ctx context.Context, _ *mcp.CallToolRequest, in statusInput) (*mcp.CallToolResult, toolOutput, error) {
	res := &result{}
	if actionIDRE.MatchString(in.ID) {
		home, err := s.home()
		var a *rollback.Action
		if err == nil {
			a, err = rollback.LoadAction(home, in.ID)
		}
		if err != nil {
			return s.answer("act_status", res, "ok", err)
		}
		res.ActionID, res.PlanID, res.ActionType, res.Changes = a.ActionID, a.PlanID, a.ActionType, a.Changes
		res.Summary = report.SummaryOf(a.Changes)
		r, out, err := s.answer("act_status", res, "ok", nil)
		out.State = string(a.State)
		return r, out, err
	}
	e, g, err := s.loadPlan(res, in.ID)
	if err != nil {
		if errors.Is(err, plan.ErrNotFound) && !plan.IsID(in.ID) {
			err = fmt.Errorf("%q is neither a plan id (16 hex digits) nor an action id (a UUID): %w", in.ID, plan.ErrNotFound)
		}
		return s.answer("act_status", res, "ok", err)
	}
	p := e.Plan
	st := string(e.State)
	var why []string
	if e.State == lifecycle.Expired {
		res.Warnings = append(res.Warnings, jsonProblem{Rule: gate.RuleExpired, Message: (&gate.ExpiredError{
			PlanID: p.ID, Age: -g.Left(p) + g.Policy.PlanExpiry, Expiry: g.Policy.PlanExpiry}).Error()})
	}
	if e.State.Waiting() {
		// Where it stands is the gate's answer now: blocked, or what a
		// person would still have to confirm.
		adm, aerr := g.Admit(e)
		var probs problem.List
		switch {
		case errors.As(aerr, &probs):
			res.Warnings = append(res.Warnings, planLocator(p)(probs)...)
		case aerr != nil:
			res.Warnings = append(res.Warnings, jsonProblem{Rule: "error", Message: aerr.Error()})
		}
		if adm != nil {
			res.Mode, res.ModeSource, res.Reason = string(adm.Decision.Mode), adm.Decision.Source, adm.Decision.Reason
			res.Risk = &adm.Risk
			why = adm.Confirm
		}
	}
	r, out, err := s.answer("act_status", res, "ok", nil)
	out.State, out.NeedsConfirmation = st, why
	if st == string(lifecycle.Pending) || len(why) > 0 && st == string(lifecycle.Planned) {
		out.Next = "waiting for a person: " + s.env.actLine("apply", p.ID, "--confirm")
	}
	return r, out, err
}

func (s *mcpServer) rollback(ctx context.Context, _ *mcp.CallToolRequest, in actionIDInput) (*mcp.CallToolResult, toolOutput, error) {
	res := &result{ActionID: in.ActionID}
	if !actionIDRE.MatchString(in.ActionID) {
		return s.answer("act_rollback", res, outcome.RolledBack.Status, fmt.Errorf("%q is not an action id (a UUID): %w", in.ActionID, plan.ErrNotFound))
	}
	pol, err := s.env.loadPolicy(res)
	var out *rollback.Outcome
	if err == nil {
		// Never forced, with no approval: forcing is a person's.
		out, err = s.env.gate(pol).Rollback(ctx, in.ActionID, false, gate.Approval{}, nil, nil)
		if err == nil {
			s.env.witnessAfter(pol) // audit.witness_after: bounded, never failing the call
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
