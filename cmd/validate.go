package cmd

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sync"

	"github.com/urfave/cli/v2"

	"github.com/act-project/act/descriptors"
	"github.com/act-project/act/internal/document"
	"github.com/act-project/act/internal/outcome"
	"github.com/act-project/act/internal/problem"
	"github.com/act-project/act/plan"
	"github.com/act-project/act/policy"
)

func newValidateCommand(env *Env) *cli.Command {
	return &cli.Command{
		Name:      "validate",
		Usage:     "check a descriptor: schema, rules and host policy, without touching its scope",
		UsageText: "act validate [--json] [--expand] DESCRIPTOR|-",
		Description: `Parses the descriptor strictly (YAML 1.2 or JSON; - reads standard input),
   checks it against the CUE schema and the static rules, and resolves the host
   policy's mode for it. Nothing is read from or written to the declared scope.
   A descriptor refused by a rule (3) or the policy (4) is recorded in the
   audit log as validate_blocked, as act plan and act apply record it.

   A short descriptor (docs/descriptor.md, "Short form") is expanded first:
   act fills in the fields with one allowed value, action_id (a fresh
   UUID), created_at (now) and a file operation's effects. --expand prints
   the expanded descriptor, the one act plans, shows, signs and audits: as
   YAML on standard output (the summary goes to standard error), or with
   --json as data.descriptor.

EXAMPLES:
   act validate d.yaml
   cat d.json | act validate -
   act --json validate d.yaml | jq '.errors[].rule'
   act validate --expand short.yaml > full.yaml

` + endsWith("valid", 1, 2, 3, 4).note(1, "error (I/O, invalid policy file)").help(),
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "expand", Usage: "print the expanded descriptor (a short one with what act fills in)"},
		},
		Action: func(c *cli.Context) error {
			if c.NArg() != 1 {
				return usagef("validate takes exactly one descriptor (a file or -), got %d arguments", c.NArg())
			}
			res := &result{}
			ck, err := env.checkFor(c.Context, res, c.Args().First(), false)
			var expanded []byte
			if err == nil && c.Bool("expand") {
				canon, _, cerr := ck.canonical()
				if err = cerr; err == nil {
					res.Data = map[string]any{"descriptor": canon}
					expanded, err = ck.doc.Root.YAML()
				}
			}
			return env.finish(res, outcome.Valid.Status, err, func(w io.Writer, st styles) {
				if expanded != nil {
					// The descriptor is the data; the summary a diagnostic.
					w.Write(expanded)
					w = env.Stdio.Err
				}
				fmt.Fprintf(w, "%s %s\n", st.Create.Render("valid:"), res.File)
				fmt.Fprintf(w, "  action  %s %s, risk %s\n", res.ActionID, res.ActionType, res.RiskLevel)
				fmt.Fprintf(w, "  mode    %s (%s): %s\n", st.Bold.Render(res.Mode), res.ModeSource, res.Reason)
			})
		},
	}
}

// runValidate runs the checks of docs/rules.md in order and stops at the first
// layer that fails, reporting every problem of that layer.
func runValidate(ctx context.Context, env *Env, arg string) (*result, error) {
	res := &result{}
	_, err := env.checkFor(ctx, res, arg, false)
	return res, err
}

// checked is a descriptor that passed every check of docs/rules.md.
type checked struct {
	d        *descriptors.Descriptor
	doc      *document.Document
	pol      *policy.Policy
	decision policy.Decision
	stateDir string
	// warm is a sandbox started beside the checks, for a descriptor that
	// runs a command (isolate.Prestart); release ends it if unused.
	warm *plan.Warm
	// canon and digest are plan.Canonical(d), once canonical is called.
	canon  json.RawMessage
	digest string
	// progress, if not nil, gets the dry run's command output as it comes
	// (an MCP client's progress notifications); else env.streamer's.
	progress func(stream int, line string)
	// unplaced: the descriptor is no file (act run's), so its problems
	// name only their field.
	unplaced bool
}

// canonical returns plan.Canonical(ck.d), computed once.
func (ck *checked) canonical() (json.RawMessage, string, error) {
	if ck.digest == "" {
		canon, digest, err := plan.Canonical(ck.d)
		if err != nil {
			return nil, "", err
		}
		ck.canon, ck.digest = canon, digest
	}
	return ck.canon, ck.digest, nil
}

// release ends what the checks started and the plan did not use.
func (ck *checked) release() {
	if ck != nil {
		ck.warm.Close()
	}
}

// check reads the descriptor arg and runs parse, schema, rules and policy,
// filling res as it goes.
func (env *Env) check(ctx context.Context, res *result, arg string) (*checked, error) {
	return env.checkFor(ctx, res, arg, true)
}

// checkFor is check; acting is false for validate, which only looks at
// the descriptor (a stale intent is then a warning).
func (env *Env) checkFor(ctx context.Context, res *result, arg string, acting bool) (*checked, error) {
	pol, err := env.loadPolicy(res)
	if err != nil {
		return nil, err
	}
	name, data, err := env.readInput(arg)
	if err != nil {
		return nil, err
	}
	return env.checkData(ctx, res, pol, name, data, acting)
}

// checkData runs parse, schema, rules and policy pol on a descriptor's
// bytes (name is the name positions use), filling res as it goes: the
// checks of check, for a descriptor that came from elsewhere than a file
// (the MCP server's tool arguments).
func (env *Env) checkData(ctx context.Context, res *result, pol *policy.Policy, name string, data []byte, acting bool) (_ *checked, err error) {
	res.File = name
	var warm *plan.Warm
	if acting && bytes.Contains(data, []byte("COMMAND_EXECUTION")) {
		// Probably a command: start its sandbox now, beside the checks
		// below; it runs nothing until they and the gate have passed.
		warm = env.spare.take()
		defer func() {
			if err != nil {
				warm.Close()
			}
		}()
	}
	// A short descriptor is stamped with act's clock (docs/descriptor.md,
	// "Short form"): over MCP and from a file alike.
	d, doc, probs := descriptors.LoadStamped(name, data, descriptors.Stamp{Now: env.Now()})
	if probs != nil {
		return nil, env.unreadable(ctx, pol, doc, data, probs)
	}
	res.ActionID, res.ActionType, res.RiskLevel = d.ActionID, string(d.ActionType), string(d.RiskLevel)
	stateDir, err := env.stateDir()
	if err != nil {
		return nil, err
	}
	if probs := descriptors.Check(d, doc, descriptors.CheckOptions{
		Now:      env.Now(),
		Home:     env.homeDir(),
		UserHome: env.UserHome(),
		StateDir: stateDir,
	}); len(probs) > 0 {
		return nil, env.blocked(ctx, pol, d, probs, nil)
	}
	dec := pol.Decide(d, env.Now())
	res.Mode, res.ModeSource, res.Reason = string(dec.Mode), dec.Source, dec.Reason
	if !acting {
		// A stale intent stops a plan or an apply, not a look at the
		// descriptor: validate warns (so an old example still validates).
		var rest problem.List
		for _, b := range dec.Blocked {
			if b.Rule == policy.RuleStaleIntent {
				b.Message += "; act plan and act apply refuse it (exit 4)"
				res.Warnings = append(res.Warnings, locate(doc, problem.List{b})...)
				continue
			}
			rest = append(rest, b)
		}
		dec.Blocked = rest
	}
	if len(dec.Blocked) > 0 {
		return nil, env.blocked(ctx, pol, d, locate(doc, dec.Blocked), &dec)
	}
	return &checked{d: d, doc: doc, pol: pol, decision: dec, stateDir: stateDir, warm: warm}, nil
}

// blocked records with the gate that d was refused at validation
// (docs/audit.md: validate_blocked) and returns probs, or the error of a
// record that could not be written: act does not refuse unrecorded either.
func (env *Env) blocked(ctx context.Context, pol *policy.Policy, d *descriptors.Descriptor, probs problem.List, dec *policy.Decision) error {
	_, digest, err := plan.Canonical(d)
	if err != nil {
		return err
	}
	if err := env.gate(pol).Blocked(ctx, d, digest, probs, dec); err != nil {
		return err
	}
	return probs
}

// unreadable records with the gate that a descriptor was refused because
// it does not parse or fails the schema (docs/audit.md: validate_blocked)
// and returns probs, or the error of a record that could not be written.
func (env *Env) unreadable(ctx context.Context, pol *policy.Policy, doc *document.Document, data []byte, probs problem.List) error {
	var id string
	if doc != nil {
		if m, ok := doc.Value().(map[string]any); ok {
			id, _ = m["action_id"].(string)
		}
	}
	if err := env.gate(pol).Unreadable(ctx, id, data, probs); err != nil {
		return err
	}
	return probs
}

// locate gives problems that name only a field the file and position of
// that field in doc.
func locate(doc *document.Document, probs problem.List) problem.List {
	out := make(problem.List, len(probs))
	for i, p := range probs {
		if p.File == "" {
			p.File = doc.Name
		}
		if p.Line == 0 {
			pos := doc.Pos(problem.SplitFieldPath(p.Field)...)
			p.Line, p.Column = pos.Line, pos.Column
		}
		out[i] = p
	}
	out.Sort()
	return out
}

// loadPolicy resolves the host policy (docs/policy.md) and records where it came
// from in res.
func (env *Env) loadPolicy(res *result) (*policy.Policy, error) {
	stateDir, err := env.stateDir()
	if err != nil {
		return nil, err
	}
	pol, origin, err := policy.Load(policy.LoadOptions{
		Flag: env.policyFile,
		Env:  env.Getenv("ACT_POLICY"),
		Home: stateDir,
	})
	if err != nil {
		return nil, err
	}
	res.Policy = &policyOrigin{Source: origin.Source, File: origin.Path}
	return pol, nil
}

// A spareSandbox keeps one sandbox started ahead ([plan.PrestartSandbox])
// for a process that plans again and again (act mcp): a plan that runs a
// command takes it, already started, and the next one is started once that
// plan's commands have run (refill), while it diffs, saves and records
// (mostly waiting on the disk) rather than beside its checks and its
// command, which it would slow on a small machine. Nothing runs in a spare
// until a plan's checks have passed; it waits, namespaces made and init
// cloned, for its spec.
type spareSandbox struct {
	mu   sync.Mutex
	next *plan.Warm
}

// take returns the spare sandbox, or starts one for the caller alone
// where there is none (nil s: a one-shot act; or a spare already taken).
func (s *spareSandbox) take() *plan.Warm {
	if s == nil {
		return plan.PrestartSandbox()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	w := s.next
	s.next = nil
	if w == nil {
		w = plan.PrestartSandbox()
	}
	return w
}

// refill starts the next spare sandbox, if there is none: for a plan like
// d (its limits set ahead), or nil.
func (s *spareSandbox) refill(d *descriptors.Descriptor) {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.next == nil {
		if d != nil {
			s.next = plan.PrestartSandboxLike(d)
		} else {
			s.next = plan.PrestartSandbox()
		}
	}
}

// close ends the spare sandbox.
func (s *spareSandbox) close() {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.next.Close()
	s.next = nil
}
