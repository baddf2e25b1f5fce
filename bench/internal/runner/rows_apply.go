package main

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"time"
)

// Rows 6 and 7: act apply PLAN_ID against cp and sync of the same data.
//
// An action id is promoted once, so every A run applies a plan of its own:
// before the clock starts the side writes a descriptor with a fresh
// action_id whose command (run by act plan in the sandbox) copies the
// source into a fresh target, plans it and syncs; only `act apply PLAN_ID`
// is timed. B copies the same source (in the page cache, as A's layer is)
// to a fresh target on the same filesystem, after the same sync. Targets
// are fresh directories, never deleted during the row: on ext4 without a
// journal, creating files just after deleting many is 4–8× slower. The big
// file of row 7 is the exception (deleted after each run, untimed): 34 runs
// of 2 × 256 MiB would otherwise fill the disk.
func init() {
	rows = append(rows,
		row{num: "6", name: "apply-many-100", target: 2.0, setup: func(b *bench) (side, side) {
			return b.applyMany(100, false)
		}},
		row{num: "6b", name: "apply-many-10000", target: 2.0, setup: func(b *bench) (side, side) {
			return b.applyMany(10_000, false)
		}},
		row{num: "6d", name: "apply-many-10000-dirty", target: 2.0, setup: func(b *bench) (side, side) {
			return b.applyMany(10_000, true)
		}},
		row{num: "7", name: "apply-big", target: 1.3, rssMiB: 64, setup: func(b *bench) (side, side) {
			return b.applyBig(false)
		}},
		row{num: "7d", name: "apply-big-dirty", target: 1.3, rssMiB: 64, setup: func(b *bench) (side, side) {
			return b.applyBig(true)
		}},
	)
}

// applyMany is row 6: apply a plan creating n × 4 KiB files (in
// directories of at most 1,000) against `cp -a SRC D && sync`. With dirty,
// A's layer is not synced between plan and apply (apply straight after
// plan, so the layer's writeback is charged to the apply); B's source is
// clean either way.
func (b *bench) applyMany(n int, dirty bool) (side, side) {
	name := fmt.Sprintf("apply-many-%d", n)
	if dirty {
		name += "-dirty"
	}
	scope := filepath.Join(b.work, name)
	src := filepath.Join(scope, "src")
	b.randomTree(src, n, 4096)
	a := b.applySide(scope, func(target string) (effects, argv string) {
		return fmt.Sprintf(`{create: [%q, "%s/**"], modify: [], delete: []}`, target, target),
			fmt.Sprintf(`[cp, -a, %q, %q]`, src, target)
	}, dirty, false)
	a.label = fmt.Sprintf("act apply PLAN_ID (a fresh plan: the sandbox ran cp -a SRC T, %d × 4 KiB%s)", n, syncedNote(dirty))
	return a, b.baseline(filepath.Join(b.work, name+"-cp"), "d", []string{"cp", "-a", src}, []string{"sync"}, false, false,
		fmt.Sprintf("cp -a SRC $(mktemp -d)/d && sync (the same %d files, in the page cache)", n))
}

// applyBig is row 7: apply a plan creating one 256 MiB file against
// `cp BIG D/big && sync D/big`.
func (b *bench) applyBig(dirty bool) (side, side) {
	name := "apply-big"
	if dirty {
		name += "-dirty"
	}
	scope := filepath.Join(b.work, name)
	b.must(os.MkdirAll(scope, 0o755))
	big := filepath.Join(scope, "big")
	b.randomFile(big, 256<<20)
	a := b.applySide(scope, func(target string) (effects, argv string) {
		return fmt.Sprintf(`{create: [%q], modify: [], delete: []}`, target),
			fmt.Sprintf(`[cp, %q, %q]`, big, target)
	}, dirty, true)
	a.label = "act apply PLAN_ID (a fresh plan: the sandbox ran cp BIG T, 256 MiB" + syncedNote(dirty) + ")"
	return a, b.baseline(filepath.Join(b.work, name+"-cp"), "big", []string{"cp", big}, []string{"sync"}, true, true,
		"cp BIG D/big && sync D/big (the same file, in the page cache)")
}

func syncedNote(dirty bool) string {
	if dirty {
		return "; the layer NOT synced before apply"
	}
	return "; everything synced before apply"
}

// applySide is the A side of rows 6 and 7: each run plans, untimed, a
// COMMAND_EXECUTION over scope whose command (argv of op, given the run's
// fresh target path) creates the target, syncs unless dirty, and times
// `act apply PLAN_ID`. With remove, the target is deleted after the run.
func (b *bench) applySide(scope string, op func(target string) (effects, argv string), dirty, remove bool) side {
	act := b.act()
	count := 0
	prepare := func() (string, []string) {
		count++
		actions++
		target := filepath.Join(scope, fmt.Sprintf("t%03d", count))
		effects, argv := op(target)
		d := b.applyDescriptor(scope, actions, effects, argv)
		id, err := b.planID(act, d)
		b.must(err)
		return target, []string{act, "apply", "--confirm", id}
	}
	run := func(int) (s sample, err error) {
		defer func() {
			// prepare fails with b.fail; a side reports errors instead.
			if p := recover(); p != nil {
				e, ok := p.(rowError)
				if !ok {
					panic(p)
				}
				err = e
			}
		}()
		target, argv := prepare()
		if !dirty {
			syscall.Sync()
		}
		var out bytes.Buffer
		s, err = b.exec(argv, &out)
		if err != nil {
			return s, fmt.Errorf("%v\n%s", err, tail(out.String()))
		}
		if _, serr := os.Lstat(target); serr != nil {
			return s, fmt.Errorf("act apply exited 0 but: %v", serr)
		}
		if remove {
			b.must(os.RemoveAll(target))
			syscall.Sync()
		}
		return s, nil
	}
	// One untimed run, as b.command does: a setup failure stops the row
	// before the table counts anything.
	if _, err := run(0); err != nil {
		b.fail("act apply: %v", err)
	}
	return side{run: run}
}

// baseline is the B side of rows 6, 7, m1 and m2: each run makes a fresh
// directory under parent (untimed, then sync), and times copy (argv + the
// source) to DIR/name followed, unless syncArgv is nil, by syncArgv (+
// DIR/name when syncTarget: `sync FILE` fsyncs that file) as two
// processes, the sum of their wall clocks. With remove, DIR is deleted
// after the run (untimed), so that big copies do not fill the disk.
func (b *bench) baseline(parent, name string, copyArgv, syncArgv []string, syncTarget, remove bool, label string) side {
	b.must(os.MkdirAll(parent, 0o755))
	for _, argv := range [][]string{copyArgv, syncArgv} {
		if argv == nil {
			continue
		}
		p, err := exec.LookPath(argv[0])
		b.must(err)
		argv[0] = p
	}
	run := func(int) (sample, error) {
		dir, err := os.MkdirTemp(parent, "d")
		if err != nil {
			return sample{}, err
		}
		dst := filepath.Join(dir, name)
		cp := append(append([]string{}, copyArgv...), dst)
		syscall.Sync()
		s, err := b.exec(cp, nil)
		if err != nil {
			return s, fmt.Errorf("%s: %v", b.label(cp), err)
		}
		if syncArgv != nil {
			sy := syncArgv
			if syncTarget {
				sy = append(append([]string{}, syncArgv...), dst)
			}
			s2, err := b.exec(sy, nil)
			if err != nil {
				return s2, fmt.Errorf("%s: %v", b.label(sy), err)
			}
			s = sample{wall: s.wall + s2.wall, maxRSS: -1}
		}
		if remove {
			if err := os.RemoveAll(dir); err != nil {
				return sample{}, err
			}
			syscall.Sync()
		}
		s.maxRSS = -1
		return s, nil
	}
	if _, err := run(0); err != nil {
		b.fail("%s: %v", label, err)
	}
	return side{label: label, run: run}
}

// actions numbers the action ids of the apply rows: each is promoted once.
var actions int

// applyDescriptor writes the descriptor of run n of an apply row: a
// COMMAND_EXECUTION over scope with a fresh action_id and room for 256 MiB
// (where the memory cap is a cgroup v1 one, the page cache the command
// fills counts against it), and returns its path. Rows m1 and m2 plan one
// such descriptor again and again, so max_runs is set high.
func (b *bench) applyDescriptor(scope string, n int, effects, argv string) string {
	now := time.Now().UTC().Format(time.RFC3339)
	d := fmt.Sprintf(`descriptor_version: "1.0"
action_id: 5d0c7a9e-3f1b-4c2d-8e4f-%012x
created_at: %q
created_by: ai
intent_summary: Create files for the apply benchmark.
action_type: COMMAND_EXECUTION
risk_level: LOW
scope:
  filesystem: {paths: [%q], recursive: true}
  network: {required: false}
  ui: {required: false}
resources: {max_cpu_ms: 60000, max_memory_mb: 1024, max_disk_mb: 1024, max_duration_ms: 120000}
preconditions: {paths_exist: [%[3]q], network_available: false, user_idle: false}
effects:
  filesystem: %[4]s
  network: false
  system_state_change: false
sandbox: {required: true, sandbox_type: container, allow_network: false, max_runs: 1000000}
rollback: {supported: true, rollback_type: filesystem_snapshot, rollback_scope: declared_effects_only}
confirmation: {required: false, reason: "", cooldown_on_repeat: false}
audit: {log: true, log_level: SUMMARY, retain_days: 30}
operation: {argv: %[5]s, workdir: %[3]q}
`, n, now, scope, effects, argv)
	p := fmt.Sprintf("%s-%03d.yaml", scope, n)
	b.must(os.WriteFile(p, []byte(d), 0o644))
	return p
}

// randomTree makes n files of size random bytes under root, in
// subdirectories of at most 1,000, and syncs them.
func (b *bench) randomTree(root string, n, size int) {
	r := rand.NewChaCha8([32]byte{1})
	buf := make([]byte, size)
	for i := 0; i < n; i++ {
		dir := filepath.Join(root, fmt.Sprintf("d%03d", i/1000))
		if i%1000 == 0 {
			b.must(os.MkdirAll(dir, 0o755))
		}
		r.Read(buf)
		b.must(os.WriteFile(filepath.Join(dir, fmt.Sprintf("f%04d", i%1000)), buf, 0o644))
	}
	syscall.Sync()
}

// randomFile writes size random bytes to name and syncs it.
func (b *bench) randomFile(name string, size int) {
	f, err := os.Create(name)
	b.must(err)
	r := rand.NewChaCha8([32]byte{2})
	buf := make([]byte, 1<<20)
	for size > 0 {
		r.Read(buf)
		k := min(size, len(buf))
		_, err := f.Write(buf[:k])
		b.must(err)
		size -= k
	}
	b.must(f.Sync())
	b.must(f.Close())
}

var (
	planIDRE  = regexp.MustCompile(`"plan_id":\s*"([0-9a-f]{16})"`)
	messageRE = regexp.MustCompile(`"message":\s*("(?:[^"\\]|\\.)*")`)
)

// planID runs act plan --json on descriptor d and returns the plan's id.
// The output (megabytes for 10,000 changes) goes to a file of which only
// the head is read: the runner's own peak RSS is the floor of every
// child's maxrss it reports, so it must stay small.
func (b *bench) planID(act, d string) (string, error) {
	outName := d + ".plan.json"
	f, err := os.Create(outName)
	if err != nil {
		return "", err
	}
	defer os.Remove(outName)
	defer f.Close()
	cmd := &exec.Cmd{Path: act, Args: []string{act, "plan", "--json", d}, Env: b.env, Dir: b.work,
		Stdin: b.devnull, Stdout: f, Stderr: f}
	err = cmd.Run()
	head := make([]byte, 8192)
	k, _ := f.ReadAt(head, 0)
	head = head[:k]
	if err != nil {
		// The table shows an error's first line: put act's message there.
		msg := ""
		if m := messageRE.FindSubmatch(head); m != nil {
			msg = ": " + string(m[1])
		}
		return "", fmt.Errorf("act plan %s: %v%s\n%s", d, err, msg, tail(string(head)))
	}
	m := planIDRE.FindSubmatch(head)
	if m == nil {
		return "", fmt.Errorf("act plan %s: no plan id in its output\n%s", d, tail(string(head)))
	}
	return string(m[1]), nil
}

// tail is the last lines of a command's output, for an error message.
func tail(s string) string {
	s = strings.TrimSpace(s)
	if len(s) > 2000 {
		s = "…" + s[len(s)-2000:]
	}
	return s
}
