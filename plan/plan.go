// Package plan builds and stores plans (docs/lifecycle.md): it checks the
// preconditions on the real filesystem, carries out the descriptor's
// operations into a layer (a [sandbox.LayerSystem] over the real tree, so
// the real tree is never touched), diffs the layer against the real tree,
// checks every change against the declared effects and saves the result
// atomically under the state directory.
//
// A plan is the reviewed change: apply promotes exactly its layer, after
// checking that every path still matches the pre-image recorded here.
package plan

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/act-project/act/descriptors"
	"github.com/act-project/act/diff"
	"github.com/act-project/act/internal/egress"
	"github.com/act-project/act/internal/lifecycle"
	"github.com/act-project/act/internal/pathglob"
	"github.com/act-project/act/internal/problem"
	"github.com/act-project/act/internal/state"
	"github.com/act-project/act/internal/timings"
	"github.com/act-project/act/policy"
	"github.com/act-project/act/sandbox"
)

// A Plan is a saved dry run.
type Plan struct {
	ID       string `json:"plan_id"`
	ActionID string `json:"action_id"`
	// DescriptorDigest is the sha256 of the descriptor's canonical JSON
	// (keys sorted), so reformatting a descriptor does not change it.
	DescriptorDigest string `json:"descriptor_digest"`
	// Descriptor is the canonical descriptor with the secrets it carried
	// redacted (atRest); StoredDescriptorDigest is its digest when that
	// changed it.
	Descriptor             json.RawMessage `json:"descriptor"`
	StoredDescriptorDigest string          `json:"stored_descriptor_digest,omitempty"`
	File                   string          `json:"file"`
	ActionType             string          `json:"action_type"`
	RiskLevel              string          `json:"risk_level"`
	CreatedAt              time.Time       `json:"created_at"`
	State                  lifecycle.State `json:"state"`
	Mode                   string          `json:"mode"`
	ModeSource             string          `json:"mode_source"`
	Reason                 string          `json:"reason"`
	// Changes are the layer's changes with their pre-images (the *_before
	// fields; null for absent).
	Changes  []diff.Change     `json:"changes"`
	Warnings []problem.Problem `json:"warnings"`
	// LayerBytes is the size of the layer's content.
	LayerBytes int64 `json:"layer_bytes"`
	// Discarded are the by-products the plan's commands wrote to paths
	// git ignores (Options.ByProducts): in the layer, never in Changes,
	// so neither graded nor promoted.
	Discarded *Discarded `json:"discarded,omitempty"`
	// HomeDiscarded counts and names what the plan's commands made in
	// the masked home, through a throwaway layer: gone with the sandbox,
	// never promoted (docs/sandbox-filesystem.md, "The masked home").
	HomeDiscarded *Discarded `json:"home_discarded,omitempty"`
	// Read is what a FILE_READ read, for apply to print.
	Read []ReadResult `json:"read,omitempty"`
	// Fetched records each NETWORK_REQUEST act performed.
	Fetched []FetchResult `json:"fetched,omitempty"`
	// Commands records each command run in the sandbox, output capped and
	// redacted.
	Commands []CommandResult `json:"commands,omitempty"`
	// RiskAssessed is act's own grading of the plan, RiskReasons why
	// (docs/risk.md); RiskLevel is the agent's.
	RiskAssessed string   `json:"risk_assessed,omitempty"`
	RiskReasons  []string `json:"risk_reasons,omitempty"`
	// ScopeRoots pin every directory from / to each scope root, as the
	// plan found them (ScopeRootIDs).
	ScopeRoots []PathID `json:"scope_roots,omitempty"`
	// Scope is the descriptor's scope paths, for show; apply and rollback
	// derive them, and the cooldown keys (Cooldown), from the descriptor.
	Scope []string `json:"scope"`
	// ConfirmReasons say why the plan waits for a person (pending).
	ConfirmReasons []string `json:"confirm_reasons,omitempty"`
	// DeniedAt and DenyReason record a person's refusal.
	DeniedAt   *time.Time `json:"denied_at,omitempty"`
	DenyReason string     `json:"deny_reason,omitempty"`
}

// A Discarded list counts a plan's by-products and names the first
// MaxDiscardedPaths of them, sorted.
type Discarded struct {
	Count int      `json:"count"`
	Paths []string `json:"paths"`
}

// MaxDiscardedPaths is how many discarded paths a plan names.
const MaxDiscardedPaths = 20

// homeDiscarded is what the commands made in the masked home, together:
// the sum of their counts and the first MaxDiscardedPaths of their
// names, sorted, each once. nil if nothing.
func homeDiscarded(cmds []CommandResult) *Discarded {
	var out *Discarded
	for _, c := range cmds {
		if c.HomeWrote == nil || c.HomeWrote.Count == 0 {
			continue
		}
		if out == nil {
			out = &Discarded{}
		}
		out.Count += c.HomeWrote.Count
		for _, p := range c.HomeWrote.Paths {
			if !slices.Contains(out.Paths, p) {
				out.Paths = append(out.Paths, p)
			}
		}
	}
	if out != nil {
		slices.Sort(out.Paths)
		out.Paths = out.Paths[:min(len(out.Paths), MaxDiscardedPaths)]
	}
	return out
}

// ByProducts splits a dry run's changes into those the plan keeps and
// the paths of the by-products it discards (the gate's, gate.Plan); upper
// is the layer's upper directory.
type ByProducts func(changes []diff.Change, upper string) (kept []diff.Change, discarded []string)

// RuleTooManyChanges: a dry run made more changes than the policy's
// max_changes.
const RuleTooManyChanges = "plan.too-many-changes"

// An Assessment is what the gate says of a draft's changes before it is
// saved: act's risk grading and the policy's decision with it.
type Assessment struct {
	RiskAssessed string
	RiskReasons  []string
	Decision     policy.Decision
}

// NeedsSandbox reports whether d runs any command: COMMAND_EXECUTION,
// PACKAGE_* (in any step) or verification.
func NeedsSandbox(d *descriptors.Descriptor) bool {
	if d.Verification != nil && len(d.Verification.Commands) > 0 {
		return true
	}
	var walk func(t descriptors.ActionType, steps []descriptors.Step) bool
	walk = func(t descriptors.ActionType, steps []descriptors.Step) bool {
		switch t {
		case descriptors.CommandExecution, descriptors.PackageInstall, descriptors.PackageRemove:
			return true
		}
		for _, s := range steps {
			if walk(s.ActionType, s.Steps) {
				return true
			}
		}
		return false
	}
	return walk(d.ActionType, d.Steps)
}

// Options are what a dry run needs besides the descriptor.
type Options struct {
	// StateDir is act's state directory; plans go in <StateDir>/plans.
	StateDir string
	Policy   *policy.Policy
	// Decision is the policy's decision Build records; the gate's
	// sequence records its own assessment instead (Draft.Save).
	Decision policy.Decision
	// File is the descriptor's name, recorded in the plan.
	File string
	Now  func() time.Time
	// NewID returns a fresh plan id; nil means random.
	NewID func() string
	Host  Host
	// Homes are the user's home directories ($HOME and the passwd
	// entry's), whose credential stores the sandbox hides.
	Homes []string
	// UserHome is the password database's home of the user act runs as:
	// below it, commands see the policy's sandbox.home_visible (HomeView).
	UserHome string
	// ByProducts, if set, takes the by-products out of the dry run's
	// changes before they are checked: they are recorded in the plan as
	// discarded, and neither checked, graded nor promoted.
	ByProducts ByProducts
	// Canonical and Digest, if set, are Canonical(d), which the caller
	// has computed already.
	Canonical json.RawMessage
	Digest    string
	// Ahead is what the dry run overlaps with its own work.
	Ahead Ahead
	// Progress, if not nil, gets each line of the commands' output as it
	// comes, redacted (stream 1 stdout, 2 stderr): act prints it on a
	// terminal while a long command runs.
	Progress func(stream int, line string)
}

// Ahead is the one mechanism by which a plan overlaps its own work with
// what its caller started ahead (docs/lifecycle.md, "Overlaps"): the
// gate's check, a sandbox and a plan directory made ahead, and the making
// of the next ones once this plan's commands ran. The zero Ahead overlaps
// nothing.
type Ahead struct {
	// Check, if not nil, is the gate's check before a dry run, running
	// beside it: waited for before the first operation whose effect
	// reaches beyond the plan's layer (a network request; a command, whose
	// sandbox mounts meanwhile) or, without one, after the operations on
	// the layer. A failed check stops the plan; nothing outside the layer
	// has been done.
	Check *Check
	// Warm, if not nil, is a sandbox started ahead (isolate.Prestart); the
	// first command runs in it if it suits. The caller closes it.
	Warm *Warm
	// Dirs, if not nil, hands out a plan directory made ahead for the
	// plan's scope roots.
	Dirs Spares
	// Started, if not nil, is called when the first command the sandbox
	// ran has run (failed or not): the gate counts a run of the action
	// only then (sandbox.max_runs).
	Started func()
	// Refill, if not nil, is called once the dry run's operations (and
	// their commands) have run: the caller makes the next spares then.
	Refill func()
}

// Spares hands out a temporary plan directory made ahead under plans for a
// plan of the scope roots scopes, holding a "layer" directory with at most
// those scope roots copied up; "" when it has none that suits
// (SpareDirs).
type Spares interface {
	Take(plans string, scopes []string) string
}

// A Check is a caller's check that runs beside a plan's work and is
// waited for before anything reaches beyond the plan's layer.
type Check struct {
	done chan struct{}
	err  error
}

// StartCheck runs f now, beside the caller; a nil f is no check.
func StartCheck(f func() error) *Check {
	if f == nil {
		return nil
	}
	c := &Check{done: make(chan struct{})}
	go func() {
		defer close(c.done)
		c.err = f()
	}()
	return c
}

// Wait waits for the check and returns its outcome; a nil Check passes.
func (c *Check) Wait() error {
	if c == nil {
		return nil
	}
	<-c.done
	return c.err
}

// A Draft is a dry run that passed every check of the plan stage but is
// not saved yet: its changes await the gate's assessment, then Save (or
// Discard, which removes its directory and layer).
type Draft struct {
	// Changes are the layer's changes with their pre-images.
	Changes []diff.Change
	d       *descriptors.Descriptor
	opts    Options
	id, tmp string
	canon   json.RawMessage
	digest  string
	now     time.Time
	ops     *OpsResult
	extra   diff.Extra
	warns   []problem.Problem
	discard *Discarded
	// sums are what the command wrote, summed beside the layer's copy
	// (upperSums); nil: the diff reads every layer file.
	sums *upperSums
}

// Build is DryRun and Save with opts.Decision as the assessment: a plan
// of the plan stage alone, which the gate's sequence (gate.Plan) does not
// use.
func Build(ctx context.Context, d *descriptors.Descriptor, opts Options) (*Plan, error) {
	dr, err := DryRun(ctx, d, opts)
	if err != nil {
		return nil, err
	}
	return dr.Save(Assessment{Decision: opts.Decision}, nil)
}

// DryRun runs docs/lifecycle.md steps 2–6 for an already validated
// descriptor whose policy decision is not blocked: the preconditions, the
// operations into a layer in a plan directory, the diff and the checks of
// its changes. Its errors are a problem.List of layer Precondition (exit 5)
// or Rejected (exit 6), or an ordinary error; nothing is left behind then.
func DryRun(ctx context.Context, d *descriptors.Descriptor, opts Options) (*Draft, error) {
	dr := &Draft{d: d, opts: opts, now: opts.Now()}
	end := timings.Start(ctx, "preconditions")
	probs := CheckPreconditions(d, opts.Host, dr.now, opts.Policy.IdlePeriod)
	end()
	if len(probs) > 0 {
		return nil, probs
	}
	if probs := CheckScopeSecrets(d, opts.Homes, opts.UserHome); len(probs) > 0 {
		return nil, probs
	}
	dr.canon, dr.digest = opts.Canonical, opts.Digest
	if dr.digest == "" {
		var err error
		if dr.canon, dr.digest, err = Canonical(d); err != nil {
			return nil, err
		}
	}
	dr.id = newID(opts.NewID)
	end = timings.Start(ctx, "plan directory")
	err := dr.makeDir()
	end()
	if err != nil {
		return nil, err
	}
	rctx, end := timings.Begin(ctx, "operations")
	err = dr.run(rctx)
	end()
	if err != nil {
		dr.Discard()
		return nil, err
	}
	defer timings.Start(ctx, "read-back: diff and checks of the changes")()
	if err := dr.diff(); err != nil {
		dr.Discard()
		return nil, err
	}
	return dr, nil
}

// makeDir takes a plan directory made ahead, or makes one.
func (dr *Draft) makeDir() error {
	plans := state.Dir{Root: dr.opts.StateDir}.Plans()
	if dr.opts.Ahead.Dirs != nil {
		if dr.tmp = dr.opts.Ahead.Dirs.Take(plans, dr.d.Scope.Filesystem.Paths); dr.tmp != "" {
			return nil
		}
	}
	if err := os.MkdirAll(plans, 0o700); err != nil {
		return fmt.Errorf("create plan directory: %w", err)
	}
	tmp, err := os.MkdirTemp(plans, state.TempPrefix+dr.id+"-")
	if err != nil {
		return fmt.Errorf("create plan directory: %w", err)
	}
	dr.tmp = tmp
	return nil
}

// layer is the draft's copy-on-write layer over the real tree.
func (dr *Draft) layer() *sandbox.LayerSystem {
	return sandbox.NewLayerSystem(sandbox.RealSystem{}, filepath.Join(dr.tmp, state.LayerName))
}

// UpperDir is the upper directory of the draft's layer: the real
// absolute path p lives at UpperDir + p.
func (dr *Draft) UpperDir() string { return dr.layer().UpperDir() }

// run carries out the operations into the layer, commands in the sandbox.
func (dr *Draft) run(ctx context.Context) error {
	d, opts, layer := dr.d, dr.opts, dr.layer()
	// The check is waited for before the first operation whose effect
	// reaches beyond the layer: a network request, or a command, whose
	// sandbox mounts meanwhile (isolate.Spec.Before). Operations on the
	// layer may come first; a plan without such an operation waits after
	// them.
	ready := opts.Ahead.Check.Wait
	runOpts := RunOptions{
		Ready:    ready,
		Fetch:    HTTPFetcher{Allowed: opts.Policy.HostAllowed, Named: opts.Policy.NamedRanges(), Timeout: time.Duration(d.Resources.MaxDurationMs) * time.Millisecond},
		MaxBody:  d.Resources.MaxDiskMB << 20,
		UserHome: opts.UserHome,
	}
	if NeedsSandbox(d) {
		// Fail closed: where isolation is missing the first command's run
		// says so (isolate.ErrUnavailable) and the plan fails with exit 1;
		// probing ahead would build a whole extra sandbox per act process.
		hide := HidePaths(opts.StateDir, opts.Homes, opts.Policy.Sandbox.HidePaths, d.Scope.Filesystem.Paths)
		mask, binds := HomeView(opts.UserHome, opts.Policy.Sandbox.HomeVisible, hide)
		caches, binds := SandboxCaches(opts.UserHome, opts.Policy.Sandbox.Caches, hide, binds)
		caches, persistent, binds, err := withOwnCaches(opts.StateDir, opts.UserHome, caches, opts.Policy.Sandbox.Caches, opts.Policy.Sandbox.PersistentCaches, hide, binds)
		if err != nil {
			return err
		}
		// The tools' configurations, as copies with placeholders for
		// their secrets (docs/sandbox-filesystem.md).
		views := ConfigViews(opts.UserHome, opts.Policy.Sandbox.HomeVisible, binds, d.Scope.Filesystem.Paths)
		files, secrets, hide := configFiles(opts.UserHome, views, hide)
		egress, files, err := giveCredentials(egressProxy(d, opts.Policy), secrets, opts.Policy, files)
		if err != nil {
			return err
		}
		sc := &sandboxCommander{
			before: ready,
			layer:  layer, scopes: d.Scope.Filesystem.Paths, workDir: filepath.Join(dr.tmp, state.WorkName),
			egress:     egress,
			loopback:   opts.Policy.Sandbox.Loopback,
			hide:       hide,
			mask:       mask,
			binds:      binds,
			files:      files,
			secrets:    secrets,
			reads:      SystemReads,
			caches:     caches,
			persistent: persistent,
			cacheBound: opts.Policy.Sandbox.PersistentCachesMB << 20,
			path:       os.Getenv("PATH"),
			home:       opts.UserHome,
			homeRW:     writableHome(opts.UserHome, mask),
			pii:        opts.Policy.Redact.PII,
			limits:     limits(d, opts.Policy.MemoryTotalDemanded()),
			warm:       opts.Ahead.Warm,
			progress:   opts.Progress,
			started:    opts.Ahead.Started,
		}
		switch d.ActionType {
		case descriptors.CommandExecution, descriptors.PackageInstall, descriptors.PackageRemove:
			// One sandboxed command is all that writes the layer.
			dr.sums = newUpperSums(d.Scope.Filesystem.Paths, dr.diffLimits())
			sc.sums = dr.sums
		}
		runOpts.Exec = sc
	}
	res, err := RunOpsWith(ctx, d, layer, runOpts)
	if err == nil {
		err = ready()
	}
	if runOpts.Exec != nil {
		sandbox.RemoveAll(filepath.Join(dr.tmp, state.WorkName))
	}
	if opts.Ahead.Refill != nil {
		opts.Ahead.Refill()
	}
	if err != nil {
		return opProblems(err)
	}
	dr.ops = res
	return nil
}

// diffLimits bound what the diff reads of the layer and holds of it.
func (dr *Draft) diffLimits() diff.Limits {
	return diff.Limits{MaxChanges: dr.opts.Policy.MaxChanges, MaxBytes: dr.d.Resources.MaxDiskMB << 20, MaxPathBytes: MaxLayerPaths}
}

// diff diffs the layer against the real tree and checks the changes.
func (dr *Draft) diff() error {
	d, opts, layer := dr.d, dr.opts, dr.layer()
	// The diff reads every file of the layer (below the scope paths, where
	// all of it is): it sums the layer's size too, names included. It
	// stops at the first entry past max_changes or max_disk_mb, or once
	// the paths it keeps pass what a plan's record holds, so that what act
	// holds of a layer is bounded by them, not by what a command made
	// (docs/lifecycle.md, "Limits of a dry run").
	lim := dr.diffLimits()
	if dr.sums != nil {
		lim.Sums = dr.sums.lookup
	}
	changes, extra, err := diff.CompareExtra(layer.UpperDir(), d.Scope.Filesystem.Paths, sandbox.RealSystem{}, lim)
	var over *diff.LimitError
	switch {
	case errors.As(err, &over) && over.Bytes:
		return problem.List{diskCapProblem(d, fmt.Sprintf("at least %d", over.Seen))}
	case errors.As(err, &over) && over.Paths:
		return problem.List{{Rule: RulePlanTooLarge, Field: "effects", Layer: problem.Rejected,
			Message: fmt.Sprintf("the paths of what the dry run left come to at least %d bytes, more than act keeps for one plan (%d): the command made too many entries, or nested them too deep", over.Seen, over.Limit)}}
	case errors.As(err, &over):
		return problem.List{tooManyChanges(fmt.Sprintf("at least %d", over.Seen), over.Limit)}
	case err != nil:
		return fmt.Errorf("diff the layer: %w", err)
	}
	diff.SetOwnersAfter(changes)
	if opts.ByProducts != nil {
		var gone []string
		changes, gone = opts.ByProducts(changes, layer.UpperDir())
		if len(gone) > 0 {
			slices.Sort(gone)
			dr.discard = &Discarded{Count: len(gone), Paths: gone[:min(len(gone), MaxDiscardedPaths)]}
		}
	}
	rejected, warnings := CheckChanges(d, changes, opts.Policy)
	if len(rejected) == 0 {
		rejected = checkPromotable(changes, opts.StateDir)
	}
	if extra.LayerBytes > lim.MaxBytes {
		rejected = append(rejected, diskCapProblem(d, fmt.Sprint(extra.LayerBytes)))
	}
	if len(rejected) > 0 {
		return rejected
	}
	// Extended attributes a command set are not promoted: dropped from
	// the layer (the diff neither shows nor reads them), once the diff
	// has bounded what the layer holds.
	if err := dropXattrs(layer.UpperDir()); err != nil {
		return fmt.Errorf("the layer's extended attributes: %w", err)
	}
	if changes == nil {
		changes = []diff.Change{}
	}
	dr.Changes, dr.extra, dr.warns = changes, extra, warnings
	return nil
}

// LayerBytes is what the draft's layer holds, as the plan records it
// (layer_bytes): its entries' names and its files' sizes.
func (dr *Draft) LayerBytes() int64 { return dr.extra.LayerBytes }

// Discard removes the draft's directory and layer.
func (dr *Draft) Discard() {
	if dr.tmp != "" {
		sandbox.RemoveAll(dr.tmp) // a command may have left 000 or 555 directories
		dr.tmp = ""
	}
}

// Save saves the draft as a plan, graded by a, atomically: record, if not
// nil, records the plan (the gate's audit record) beside the writing of
// plan.json, and the plan is moved into place only if both succeed, so
// that no saved plan lacks its record. On an error the draft is discarded.
func (dr *Draft) Save(a Assessment, record func(*Plan) error) (*Plan, error) {
	p, err := dr.plan(a)
	if err == nil {
		err = save(dr.tmp, state.Dir{Root: dr.opts.StateDir}.Plans(), p, record)
	}
	if err != nil {
		dr.Discard()
		return nil, err
	}
	dr.tmp = "" // renamed into place: the plan's now
	rememberExtra(p, dr.extra)
	return p, nil
}

// plan is the record of the draft, graded by a.
func (dr *Draft) plan(a Assessment) (*Plan, error) {
	d := dr.d
	roots, err := ScopeRootIDs(d.Scope.Filesystem.Paths)
	if err != nil {
		return nil, fmt.Errorf("scope roots: %w", err)
	}
	stored, redacted := atRest(dr.canon)
	p := &Plan{
		ID: dr.id, ActionID: d.ActionID, DescriptorDigest: dr.digest, Descriptor: stored,
		File: dr.opts.File, ActionType: string(d.ActionType), RiskLevel: string(d.RiskLevel),
		CreatedAt: dr.now.UTC(), State: lifecycle.Planned,
		Mode: string(a.Decision.Mode), ModeSource: a.Decision.Source, Reason: a.Decision.Reason,
		Changes: dr.Changes, Warnings: dr.warns, LayerBytes: dr.extra.LayerBytes, Discarded: dr.discard,
		RiskAssessed: a.RiskAssessed, RiskReasons: a.RiskReasons, ScopeRoots: roots,
		Scope: d.Scope.Filesystem.Paths,
	}
	if res := dr.ops; res != nil {
		p.Read = res.Read
		p.Fetched = res.Fetched
		p.Commands = res.Commands
		p.HomeDiscarded = homeDiscarded(res.Commands)
		for _, n := range res.Notes {
			p.Warnings = append(p.Warnings, problem.Problem{
				Rule: n.Rule, Field: problem.FieldPath(n.Field...), Message: n.Msg, Layer: problem.Rejected,
			})
		}
	}
	if redacted {
		p.StoredDescriptorDigest = sha256Hex(stored)
	}
	if p.Warnings == nil {
		p.Warnings = []problem.Problem{}
	}
	return p, nil
}

// CheckChanges checks a change list against the descriptor d it was made
// for and the policy: every change lies inside d's scope and matches a
// declared effect (CheckEffects), sets no special mode bit, and there are
// no more than the policy's max_changes. Build checks a dry run's changes
// with it, and apply checks a saved plan's again (docs/lifecycle.md, "What
// apply trusts"): plan.json lives in a directory the agent may write.
func CheckChanges(d *descriptors.Descriptor, changes []diff.Change, pol *policy.Policy) (rejected problem.List, warnings []problem.Problem) {
	for _, c := range changes {
		if !filepath.IsAbs(c.Path) || filepath.Clean(c.Path) != c.Path ||
			!slices.ContainsFunc(d.Scope.Filesystem.Paths, func(s string) bool { return pathglob.Within(c.Path, s) }) {
			rejected = append(rejected, problem.Problem{
				Rule: RuleOutsideScope, Field: "scope.filesystem.paths", Layer: problem.Rejected,
				Message: fmt.Sprintf("the plan changes %s, outside every scope path of its descriptor", c.Path),
			})
		}
	}
	fx, warnings := CheckEffects(d, changes)
	rejected = append(rejected, fx...)
	rejected = append(rejected, checkSpecialModes(changes)...)
	if max := pol.MaxChanges; max > 0 && int64(len(changes)) > max {
		rejected = append(rejected, tooManyChanges(fmt.Sprint(len(changes)), max))
	}
	return rejected, warnings
}

// tooManyChanges is the problem of a dry run that made n changes, more
// than the policy's max_changes of max.
func tooManyChanges(n string, max int64) problem.Problem {
	return problem.Problem{
		Rule: RuleTooManyChanges, Field: "effects", Layer: problem.Rejected,
		Message: fmt.Sprintf("the dry run made %s changes, more than the policy's max_changes of %d", n, max),
	}
}

// diskCapProblem is the problem of a dry run whose layer holds n bytes of
// files and names, more than d's max_disk_mb.
func diskCapProblem(d *descriptors.Descriptor, n string) problem.Problem {
	return problem.Problem{
		Rule: "resources.disk-cap-exceeded", Field: "resources.max_disk_mb", Layer: problem.Rejected,
		Message: fmt.Sprintf("the dry run wrote %s bytes (files and their names), more than max_disk_mb %d (%d bytes)",
			n, d.Resources.MaxDiskMB, d.Resources.MaxDiskMB<<20),
	}
}

// RuleOutsideScope: a change outside every scope path of the descriptor
// (only a saved plan edited after its dry run can hold one).
const RuleOutsideScope = "plan.outside-scope"

// opProblems turns operation errors into a Rejected problem list.
func opProblems(err error) error {
	var list OpErrors
	var one *OpError
	switch {
	case errors.As(err, &list):
	case errors.As(err, &one):
		list = OpErrors{one}
	default:
		return err
	}
	probs := make(problem.List, 0, len(list))
	for _, oe := range list {
		probs = append(probs, problem.Problem{
			Rule: oe.Rule, Field: problem.FieldPath(oe.Field...), Message: oe.Msg, Layer: problem.Rejected,
		})
	}
	return probs
}

// Canonical returns d as canonical JSON (sorted keys) and its sha256.
func Canonical(d *descriptors.Descriptor) (json.RawMessage, string, error) {
	b, err := json.Marshal(d)
	if err != nil {
		return nil, "", err
	}
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		return nil, "", err
	}
	if b, err = json.Marshal(v); err != nil { // maps marshal with sorted keys
		return nil, "", err
	}
	sum := sha256.Sum256(b)
	return b, hex.EncodeToString(sum[:]), nil
}

func newID(f func() string) string {
	if f != nil {
		return f()
	}
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err)
	}
	return hex.EncodeToString(b[:])
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// CooldownKeys identify an action for cooldown_on_repeat, any action id
// (docs/lifecycle.md): the first is the digest of its normalized
// declaration — its type, and its scope paths and declared effects each
// cleaned, sorted and de-duplicated, so that rewording a descriptor
// (a path listed twice, in another order) does not make it another action;
// with changes, the second is the digest of what the dry run changed (each
// path with its kind, sorted and de-duplicated), which catches a repeat
// declared in other words altogether.
func CooldownKeys(d *descriptors.Descriptor, changes []diff.Change) []string {
	norm := func(paths []string) []string {
		out := make([]string, 0, len(paths))
		for _, p := range paths {
			out = append(out, filepath.Clean(p))
		}
		slices.Sort(out)
		return slices.Compact(out)
	}
	fx := d.Effects.Filesystem
	keys := []string{keyDigest("declared", string(d.ActionType), norm(d.Scope.Filesystem.Paths),
		norm(fx.Create), norm(fx.Modify), norm(fx.Delete))}
	if len(changes) > 0 {
		var changed []string
		for _, c := range changes {
			changed = append(changed, string(c.Kind)+" "+c.Path)
		}
		keys = append(keys, keyDigest("changed", norm(changed)))
	}
	return keys
}

// Cooldown derives p's cooldown keys and its descriptor's
// cooldown_on_repeat again from the descriptor it saved, whose bytes are
// bound by their digest, and its changes: nothing plan.json says of them
// is taken on trust.
func (p *Plan) Cooldown() (keys []string, on bool, err error) {
	d, err := p.Rebind()
	if err != nil {
		return nil, false, err
	}
	return CooldownKeys(d, p.Changes), d.Confirmation.CooldownOnRepeat, nil
}

// Decode decodes the descriptor p saved, its bytes checked against their
// digest: the one way act reads a saved descriptor's facts back.
func (p *Plan) Decode() (*descriptors.Descriptor, error) {
	return descriptors.LoadSaved(p.Descriptor, p.StoredDigest())
}

// Rebind decodes the descriptor p saved (its bytes bound by their digest)
// and sets again from it what plan.json repeats of it — the action id,
// type, declared risk and scope — so that an edit of those fields in
// plan.json changes nothing apply or rollback does. A plan whose
// descriptor names another action id is refused.
func (p *Plan) Rebind() (*descriptors.Descriptor, error) {
	d, err := p.Decode()
	if err != nil {
		return nil, fmt.Errorf("plan %s: its descriptor no longer loads: %w", p.ID, err)
	}
	if d.ActionID != p.ActionID {
		return nil, fmt.Errorf("plan %s: its descriptor is of action %s, not %s: the plan was edited", p.ID, d.ActionID, p.ActionID)
	}
	p.ActionType, p.RiskLevel, p.Scope = string(d.ActionType), string(d.RiskLevel), d.Scope.Filesystem.Paths
	return d, nil
}

// keyDigest is the hex sha256 of parts, each as JSON, each followed by NUL.
func keyDigest(parts ...any) string {
	h := sha256.New()
	for _, part := range parts {
		b, _ := json.Marshal(part)
		h.Write(b)
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil))
}

// egressProxy is the proxy through which a descriptor's commands reach
// the network: the policy's allowed hosts, checked after resolution, and
// no loopback, link-local, private or metadata address but the ranges the
// policy names (docs/sandbox.md, "Network"). nil where the descriptor does
// not ask for the network or the policy does not allow it: then the
// sandbox has no way out at all.
func egressProxy(d *descriptors.Descriptor, pol *policy.Policy) *egress.Proxy {
	if !d.Sandbox.AllowNetwork || !pol.Network.SandboxNetwork {
		return nil
	}
	return &egress.Proxy{Policy: egress.Policy{HostAllowed: pol.HostAllowed, Named: pol.NamedRanges()}}
}
