package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Rows 8 and 9 time the audit library in-process, through
// bench/internal/auditbench (a separate binary: the runner itself uses the
// standard library only). Each run starts the helper, which times one
// operation itself and prints nanoseconds; process start-up is not
// counted on either side.
func init() {
	rows = append(rows, row{num: "8", name: "audit-append", target: 1.5, setup: func(b *bench) (side, side) {
		// A: one Append (sign the record and its checkpoint, one durable
		// write, the cache updates) to a log of 100 records.
		// B: write + fdatasync of a line of the same size to a file.
		ab := b.auditbench()
		dir := filepath.Join(b.work, "audit-append")
		b.runHelper(ab, "fill", dir, "100")
		data, err := os.ReadFile(filepath.Join(dir, "log.jsonl"))
		b.must(err)
		size := len(data) / bytes.Count(data, []byte("\n"))
		return b.helperSide(ab, "append", dir), b.helperSide(ab, "write", filepath.Join(b.work, "audit-write"), strconv.Itoa(size))
	}})
	rows = append(rows, row{num: "9", name: "audit-verify", target: 2.0, setup: func(b *bench) (side, side) {
		// A: (Verify of 2,000 records − Verify of 1,000) / 1,000, CPU time.
		// B: one ed25519.Verify of 2 KiB, CPU time.
		ab := b.auditbench()
		d1, d2 := filepath.Join(b.work, "audit-1000"), filepath.Join(b.work, "audit-2000")
		b.runHelper(ab, "fill", d1, "1000")
		b.runHelper(ab, "fill", d2, "2000")
		return b.helperSide(ab, "verify", d1, d2), b.helperSide(ab, "ed25519")
	}})
}

// auditbench builds bench/internal/auditbench, once, and returns its path.
func (b *bench) auditbench() string {
	if p, ok := b.built["auditbench"]; ok {
		return p
	}
	p := filepath.Join(b.work, "bin", "auditbench")
	b.goBuild(b.root, "-o", p, "./bench/internal/auditbench")
	b.built["auditbench"] = p
	return p
}

func (b *bench) runHelper(argv ...string) {
	var out bytes.Buffer
	if _, err := b.exec(argv, &out); err != nil {
		b.fail("%s: %v\n%s", b.label(argv), err, out.String())
	}
}

// helperSide is a side whose sample is the duration the helper prints.
func (b *bench) helperSide(argv ...string) side {
	run := func(int) (sample, error) {
		var out bytes.Buffer
		if _, err := b.exec(argv, &out); err != nil {
			return sample{}, fmt.Errorf("%v: %s", err, out.String())
		}
		ns, err := strconv.ParseInt(strings.TrimSpace(out.String()), 10, 64)
		if err != nil {
			return sample{}, fmt.Errorf("%s: output %q", b.label(argv), out.String())
		}
		return sample{wall: time.Duration(ns), maxRSS: -1}, nil
	}
	if _, err := run(-1); err != nil {
		b.fail("%v", err)
	}
	return side{label: b.label(argv), run: run}
}
