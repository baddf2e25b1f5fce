package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Rows m1 and m2: PERF.md's memory bounds for plan — one 256 MiB file
// (content streamed and hashed, never held whole) and 10,000 changes. A is
// act plan of a sandboxed cp that makes them; B is the same cp, unsandboxed,
// into a fresh directory. The ratio is what plan adds to the command it
// dry-runs; PERF.md's targets are 3.0 and 2.0.
func init() {
	rows = append(rows,
		row{num: "m1", name: "plan-big", target: 3.0, rssMiB: 64, setup: func(b *bench) (side, side) {
			return b.planCopy("plan-big", "cp", func(src string) { b.randomFile(filepath.Join(src, "big"), 256<<20) }, "big", true)
		}},
		row{num: "m2", name: "plan-many-10000", target: 2.0, rssMiB: 128, setup: func(b *bench) (side, side) {
			return b.planCopy("plan-many", "cp -a", func(src string) { b.randomTree(filepath.Join(src, "tree"), 10_000, 4096) }, "tree", false)
		}},
	)
}

// planCopy makes the source (fill) under a scope and returns the sides: A
// plans `<cp> SRC/name SCOPE/new` in the sandbox (the same descriptor each
// run: plan never touches the real tree), B runs the same copy into a
// fresh directory. With remove, each run's plan or copy is deleted
// afterwards, untimed, so that 30 runs of 256 MiB do not fill the disk.
func (b *bench) planCopy(name, cp string, fill func(src string), what string, remove bool) (side, side) {
	scope := filepath.Join(b.work, name)
	src := filepath.Join(scope, "src")
	b.must(os.MkdirAll(src, 0o755))
	fill(src)
	cpArgv := strings.Fields(cp)
	target := filepath.Join(scope, "new")
	argv := fmt.Sprintf("[%s, %q, %q]", strings.Join(cpArgv, ", "), filepath.Join(src, what), target)
	d := b.applyDescriptor(scope, 0, fmt.Sprintf(`{create: [%q, "%s/**"], modify: [], delete: []}`, target, target), argv)

	plans := filepath.Join(b.home, "act-state", "plans")
	a := b.command(b.act(), "plan", d)
	run := a.run
	a.run = func(n int) (sample, error) {
		s, err := run(n)
		if remove {
			b.must(os.RemoveAll(plans))
		}
		return s, err
	}
	a.label = fmt.Sprintf("act plan (the sandbox ran %s SRC/%s T)", cp, what)

	copyArgv := append(append([]string{}, cpArgv...), filepath.Join(src, what))
	bside := b.baseline(filepath.Join(b.work, name+"-cp"), "new", copyArgv, nil, false, remove,
		fmt.Sprintf("%s SRC/%s $(mktemp -d)/new", cp, what))
	return a, bside
}
