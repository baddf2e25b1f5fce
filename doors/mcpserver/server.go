// Package mcpserver is act's door for an agent over the Model Context
// Protocol (act mcp, docs/mcp.md): it translates the tools' calls into
// the gate's session API and renders the gate's answers as the CLI's
// --json document (package report), every text a model reads escaped by
// package review. cmd gives it the process (a [Host]) and serves it on
// standard input and output ([Serve]). The rules of this package:
//
//   - Every tool asks the gate (gate.Check, gate.PlanChecked, gate.Apply,
//     gate.Rollback, gate.Load and Admit for a look), under the host
//     policy as it is at that call (Host.Door): nothing here decides
//     whether an action may go ahead, and nothing here loads a plan or
//     starts a sandbox but through the gate.
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
package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/act-project/act/diff"
	"github.com/act-project/act/doors"
	"github.com/act-project/act/doors/report"
	"github.com/act-project/act/gate"
	"github.com/act-project/act/internal/outcome"
	"github.com/act-project/act/internal/problem"
	"github.com/act-project/act/internal/state"
	"github.com/act-project/act/internal/timings"
	"github.com/act-project/act/policy"
	"github.com/act-project/act/review"
	"github.com/act-project/act/schema"
)

// Caller is this door's name in every record its calls write
// (gate.Gate.Caller).
const Caller = "mcp"

// A Host is what the server needs of the act process that runs it.
type Host interface {
	// Door is the door of one tool call: a gate under the host policy as
	// it is now — read again on every call, so that a person's edit
	// holds from the next call on — with this session's workspaces, the
	// clock and act's command lines (naming the state dir); Promoted is
	// told of each promotion and rollback the call made. Its error is the
	// policy's (a file that does not load). The server names itself in
	// the gate's records (Caller).
	Door(ctx context.Context) (*doors.Door, error)
	// Home is the state directory of the session.
	Home() state.Dir
}

// Options are what the server shows of itself.
type Options struct {
	// Version is act's, in the server's implementation info.
	Version string
	// Log is standard error, which MCP clients keep as the server's log:
	// one line per call, and each message the framing refused. Nil
	// discards them.
	Log io.Writer
	// Timings adds to every tool's answer the phases of its call with
	// their wall times (act --timings mcp; docs/timings.md).
	Timings bool
}

// maxFrame bounds one inbound JSON-RPC message of `act mcp`: a
// descriptor of document.MaxSize bytes fits even as a JSON string of
// escapes; a longer line is skipped unkept and answered with an error
// (stdio.go).
const maxFrame = 8 << 20

// maxDiff caps the unified diff act_plan returns (each file's diff is
// capped at gate.MaxTextDiff too).
const maxDiff = 64 << 10

// descriptorName is the name positions in a descriptor given to a tool
// use.
const descriptorName = "descriptor"

var actionIDRE = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$`)
})

// Serve serves act's tools to the client on in and out (the process's
// standard input and raw standard output: JSON-RPC is data, not text for
// a terminal) until the session ends: the client closed in, or ctx was
// cancelled, neither of which is an error.
func Serve(ctx context.Context, host Host, in io.Reader, out io.Writer, o Options) error {
	err := New(host, o).Run(ctx, NewTransport(in, out, o.Log))
	if err != nil && !errors.Is(err, context.Canceled) && !isEOF(err) {
		return err
	}
	return nil
}

// isEOF reports whether err is the end of the session: the client
// closed act's standard input.
func isEOF(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, os.ErrClosed)
}

// server serves act's tools over one host.
type server struct {
	host    Host
	log     io.Writer
	timings bool
}

// door is the host's door for one call, naming this door in its records.
func (s *server) door(ctx context.Context) (*doors.Door, error) {
	d, err := s.host.Door(ctx)
	if err != nil {
		return nil, err
	}
	d.Gate.Caller = Caller
	return d, nil
}

// New returns the MCP server of act's tools over host, its tools
// registered, for a transport of the caller's (NewTransport on stdio).
func New(host Host, o Options) *mcp.Server {
	s := &server{host: host, log: o.Log, timings: o.Timings}
	if s.log == nil {
		s.log = io.Discard
	}
	srv := mcp.NewServer(&mcp.Implementation{Name: "act", Title: "act: validate, dry-run and apply an agent's actions", Version: o.Version},
		&mcp.ServerOptions{Instructions: instructions})
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
	}, timed(s, s.validate))
	addTool(srv, &mcp.Tool{
		Name:        "act_plan",
		Title:       "Dry-run a descriptor",
		Description: "Validates the descriptor, then dry-runs it into a copy-on-write layer (commands run in a sandbox): the real tree is not touched. Answers the plan id, every change with its mode, size and hash, a unified diff (capped), the command output (capped and redacted), the policy mode and why. A change the descriptor did not declare rejects the plan. Pass the plan id to act_apply. Each action_id may be planned max_runs times when it runs commands: give a new action a new action_id.",
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: false, DestructiveHint: &f, IdempotentHint: false, OpenWorldHint: &f},
	}, timed(s, s.plan))
	addTool(srv, &mcp.Tool{
		Name:        "act_apply",
		Title:       "Apply a plan",
		Description: "Promotes a plan made by act_plan onto the real tree, all or nothing, if the host's policy, decided now, allows it without a person's confirmation. Otherwise nothing changes, the plan stays pending, and the answer is status \"queued\" with the plan id and the reasons: a person must confirm it at their terminal (act apply PLAN_ID --confirm); you cannot. Check later with act_status.",
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: false, DestructiveHint: &t, IdempotentHint: true, OpenWorldHint: &f},
	}, timed(s, s.apply))
	addTool(srv, &mcp.Tool{
		Name:        "act_status",
		Title:       "Where a plan or action stands",
		Description: "Given a plan id (16 hex digits) or an action id (a UUID): its state (planned, pending, applied, rolled_back, expired), its changes and, for a plan not yet applied, what would still need a person's confirmation.",
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, IdempotentHint: true, OpenWorldHint: &f},
	}, timed(s, s.status))
	addTool(srv, &mcp.Tool{
		Name:        "act_rollback",
		Title:       "Roll back an applied action",
		Description: "Restores what an applied action changed, all or nothing. It refuses, changing nothing, if any of those paths changed since the apply; then only a person can force it.",
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: false, DestructiveHint: &t, IdempotentHint: false, OpenWorldHint: &f},
	}, timed(s, s.rollback))
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
					"description": "the action descriptor: a JSON object (the short form needs only intent_summary, action_type and operation: act fills in the rest from the operation and the host policy), or its text in YAML or JSON (at most 1 MiB)",
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

const instructions = `act checks and carries out actions on this machine for you. Write an action descriptor (act_schema has the schema and a guide), check it with act_validate and fix every problem it names, dry-run it with act_plan, then promote the plan with act_apply. When the host's policy wants a person to confirm, act_apply answers "queued": tell the user the plan id and the reason; they confirm it at their terminal with "act apply PLAN_ID --confirm". You cannot confirm, deny or force anything.`

// timed is h, with Options.Timings its call timed: its phases, from the
// call's start, in the answer's timings.
func timed[In any](s *server, h mcp.ToolHandlerFor[In, toolOutput]) mcp.ToolHandlerFor[In, toolOutput] {
	if !s.timings {
		return h
	}
	return func(ctx context.Context, req *mcp.CallToolRequest, in In) (*mcp.CallToolResult, toolOutput, error) {
		r := timings.New(time.Now())
		res, out, err := h(timings.With(ctx, r), req, in)
		out.Timings = r.Phases()
		return res, out, err
	}
}

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
		p.Pattern = actionIDRE().String()
	}
	if p := in.Properties["id"]; p != nil {
		p.Pattern = "^([0-9a-f]{16}|" + strings.Trim(actionIDRE().String(), "^$") + ")$"
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
	Discarded         *gate.Discarded `json:"discarded,omitempty" jsonschema:"the by-products the commands wrote to paths git ignores: not promoted, not graded"`
	HomeDiscarded     *gate.Discarded `json:"home_discarded,omitempty" jsonschema:"what the commands made in the masked home, through a throwaway layer: discarded, never promoted"`
	Diff              string          `json:"diff,omitempty" jsonschema:"the unified diff of the text files the plan changes"`
	DiffCut           bool            `json:"diff_cut,omitempty" jsonschema:"true when the diff was cut at 64 KiB"`
	Commands          []toolCommand   `json:"commands,omitempty"`
	// Content is what an applied FILE_READ read (each file's, in step
	// order), redacted as command output is.
	Content    string            `json:"content,omitempty" jsonschema:"what an applied FILE_READ read: the file's text, secrets redacted, at most 1 MiB per file"`
	ContentCut bool              `json:"content_cut,omitempty" jsonschema:"true when a file read was longer than 1 MiB and content holds only its start"`
	Errors     []problem.Problem `json:"errors"`
	Warnings   []problem.Problem `json:"warnings"`
	Next       string            `json:"next,omitempty" jsonschema:"what to do next"`
	// Timings are the call's phases, with act --timings mcp.
	Timings []timings.Phase `json:"timings,omitempty" jsonschema:"the call's phases and their wall times in ms (act --timings mcp only)"`
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

// answer turns a call's result and error into a tool result, as cmd's
// finish does for --json: the status, exit code and errors of the same
// table (report.OutcomeOf). Only a refusal or an error is isError; queued
// is an answer, not an error.
func (s *server) answer(tool string, res *report.Result, success string, err error) (*mcp.CallToolResult, toolOutput, error) {
	o := report.OutcomeOf(err)
	code := o.Code
	out := toolOutput{
		Status: report.StatusOf(o, success), ExitCode: code,
		ActionID: res.ActionID, PlanID: res.PlanID, ActionType: res.ActionType, RiskLevel: res.RiskLevel,
		Mode: res.Mode, ModeSource: res.ModeSource, Reason: res.Reason, Risk: res.Risk,
		Changes: res.Changes, Summary: res.Summary, Discarded: res.Discarded, HomeDiscarded: res.HomeDiscarded,
		Errors: []problem.Problem{}, Warnings: append([]problem.Problem{}, res.Warnings...),
	}
	var probs problem.List
	var le *policy.LoadError
	switch {
	case errors.As(err, &probs):
		out.Errors = append(out.Errors, probs...)
	case errors.As(err, &le) && len(le.Problems) > 0:
		out.Errors = append(out.Errors, le.Problems...)
	case err != nil:
		out.Errors = append(out.Errors, problem.Problem{Rule: report.RuleOf(o), Message: err.Error()})
	}
	// One line per call on stderr, which MCP clients keep in their logs.
	// One write, so that concurrent calls do not interleave their lines.
	line := "act: mcp: " + tool
	if res.ActionID != "" {
		line += " action " + review.Line(res.ActionID)
	}
	if res.PlanID != "" {
		line += " plan " + review.Line(res.PlanID)
	}
	io.WriteString(s.log, line+": "+out.Status+"\n")
	return &mcp.CallToolResult{IsError: code != outcome.OK.Code && out.Status != outcome.Queued.Status}, out, nil
}
