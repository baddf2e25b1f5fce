package gate

import (
	"context"
	"fmt"
	"os"
	"os/user"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/act-project/act/audit"
	"github.com/act-project/act/descriptors"
	"github.com/act-project/act/diff"
	"github.com/act-project/act/internal/outcome"
	"github.com/act-project/act/internal/problem"
	"github.com/act-project/act/internal/state"
	"github.com/act-project/act/internal/timings"
	"github.com/act-project/act/plan"
	"github.com/act-project/act/rollback"
)

// Every decision the gate makes is one signed record in the audit log
// (docs/audit.md): planned, rejected, validate_blocked, queued, applied,
// reverted, rolled_back, denied, expired, recovered. A record that cannot
// be written is an error: act does not act unrecorded.

var (
	logsMu sync.Mutex
	logs   = map[string]*audit.Log{}
	// appendMu serializes this process's appends: the log's file lock
	// keeps processes apart, not goroutines sharing its descriptor (the
	// MCP server answers calls concurrently).
	appendMu sync.Mutex
)

// auditLog opens the state dir's log once per process.
func auditLog(home state.Dir) (*audit.Log, error) {
	logsMu.Lock()
	defer logsMu.Unlock()
	dir := home.Audit()
	if l, ok := logs[dir]; ok {
		return l, nil
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	l, err := audit.Open(dir, audit.HostOrigin())
	if err != nil {
		return nil, fmt.Errorf("the audit log: %w", err)
	}
	logs[dir] = l
	return l, nil
}

// Record appends ev to home's audit log, filling in who, where and when,
// and via (cli or mcp).
func Record(ctx context.Context, home state.Dir, via string, ev audit.Event) error {
	return record(ctx, home, via, ev, nil)
}

// changedNothing are the events of decisions that changed nothing on the
// tree: their records become durable with the log's next fsync rather
// than their own (docs/audit.md, "Durability"). A promotion's, a
// rollback's, a recovery's and act gc's are durable before act returns.
var changedNothing = map[string]bool{
	audit.EventValidateBlocked: true, audit.EventPlanned: true, audit.EventRejected: true,
	audit.EventQueued: true, audit.EventDenied: true, audit.EventExpired: true,
	audit.EventApplyRefused: true, audit.EventRollbackRefused: true,
}

func record(ctx context.Context, home state.Dir, via string, ev audit.Event, opts *audit.BatchOptions) error {
	if opts == nil && changedNothing[ev.Name] {
		opts = &audit.BatchOptions{Deferred: true}
	}
	ctx, end := timings.Begin(ctx, "record", ev.Name)
	defer end()
	l, err := auditLog(home)
	if err != nil {
		return err
	}
	fillEvent(&ev, via)
	appendMu.Lock()
	defer appendMu.Unlock()
	_, err = l.AppendBatch(ctx, []audit.Event{ev}, opts)
	return err
}

// recordOutcome returns the rollback.Options.Record of a promotion or
// rollback whose outcome is ev: the audit record is appended before the
// journal is removed, and, for an apply, made durable with the action
// record in one round (a syncfs of the state directory's filesystem; an
// fsync of the action record first when the audit log is on another).
func (g *Gate) recordOutcome(ctx context.Context, ev func(*rollback.Action) audit.Event) func(*rollback.Action, bool) error {
	return func(a *rollback.Action, syncFS bool) error {
		if _, err := auditLog(g.Home); err != nil {
			return err
		}
		if syncFS && !sameFS(g.Home.Actions(), g.Home.Audit()) {
			if err := rollback.SyncAction(g.Home, a.ActionID); err != nil {
				return err
			}
			syncFS = false
		}
		return record(ctx, g.Home, g.via(), ev(a), &audit.BatchOptions{SyncFS: syncFS})
	}
}

// sameFS reports whether directories a and b are on one filesystem.
func sameFS(a, b string) bool {
	fa, err := os.Stat(a)
	if err != nil {
		return false
	}
	fb, err := os.Stat(b)
	if err != nil {
		return false
	}
	sa, ok1 := fa.Sys().(*syscall.Stat_t)
	sb, ok2 := fb.Sys().(*syscall.Stat_t)
	return ok1 && ok2 && sa.Dev == sb.Dev
}

// userName is the name of the user running act ("" if it has none), looked
// up once per process: the lookup reads the user database (nsswitch).
var userName = sync.OnceValue(func() string {
	if u, err := user.LookupId(strconv.Itoa(os.Getuid())); err == nil {
		return u.Username
	}
	return ""
})

// prepareRecord opens the audit log and looks up the user in the
// background, while a plan's dry run goes on, so that the record the plan
// ends with waits for neither (a fresh act process otherwise spends about
// a millisecond on them). A failure here is the record's to report.
func (g *Gate) prepareRecord() {
	go func() {
		_, _ = auditLog(g.Home)
		_ = userName()
	}()
}

// fillEvent fills in who, where and when, and via (cli or mcp).
func fillEvent(ev *audit.Event, via string) {
	ev.Via = via
	ev.UID = os.Getuid()
	ev.User = userName()
	if ev.Host == "" {
		ev.Host, _ = os.Hostname()
	}
	if ev.Finished.IsZero() {
		ev.Finished = time.Now().UTC()
	}
	if ev.LogLevel == "" {
		ev.LogLevel = audit.LevelSummary
	}
}

// record is Record for this gate.
func (g *Gate) record(ctx context.Context, ev audit.Event) error {
	return Record(ctx, g.Home, g.via(), ev)
}

// fill is fillEvent for this gate.
func (g *Gate) fill(ev *audit.Event) { fillEvent(ev, g.via()) }

func (g *Gate) via() string {
	if g.Caller == "" {
		return "cli"
	}
	return g.Caller
}

// planEvent is the record of plan p: ids, digest, risk, the policy's
// mode, what it changes.
func planEvent(name string, p *plan.Plan) audit.Event {
	ev := audit.Event{
		Name: name, ActionID: p.ActionID, PlanID: p.ID, DescriptorSHA256: p.DescriptorDigest,
		Risk:    &audit.Risk{Declared: p.RiskLevel, Assessed: p.RiskAssessed},
		Policy:  &audit.Policy{Mode: p.Mode, Source: p.ModeSource},
		Changes: changeSummary(p.Changes),
	}
	ev.LogLevel = logLevelOf(p)
	for _, c := range p.Commands {
		if ev.Resources == nil {
			ev.Resources = &audit.Resources{}
		}
		ev.Resources.CPUMillis += c.CPUMs
		ev.Resources.WallMillis += c.WallMs
		ev.Output += c.Stdout + c.Stderr // kept only at FORENSIC, redacted again by Append
	}
	return ev
}

// logLevelOf is the descriptor's audit.log_level.
func logLevelOf(p *plan.Plan) string {
	d, err := p.Decode()
	if err != nil || d.Audit.LogLevel == "" {
		return audit.LevelSummary
	}
	return string(d.Audit.LogLevel)
}

func changeSummary(changes []diff.Change) *audit.Changes {
	c, m, d := diff.Summary(changes)
	out := &audit.Changes{Created: c, Modified: m, Deleted: d}
	for _, ch := range changes {
		fc := audit.FileChange{Path: ch.Path, Kind: map[diff.Kind]string{diff.Create: "created", diff.Modify: "modified", diff.Delete: "deleted"}[ch.Kind], Type: ch.Type}
		if ch.ModeAfter != nil {
			fc.Mode = *ch.ModeAfter
		}
		if ch.SizeAfter != nil {
			fc.Size = *ch.SizeAfter
		}
		if ch.SHA256Before != nil {
			fc.SHA256Before = *ch.SHA256Before
		}
		if ch.SHA256After != nil {
			fc.SHA256After = *ch.SHA256After
		}
		out.Files = append(out.Files, fc)
	}
	return out
}

// refusalEvent is the record of a refused dry run of d.
func refusalEvent(d *descriptors.Descriptor, digest string, probs problem.List) audit.Event {
	o := outcome.ForLayer(probs.Layer())
	name := audit.EventRejected
	if o == outcome.Blocked {
		name = audit.EventValidateBlocked
	}
	ev := audit.Event{Name: name, ActionID: d.ActionID, DescriptorSHA256: digest, ExitCode: o.Code,
		Status: o.Status, LogLevel: string(d.Audit.LogLevel),
		Risk: &audit.Risk{Declared: string(d.RiskLevel)}}
	for _, p := range probs {
		ev.Rules = append(ev.Rules, p.Rule)
	}
	if len(probs) > 0 {
		ev.Reason = probs[0].Message
	}
	return ev
}

func approvalOf(a *rollback.Approval) *audit.Approval {
	if a == nil {
		return nil
	}
	return &audit.Approval{Via: a.Via, UID: a.UID, User: a.User, Principal: a.Principal, KeyFingerprint: a.KeyFingerprint, Reported: a.Reported}
}
