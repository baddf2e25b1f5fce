// Command auditbench times the audit library in-process for bench rows 8
// and 9 (bench/README.md), printing one duration in nanoseconds:
//
//	auditbench append DIR      one Append (sign, durable append, checkpoint) to the log in DIR
//	auditbench write FILE N    a durable append of N bytes to FILE (write + fdatasync)
//	auditbench fill DIR N      make a log of N records in DIR (untimed setup)
//	auditbench verify D1 D2    (Verify(D2) − Verify(D1)) / (records(D2) − records(D1)), CPU time
//	auditbench ed25519         one ed25519.Verify of 2 KiB (mean of 1,000), CPU time
package main

import (
	"context"
	"crypto/ed25519"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/act-project/act/audit"
)

// event is a typical DETAILED applied record (about 1.6 KiB as a line).
func event() audit.Event {
	return audit.Event{Name: audit.EventApplied, ActionID: "5d0c7a9e-3f1b-4c2d-8e4f-a0b1c2d3e4f5", PlanID: "p-0123456789",
		DescriptorSHA256: strings.Repeat("ab", 32), Status: "succeeded", Reason: "applied",
		Rules: []string{"apply.ok"}, Risk: &audit.Risk{Declared: "LOW", Assessed: "LOW"},
		Policy: &audit.Policy{Mode: "allow", Source: "default"}, Approval: &audit.Approval{Via: "none-needed"},
		Via: "cli", Changes: &audit.Changes{Created: 1, Files: []audit.FileChange{{Path: "/srv/app/new.txt", Kind: "created",
			Type: "file", Mode: "0644", Size: 6, SHA256After: strings.Repeat("cd", 32)}}},
		Started: time.Now(), Finished: time.Now(), User: "bench", Host: "bench", LogLevel: audit.LevelDetailed}
}

// cpuTime is the process's user+system CPU time. Rows 9's sides are
// CPU-bound and in-process, so they are timed in CPU time, which a loaded
// shared machine disturbs far less than the wall clock.
func cpuTime() time.Duration {
	var ru unix.Rusage
	unix.Getrusage(unix.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "auditbench:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	if len(args) == 0 {
		return fmt.Errorf("usage: auditbench append|write|fill|verify|ed25519 ...")
	}
	switch args[0] {
	case "append":
		l, err := audit.Open(args[1], "bench.local/audit")
		if err != nil {
			return err
		}
		defer l.Close()
		ev := event()
		start := time.Now()
		if _, err := l.Append(context.Background(), ev); err != nil {
			return err
		}
		fmt.Println(time.Since(start).Nanoseconds())
	case "write":
		n, _ := strconv.Atoi(args[2])
		f, err := os.OpenFile(args[1], os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
		if err != nil {
			return err
		}
		defer f.Close()
		b := make([]byte, n)
		for i := range b {
			b[i] = 'x'
		}
		b[n-1] = '\n'
		start := time.Now()
		if _, err := f.Write(b); err != nil {
			return err
		}
		if err := unix.Fdatasync(int(f.Fd())); err != nil {
			return err
		}
		fmt.Println(time.Since(start).Nanoseconds())
	case "fill":
		n, _ := strconv.Atoi(args[2])
		l, err := audit.Open(args[1], "bench.local/audit")
		if err != nil {
			return err
		}
		defer l.Close()
		evs := make([]audit.Event, n)
		for i := range evs {
			evs[i] = event()
		}
		if _, err := l.AppendBatch(context.Background(), evs, nil); err != nil {
			return err
		}
	case "verify":
		var t [2]time.Duration
		var recs [2]int64
		for i, d := range args[1:3] {
			start := cpuTime()
			r, err := audit.Verify(d, audit.VerifyOptions{})
			if err != nil {
				return err
			}
			t[i], recs[i] = cpuTime()-start, r.Records
		}
		fmt.Println(int64(t[1]-t[0]) / (recs[1] - recs[0]))
	case "ed25519":
		_, priv, _ := ed25519.GenerateKey(nil)
		msg := make([]byte, 2048)
		sig := ed25519.Sign(priv, msg)
		pub := priv.Public().(ed25519.PublicKey)
		const k = 1000
		start := cpuTime()
		for i := 0; i < k; i++ {
			if !ed25519.Verify(pub, msg, sig) {
				return fmt.Errorf("verify failed")
			}
		}
		fmt.Println((cpuTime() - start).Nanoseconds() / k)
	default:
		return fmt.Errorf("unknown mode %q", args[0])
	}
	return nil
}
