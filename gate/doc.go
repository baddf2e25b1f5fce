// Package gate is the one owner of a plan's life and of every decision
// act makes about it: whether a descriptor may be dry-run, what a plan's
// risk and mode are, whether it may be promoted now, who confirmed it,
// and whether it may be rolled back (docs/lifecycle.md). The plan package
// makes drafts and the rollback package changes files; neither decides.
//
// # The session API
//
// Every door — the CLI, act run, act mcp, the Claude Code and Codex hooks
// and the adoption after PostToolUse — asks the gate and only translates
// its protocol to these calls and their typed answers back:
//
//   - [Gate.Check] (a descriptor's bytes) and [Gate.CheckBuilt] (one a
//     door built) run the rules and the policy; [Gate.PlanChecked] makes
//     the plan of what passed (check.go);
//   - [Gate.Decide] admits a saved plan now, and [Gate.Submit] is the
//     whole answer for a door that cannot wait at a terminal (session.go);
//   - [Gate.Apply] promotes, asking a person where one must confirm;
//     [Gate.Adopt] records as applied what an agent's own tool made;
//     [Gate.Rollback] undoes an applied action; [Gate.Deny] refuses a
//     plan for a person.
//
// Each call writes its record and returns a typed result or a refusal
// (a problem.List, [*ConfirmationRequired], [*ExpiredError]): a door never
// sequences [Gate.Admit], [Gate.Queue] and [Gate.Promote] itself, so a
// rule added here holds for every door at once.
//
// # A plan, in order
//
// [Gate.Plan] is the sequence of docs/lifecycle.md, "The sequence":
// check ([Gate.BeforePlan]: promote once, cooldown, max_runs), dry run
// (plan.DryRun, which the check overlaps), assess (act's risk and the
// policy's decision on what the draft changed; a block discards it), then
// save and record (the plan is saved only with its planned record).
//
// # An apply, in order
//
// [Gate.Apply]: decide ([Gate.Admit] derives again what plan.json says:
// expiry, denial, the change list, the risk, the policy now, what needs a
// person; docs/lifecycle.md, "What apply trusts"), approve ([Gate.Approve]
// against what the host counts as a confirmation, docs/approvals.md),
// then queue (pending a person, bounded by max_pending) or promote
// (a FILE_READ's files read again, then rollback.Apply under the state
// dir's lock; docs/promotion.md).
//
// # Records
//
// Every decision is one signed record in the state dir's audit log,
// audit/log.jsonl (docs/audit.md): planned, rejected, validate_blocked,
// queued, applied, apply_refused, reverted, rolled_back,
// rollback_refused, denied, expired, recovered, gc. A record that cannot be written is
// an error: act does not act unrecorded. A promotion's or rollback's
// record is written inside the engine's commit, beside the action record
// actions/<action id>.json. What the gate keeps of an action id besides —
// earlier refusals, sandbox runs, saved plans — is attempts/<action
// id>.json (store.go); the layout is docs/state.md's.
//
// # Files
//
// gate.go holds the Gate and the gate's rule ids; check.go and
// session.go the session API's checks and decisions; lifecycle.go and
// store.go a plan's state and the store; before.go, plan.go and
// decide.go the making of a plan; admit.go, approve.go, promote.go,
// rollback.go and readback.go an apply and its undoing; refusal.go and
// audit.go the records; inbox.go, layers.go and gc.go what waits and what
// is collected; risk.go and implied.go act's own risk assessment.
package gate
