package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
)

// Row m3: an agent's edit-test loop. A is act plan of `go test ./...` of a
// real module (urfave/cli v2's source, from the module cache) in the
// sandbox, with warm sandbox.caches: the sandbox shows the module and
// build caches of the password database's home, read-only under a
// throwaway layer. B's module cache is filled before the row (go mod
// download, unsandboxed), the build caches by the warm-up runs. B is the same `go test ./...`,
// unsandboxed, in a copy of the module, with its build cache warm the same
// way. PERF.md's target is 1.5.
func init() {
	rows = append(rows, row{num: "m3", name: "plan-test", target: 1.5, setup: func(b *bench) (side, side) {
		return b.planTest()
	}})
}

var cliVersion = regexp.MustCompile(`(?m)^\s*github\.com/urfave/cli/v2 (v\S+)`)

func (b *bench) planTest() (side, side) {
	gomod, err := os.ReadFile(filepath.Join(b.root, "go.mod"))
	b.must(err)
	m := cliVersion.FindSubmatch(gomod)
	if m == nil {
		b.fail("row m3: no urfave/cli/v2 in go.mod")
	}
	out, err := exec.Command("go", "env", "GOMODCACHE").Output()
	b.must(err)
	src := filepath.Join(string(trimNL(out)), "github.com", "urfave", "cli", "v2@"+string(m[1]))
	copyModule := func(dst string) {
		b.must(os.MkdirAll(filepath.Dir(dst), 0o755))
		if out, err := exec.Command("cp", "-a", src, dst).CombinedOutput(); err != nil {
			b.fail("row m3: copy %s: %v\n%s", src, err, out)
		}
		if out, err := exec.Command("chmod", "-R", "u+w", dst).CombinedOutput(); err != nil {
			b.fail("row m3: chmod %s: %v\n%s", dst, err, out)
		}
	}
	scope := filepath.Join(b.work, "m3", "cli")
	base := filepath.Join(b.work, "m3-base", "cli")
	copyModule(scope)
	copyModule(base)

	// Warm B's module cache (HOME is the bench's): what the module needs,
	// downloaded once, unsandboxed. A's sandbox shows the caches of the
	// password database's home, read-only (docs/sandbox-filesystem.md).
	// A's: the password database's home's module cache, which the
	// sandbox shows (this process's environment, without the bench's
	// HOME).
	for _, env := range [][]string{b.env, nil} {
		cmd := exec.Command("go", "mod", "download")
		cmd.Dir = scope
		cmd.Env = append(os.Environ(), env...)
		if out, err := cmd.CombinedOutput(); err != nil {
			b.fail("row m3: go mod download: %v\n%s", err, out)
		}
	}

	d := b.applyDescriptor(scope, 0, `{create: [], modify: [], delete: []}`, `[go, test, ./...]`)
	// A cold build cache (the untimed first run) compiles the module's
	// dependencies: caps a test suite fits in.
	data, err := os.ReadFile(d)
	b.must(err)
	data = regexp.MustCompile(`(?m)^resources: .*$`).ReplaceAll(data,
		[]byte(`resources: {max_cpu_ms: 600000, max_memory_mb: 4096, max_disk_mb: 1024, max_duration_ms: 600000}`))
	b.must(os.WriteFile(d, data, 0o644))
	a := b.command(b.act(), "plan", d)
	a.label = "act plan (the sandbox ran go test ./... of urfave/cli v2, warm caches)"
	bs := b.command("go", "test", "-C", base, "./...")
	bs.label = "go test ./... (unsandboxed, warm build cache)"
	return a, bs
}

func trimNL(b []byte) []byte {
	for len(b) > 0 && (b[len(b)-1] == '\n' || b[len(b)-1] == '\r') {
		b = b[:len(b)-1]
	}
	return b
}
