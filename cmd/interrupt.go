package cmd

import (
	"context"
	"errors"
	"os"
	"os/signal"
	"syscall"

	"github.com/act-project/act/internal/outcome"
)

// Ctrl-C (SIGINT), or SIGTERM, while a dry run is under way (act plan, the
// planning of act apply DESCRIPTOR) stops it cleanly: the context is
// cancelled, so the sandbox kills the command and its cgroups are removed
// (plan.Settle, before act exits); the part-made plan directory is
// removed; the run reserved against sandbox.max_runs is given back and no
// refusal is recorded (gate.Plan); act says so and exits 130, as a shell
// reports a command ended by SIGINT. Elsewhere (a person's y/N, a
// promotion's journal) the signal keeps its default: a promotion is
// recovered by the next act (docs/promotion.md).

// errInterrupted is the dry run stopped by a signal.
var errInterrupted = interruptedError{}

type interruptedError struct{}

func (interruptedError) Error() string {
	return "the dry run was stopped; nothing was promoted, the run does not count"
}

// Outcome is exit 130: the shell's code of a command ended by SIGINT.
func (interruptedError) Outcome() outcome.Outcome { return outcome.Interrupted }

// interruptible returns ctx, cancelled at the first SIGINT or SIGTERM, and
// stop, which restores the signals' default and reports whether one came.
func interruptible(ctx context.Context) (context.Context, func() bool) {
	sctx, cancel := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	return sctx, func() bool {
		got := sctx.Err() != nil && ctx.Err() == nil
		cancel()
		return got
	}
}

// isInterrupted reports whether err is the dry run stopped by a signal.
func isInterrupted(err error) bool { return errors.Is(err, errInterrupted) }
