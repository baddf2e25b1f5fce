package cmd

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strconv"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/act-project/act/audit"
	"github.com/act-project/act/internal/state"
	"github.com/act-project/act/review"
)

func newAuditCommand(env *Env) *cli.Command {
	// dir is the log directory, its key made on first use (docs/audit.md),
	// so that the key can be pinned before the first record.
	dir := func() (string, error) {
		d, err := env.stateDir()
		if err != nil {
			return "", err
		}
		d = state.Dir{Root: d}.Audit()
		return d, audit.EnsureKey(d)
	}
	return &cli.Command{
		Name:      "audit",
		Usage:     "verify and inspect the signed audit log",
		UsageText: "act audit verify|checkpoint|show|pubkey|export|witness",
		Description: `The audit log (<home>/audit, docs/audit.md) holds one signed record per
   decision act made. Every audit command makes the log's signing key if
   there is none yet, so the key can be printed and kept before the first
   record; an empty log verifies as 0 records, and its checkpoint is the
   signed one of size 0.

EXAMPLES:
   act audit verify
   act audit checkpoint > saved.cp; act audit verify --since saved.cp
   act audit show 12
   act audit pubkey --note
   act audit export --tiles /srv/www/act-log
   act audit witness

` + endsWith("success", 1, 2).note(1, "error or a damaged log (the first bad record is named)").help(),
		Subcommands: []*cli.Command{
			{
				Name:      "verify",
				Usage:     "prove no record was altered, removed, duplicated, reordered or truncated",
				UsageText: "act audit verify [--since FILE] [--key PEM] [--witnesses] [--json]",
				Description: `Verifies every record, the hash chain and the signed checkpoints
   (docs/audit.md, "Verifying"). When the policy lists witnesses
   (audit.witnesses), it also checks the cosigned checkpoint stored for
   each: signed by the log's key, cosigned by the policy's key for that
   witness, and on this log (a log rewritten below a cosigned size fails,
   whatever --since says); it says which witness cosigned which size, and
   fails when the quorum has not cosigned a record that is due: one
   appended more than audit.witness_grace ago by its own time, or any
   record once the quorum's last cosignature is older than that by the
   witnesses' clocks (or there is none): a record's own time is the word
   of the key's holder (docs/audit.md, "Verifying with witnesses").
   With --witnesses it first asks every witness of the policy to cosign
   the log's newest checkpoint now, as act audit witness does, and stores
   what they cosign: a witness that holds a checkpoint of this log that
   the log does not extend (a rewrite, a truncation, an older copy of the
   state directory put back) says so, and verify fails (forked).

EXAMPLES:
   act audit verify
   act audit verify --witnesses

` + endsWith("success", 1, 2).note(1, "error, a damaged log, or a quorum not met").help(),
				Flags: []cli.Flag{
					&cli.StringFlag{Name: "since", Usage: "a checkpoint saved earlier: prove the log extends it"},
					&cli.StringFlag{Name: "key", Usage: "the public key (PEM) the log must be signed by, instead of <home>/audit/key.pub"},
					&cli.BoolFlag{Name: "witnesses", Usage: "ask the policy's witnesses now, and store what they cosign"},
				},
				Action: func(c *cli.Context) error {
					if c.NArg() != 0 {
						return usagef("audit verify takes no arguments")
					}
					res := &result{}
					var opts audit.VerifyOptions
					var err error
					if f := c.String("since"); f != "" {
						if opts.Since, err = os.ReadFile(f); err != nil {
							return env.finish(res, "ok", err, nil)
						}
					}
					if f := c.String("key"); f != "" {
						b, err := os.ReadFile(f)
						if err == nil {
							opts.PublicKey, err = audit.ParsePublicKeyPEM(b)
						}
						if err != nil {
							return env.finish(res, "ok", fmt.Errorf("--key %s: %w", f, err), nil)
						}
					}
					// With --key the log may be another's copy: nothing
					// is made in it.
					d, err := env.stateDir()
					if err == nil {
						d = state.Dir{Root: d}.Audit()
						if opts.PublicKey == nil {
							d, err = dir()
						}
					}
					if err != nil {
						return env.finish(res, "ok", err, nil)
					}
					if err := env.witnessOptions(&opts); err != nil {
						return env.finish(res, "ok", err, nil)
					}
					var r audit.Report
					if c.Bool("witnesses") {
						switch {
						case c.String("key") != "":
							return usagef("audit verify: --witnesses stores cosignatures in the log's witness/: not with --key")
						case len(opts.Witnesses) == 0:
							return env.finish(res, "ok", fmt.Errorf("the policy lists no witnesses (audit.witnesses, docs/policy.md)"), nil)
						}
						r, err = audit.VerifyAsking(c.Context, d, opts, audit.WitnessOptions{})
						if !env.json {
							for _, w := range r.Asked {
								fmt.Fprintln(env.Stdio.Out, witnessLine(w))
							}
						}
					} else {
						r, err = audit.Verify(d, opts)
					}
					res.Data = r
					return env.finish(res, "ok", err, func(w io.Writer, _ styles) {
						fmt.Fprintf(w, "ok: %d records", r.Records)
						if r.Records > 0 {
							fmt.Fprintf(w, ", %s to %s, root %s", r.First.UTC().Format(time.RFC3339), r.Last.UTC().Format(time.RFC3339), r.Root)
						}
						if r.Pruned > 0 {
							fmt.Fprintf(w, ", %d pruned through %s", r.Pruned, r.PrunedThrough.UTC().Format(time.RFC3339))
						}
						if opts.Since != nil {
							fmt.Fprintf(w, ", extends the saved checkpoint of %d records", r.Since)
						}
						fmt.Fprintln(w)
						renderWitnessed(w, r, opts.Grace)
					})
				},
			},
			{
				Name:      "checkpoint",
				Usage:     "print the signed checkpoint, to keep off this machine",
				UsageText: "act audit checkpoint",
				Action: func(c *cli.Context) error {
					res := &result{}
					d, err := dir()
					if err != nil {
						return env.finish(res, "ok", err, nil)
					}
					cp, err := audit.CheckpointText(d, audit.VerifyOptions{})
					res.Data = map[string]string{"checkpoint": cp}
					return env.finish(res, "ok", err, func(w io.Writer, _ styles) { io.WriteString(w, cp) })
				},
			},
			{
				Name:      "show",
				Usage:     "print one record decoded, with its inclusion proof",
				UsageText: "act audit show SEQ",
				Action: func(c *cli.Context) error {
					if c.NArg() != 1 {
						return usagef("audit show takes one record number")
					}
					seq, err := strconv.ParseInt(c.Args().First(), 10, 64)
					if err != nil || seq < 0 {
						return usagef("audit show: %q is not a record number", c.Args().First())
					}
					res := &result{}
					d, err := dir()
					if err != nil {
						return env.finish(res, "ok", err, nil)
					}
					s, err := audit.Show(d, seq, audit.VerifyOptions{})
					res.Data = s
					return env.finish(res, "ok", err, func(w io.Writer, _ styles) {
						if s.Pruned {
							fmt.Fprintf(w, "Record %d: pruned (leaf hash %s)\n", s.Seq, s.LeafHash)
						} else {
							p := s.Statement.Predicate
							fmt.Fprintf(w, "Record %d: %s at %s\n", s.Seq, escapeLine(p.Name), p.Time.UTC().Format(time.RFC3339))
							b, _ := json.MarshalIndent(s.Statement, "", "  ")
							b = review.JSONVisible(b)
							fmt.Fprintf(w, "%s\n", b)
						}
						fmt.Fprintf(w, "Inclusion proof (%d hashes) against:\n%s", len(s.Proof), s.Checkpoint)
						for _, h := range s.Proof {
							fmt.Fprintf(w, "  %s\n", h)
						}
					})
				},
			},
			{
				Name:      "export",
				Usage:     "publish the log as c2sp.org/tlog-tiles, for a static web server",
				UsageText: "act audit export --tiles DIR [--json]",
				Flags:     []cli.Flag{&cli.StringFlag{Name: "tiles", Usage: "the directory to write the tiles and checkpoint in (made if missing)"}},
				Description: `Verifies the log, then writes it to DIR as a tiled transparency log
   (c2sp.org/tlog-tiles, docs/audit.md "Publishing the log as tiles"),
   for any static web server and any tlog client:
   - DIR/tile/<L>/<N>[.p/<W>]: the Merkle tree's hash tiles, 256 hashes a
     full tile, N in zero-padded path elements (tile/0/x001/234);
   - DIR/tile/entries/<N>[.p/<W>]: the records as entry bundles, each entry
     a 2-byte big-endian length and the record's statement (the DSSE
     payload, whose RFC 6962 leaf hash is the tree's leaf);
   - DIR/checkpoint: the log's own newest signed checkpoint, written last,
     with the cosignatures act audit witness stored for it.
   A later export into the same DIR writes only what is new: full tiles are
   never rewritten, the partial tiles of the new size are added beside the
   older ones, each file through a temporary name and a rename. It refuses
   a DIR whose checkpoint is another log's, larger than the log, or not
   extended by it. Entry bundles holding a record pruned by act gc, or one
   larger than 65,535 bytes, are withheld (named in the output); their
   hash tiles are written, so every proof still works.

EXAMPLES:
   act audit export --tiles /srv/www/act-log
   act --json audit export --tiles out

` + endsWith("success", 1, 2).note(1, "error, a damaged log, or a DIR that is not this log's").help(),
				Action: func(c *cli.Context) error {
					if c.NArg() != 0 {
						return usagef("audit export takes no arguments")
					}
					out := c.String("tiles")
					if out == "" {
						return usagef("audit export: --tiles DIR is required")
					}
					res := &result{}
					d, err := dir()
					if err != nil {
						return env.finish(res, "ok", err, nil)
					}
					var opts audit.VerifyOptions
					if err := env.witnessOptions(&opts); err != nil {
						return env.finish(res, "ok", err, nil)
					}
					r, err := audit.ExportTiles(d, out, opts)
					res.Data = r
					return env.finish(res, "ok", err, func(w io.Writer, _ styles) {
						fmt.Fprintf(w, "exported %d records to %s (%d files written", r.Records, escapeLine(out), len(r.Written))
						if r.Previous > 0 {
							fmt.Fprintf(w, ", extending the export of %d records", r.Previous)
						}
						fmt.Fprintln(w, ")")
						for _, wh := range r.Withheld {
							fmt.Fprintf(w, "withheld %s\n", escapeLine(wh))
						}
					})
				},
			},
			newAuditWitnessCommand(env, dir),
			{
				Name:      "pubkey",
				Usage:     "print the log's public key (PEM), or its note verifier key",
				UsageText: "act audit pubkey [--note]",
				Flags:     []cli.Flag{&cli.BoolFlag{Name: "note", Usage: "print the note verifier key of the checkpoints"}},
				Action: func(c *cli.Context) error {
					res := &result{}
					d, err := dir()
					if err != nil {
						return env.finish(res, "ok", err, nil)
					}
					pem, nk, err := audit.Keys(d)
					if err == nil && c.Bool("note") && nk == "" {
						err = fmt.Errorf("audit: the log holds records but no checkpoint file: %s says why", env.actLine("audit", "verify"))
					}
					res.Data = map[string]string{"public_key": string(pem), "note_key": nk}
					return env.finish(res, "ok", err, func(w io.Writer, _ styles) {
						if c.Bool("note") {
							fmt.Fprintln(w, nk)
						} else {
							w.Write(pem)
						}
					})
				},
			},
		},
	}
}
