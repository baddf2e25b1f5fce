package cmd

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/act-project/act/audit"
)

func newGCCommand(env *Env) *cli.Command {
	return &cli.Command{
		Name:      "gc",
		Usage:     "remove what is past the host's retention",
		UsageText: "act gc [--json]",
		Description: `Drops the bodies of audit records older than the host policy's
   audit.retain_days, keeping their leaf hashes, so act audit verify still
   proves the whole log and says how many records were pruned and up to
   when (docs/audit.md). Every gc is itself recorded. (Plans, layers and
   backups past retention are not removed yet.)

EXAMPLES:
   act gc
   act --json gc

EXIT STATUS:
   0 success, 1 error, 2 usage`,
		Action: func(c *cli.Context) error {
			if c.NArg() != 0 {
				return usagef("gc takes no arguments")
			}
			res := &result{}
			pol, err := env.loadPolicy(res)
			if err != nil {
				return env.finish(res, "ok", err, nil)
			}
			stateDir, err := env.stateDir()
			if err != nil {
				return env.finish(res, "ok", err, nil)
			}
			info, err := runGC(c.Context, env, filepath.Join(stateDir, "audit"), pol.Audit.RetainDays)
			res.Data = info
			return env.finish(res, "ok", err, func(w io.Writer, _ styles) {
				if info.Count == 0 {
					fmt.Fprintf(w, "gc: no audit record older than %s\n", info.Before.Format(time.RFC3339))
					return
				}
				fmt.Fprintf(w, "gc: pruned %d audit records through record %d (older than %s)\n", info.Count, info.Through, info.Before.Format(time.RFC3339))
			})
		},
	}
}

// runGC prunes audit records older than retainDays and records the gc.
func runGC(ctx context.Context, env *Env, dir string, retainDays int64) (audit.PruneInfo, error) {
	before := env.Now().UTC().Add(-time.Duration(retainDays) * 24 * time.Hour)
	l, err := audit.Open(dir, audit.HostOrigin())
	if err != nil {
		return audit.PruneInfo{}, err
	}
	defer l.Close()
	l.Now = env.Now
	info, err := l.PruneBefore(ctx, before)
	if err != nil || info.Count > 0 {
		return info, err // PruneBefore recorded it
	}
	_, err = l.Append(ctx, audit.Event{Name: audit.EventGC, Status: "ok", Pruned: &info,
		Reason: "nothing past retention"})
	return info, err
}
