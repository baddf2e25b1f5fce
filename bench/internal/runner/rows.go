package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"time"
)

// rows is the table of PERF.md's "The benchmarks bench/ reports". To add a
// row, append an entry: setup builds what the row needs (b.act(),
// b.hello(), data in b.work) and returns its A and B sides, usually
// b.command(argv...); a side can also be any func timing one run itself.
var rows = []row{
	{num: "1", name: "start", target: 4.0, setup: func(b *bench) (side, side) {
		return b.command(b.act(), "--version"), b.command(b.hello())
	}},
	{num: "2", name: "validate", target: 1.5, rssMiB: 32, setup: func(b *bench) (side, side) {
		return b.command(b.act(), "validate", b.example("file_write.yaml")), b.command(b.act(), "--version")
	}},
	{num: "2b", name: "validate-composite", target: 1.8, rssMiB: 32, setup: func(b *bench) (side, side) {
		return b.command(b.act(), "validate", b.example("composite.yaml")), b.command(b.act(), "--version")
	}},
}

func init() {
	rows = append(rows, row{num: "3", name: "plan-sandbox", target: 2.5, setup: func(b *bench) (side, side) {
		scope := b.tree("sandbox-100", 100)
		d := b.writeDescriptorOp(scope, "COMMAND_EXECUTION",
			"{create: [], modify: [], delete: []}",
			fmt.Sprintf("{argv: [\"true\"], workdir: %s}", scope))
		bwrap, err := exec.LookPath("bwrap")
		b.must(err)
		return b.command(b.act(), "plan", d), b.command(bwrap, "--unshare-all", "--die-with-parent", "--ro-bind", "/", "/", "true")
	}})
	rows = append(rows, row{num: "5", name: "diff", target: 0.25, setup: func(b *bench) (side, side) {
		// A command in the sandbox changes 100 of 10,000 files; B is diff -rq
		// of the trees before and after that change (warm).
		before := b.tree("cmd-before", 10_000)
		after := filepath.Join(b.work, "cmd-after")
		b.must(copyDir(before, after))
		for i := 0; i < 100; i++ {
			f, err := os.OpenFile(filepath.Join(after, "d000", fmt.Sprintf("f%04d", i)), os.O_APPEND|os.O_WRONLY, 0)
			b.must(err)
			_, err = f.WriteString("y\n")
			b.must(err)
			b.must(f.Close())
		}
		d := b.writeDescriptorOp(before, "COMMAND_EXECUTION",
			fmt.Sprintf(`{create: [], modify: ["%s/d000/f00*"], delete: []}`, before),
			fmt.Sprintf(`{argv: [sh, -c, "for f in d000/f00*; do echo y >> $f; done"], workdir: %s}`, before))
		diffPath, err := exec.LookPath("diff")
		b.must(err)
		argv := []string{diffPath, "-rq", before, after}
		if _, err := b.execStatus(argv, nil, 1); err != nil {
			b.fail("diff -rq: %v", err)
		}
		return b.command(b.act(), "plan", d), side{label: b.label(argv), run: func(int) (sample, error) { return b.execStatus(argv, nil, 1) }}
	}})
	rows = append(rows, row{num: "5b", name: "diff-file-ops", target: 0.25, setup: func(b *bench) (side, side) {
		// PERF.md's row 5 is a command changing 100 of 10,000 files; until
		// commands run in the sandbox, the same change made by a file
		// operation: FILE_DELETE of 100 files, against diff -rq of the
		// trees before and after (warm).
		before := b.tree("diff-before", 10_000)
		after := filepath.Join(b.work, "diff-after")
		b.must(copyDir(before, after))
		for i := 0; i < 100; i++ {
			b.must(os.Remove(filepath.Join(after, "d000", fmt.Sprintf("f%04d", i))))
		}
		d := b.writeDescriptorOp(before, "FILE_DELETE",
			fmt.Sprintf(`{create: [], modify: [], delete: ["%s/d000/f00*"]}`, before),
			fmt.Sprintf(`{paths: ["%s/d000/f00*"]}`, before))
		diffPath, err := exec.LookPath("diff")
		b.must(err)
		argv := []string{diffPath, "-rq", before, after}
		if _, err := b.execStatus(argv, nil, 1); err != nil {
			b.fail("diff -rq: %v", err)
		}
		return b.command(b.act(), "plan", d), side{label: b.label(argv), run: func(int) (sample, error) { return b.execStatus(argv, nil, 1) }}
	}})
	rows = append(rows, row{num: "4", name: "plan-scope-size", target: 1.1, setup: func(b *bench) (side, side) {
		big := b.tree("scope-100000", 100_000)
		small := b.tree("scope-100", 100)
		return b.command(b.act(), "plan", b.writeDescriptor(big)), b.command(b.act(), "plan", b.writeDescriptor(small))
	}})
}

// tree makes a directory of n 16-byte files in subdirectories of at most
// 1,000, and returns its path.
func (b *bench) tree(name string, n int) string {
	root := filepath.Join(b.work, name)
	content := []byte("0123456789abcde\n")
	for i := 0; i < n; i++ {
		dir := filepath.Join(root, fmt.Sprintf("d%03d", i/1000))
		if i%1000 == 0 {
			b.must(os.MkdirAll(dir, 0o755))
		}
		b.must(os.WriteFile(filepath.Join(dir, fmt.Sprintf("f%04d", i%1000)), content, 0o644))
	}
	return root
}

// writeDescriptor writes a FILE_WRITE descriptor creating one file at the
// top of scope, stamped now, and returns its path. Each run plans the same
// descriptor again: plan never touches the real tree.
func (b *bench) writeDescriptor(scope string) string {
	return b.writeDescriptorOp(scope, "FILE_WRITE",
		fmt.Sprintf("{create: [%s/new.txt], modify: [], delete: []}", scope),
		fmt.Sprintf(`{path: %s/new.txt, content: "hello\n"}`, scope))
}

// writeDescriptorOp writes a descriptor of type typ over scope with the
// given filesystem effects and operation (YAML flow maps). Each row plans
// it again and again under one action id, so max_runs is set high.
func (b *bench) writeDescriptorOp(scope, typ, effects, op string) string {
	now := time.Now().UTC().Format(time.RFC3339)
	d := fmt.Sprintf(`descriptor_version: "1.0"
action_id: 5d0c7a9e-3f1b-4c2d-8e4f-a0b1c2d3e4f5
created_at: %q
created_by: ai
intent_summary: Write one file into a large scope.
action_type: %[3]s
risk_level: LOW
scope:
  filesystem: {paths: [%[2]s], recursive: true}
  network: {required: false}
  ui: {required: false}
resources: {max_cpu_ms: 1000, max_memory_mb: 64, max_disk_mb: 1, max_duration_ms: 2000}
preconditions: {paths_exist: [%[2]s], network_available: false, user_idle: false}
effects:
  filesystem: %[4]s
  network: false
  system_state_change: false
sandbox: {required: true, sandbox_type: container, allow_network: false, max_runs: 1000000}
rollback: {supported: true, rollback_type: filesystem_snapshot, rollback_scope: declared_effects_only}
confirmation: {required: false, reason: "", cooldown_on_repeat: false}
audit: {log: true, log_level: SUMMARY, retain_days: 30}
operation: %[5]s
`, now, scope, typ, effects, op)
	p := scope + "-" + typ + ".yaml"
	b.must(os.WriteFile(p, []byte(d), 0o644))
	return p
}

// copyDir copies a tree of directories and regular files.
func copyDir(from, to string) error {
	return filepath.WalkDir(from, func(p string, e os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(from, p)
		dst := filepath.Join(to, rel)
		if e.IsDir() {
			return os.MkdirAll(dst, 0o755)
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(dst, data, 0o644)
	})
}
