package plan

import (
	"bytes"
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/mod/module"
	"golang.org/x/mod/sumdb/dirhash"
	modzip "golang.org/x/mod/zip"

	"github.com/act-project/act/descriptors"
	"github.com/act-project/act/internal/state"
	"github.com/act-project/act/policy"
	"github.com/act-project/act/sandbox/isolate"
)

// The person's caches and home in the sandbox (docs/sandbox-filesystem.md,
// "Caches" and "The masked home"): a command sees the person's own caches
// read-only under a throwaway layer, and its home writable through one;
// nothing it writes there outlives its dry run.

// cacheChildEnv, in the child a test re-runs as nobody, is the base
// directory its parent made for it.
const cacheChildEnv = "_ACT_TEST_CACHE_BASE"

// cacheWorld is a person's home (home: the password database's, for the
// plan), a project in it and act's state dir, below base.
type cacheWorld struct {
	base, home, proj, state string
	pol                     *policy.Policy
}

// cacheBase is the directory a cache test works in: in the child, the one
// its parent made; else a new one under /var/tmp (the sandbox's private
// /tmp would hide one under TMPDIR), open to others.
func cacheBase(t *testing.T) string {
	t.Helper()
	if b := os.Getenv(cacheChildEnv); b != "" {
		return b
	}
	if err := isolate.Available(); err != nil {
		t.Skipf("no isolation here: %v", err)
	}
	dir, err := os.MkdirTemp("/var/tmp", "act-caches-")
	if err != nil {
		t.Skipf("needs a directory outside TMPDIR: %v", err)
	}
	mustDo(t, os.Chmod(dir, 0o755))
	t.Cleanup(func() {
		makeRemovable(dir)
		os.RemoveAll(dir)
	})
	return dir
}

// newCacheWorld makes a world below base/name: a home of the user running
// the test with a Go module cache holding example.com/dep v1.0.0 (read-only,
// as the go command leaves it) and a build cache entry, a project below
// the home, and the policy's defaults for that home.
func newCacheWorld(t *testing.T, base, name string) *cacheWorld {
	t.Helper()
	root := filepath.Join(base, name)
	w := &cacheWorld{base: root, home: filepath.Join(root, "home"), proj: filepath.Join(root, "home", "proj"), state: filepath.Join(root, "state")}
	mustDo(t, os.Mkdir(root, 0o755))
	mxBuild(t, root, map[string]mxEntry{
		"home":                                   mxDir("0755"),
		"home/.profile":                          mxFile("# profile\n", "0644"),
		"home/.ssh":                              mxDir("0700"),
		"home/.ssh/id_key":                       mxFile("not a key\n", "0600"),
		"home/go":                                mxDir("0755"),
		"home/go/pkg":                            mxDir("0755"),
		"home/go/pkg/mod":                        mxDir("0755"),
		"home/go/pkg/mod/cache":                  mxDir("0755"),
		"home/go/pkg/mod/cache/download":         mxDir("0755"),
		"home/go/pkg/mod/example.com":            mxDir("0755"),
		"home/go/pkg/mod/example.com/dep@v1.0.0": mxDir("0555"),
		"home/go/pkg/mod/example.com/dep@v1.0.0/dep.go": mxFile("package dep // genuine\n", "0444"),
		"home/.cache":                     mxDir("0755"),
		"home/.cache/go-build":            mxDir("0755"),
		"home/.cache/go-build/00":         mxDir("0755"),
		"home/.cache/go-build/00/entry-d": mxFile("compiled\n", "0644"),
		"home/.npm":                       mxDir("0755"),
		"home/.npm/_cacache":              mxDir("0755"),
		"home/.npm/_cacache/index":        mxFile("prettier\n", "0644"),
		"home/proj":                       mxDir("0755"),
		"home/proj/main.go":               mxFile("package main\n", "0644"),
		"state":                           mxDir("0700"),
	})
	pol, err := policy.Default(w.home)
	mustDo(t, err)
	pol.AllowedRoots = append(pol.AllowedRoots, root)
	w.pol = pol
	return w
}

// build plans `sh -c script` in the project, as act plan does, and returns
// the plan (whose first command's output the caller reads) or the error.
func (w *cacheWorld) build(t *testing.T, script string) (*Plan, error) {
	t.Helper()
	return w.buildVerified(t, script, "")
}

// buildVerified is build with `sh -c verify` as the descriptor's
// verification command, if not empty.
func (w *cacheWorld) buildVerified(t *testing.T, script, verify string) (*Plan, error) {
	t.Helper()
	verification := ""
	if verify != "" {
		verification = "verification:\n  commands: [[sh, -c, " + js(verify) + "]]\n"
	}
	text := `descriptor_version: "1.0"
action_id: ` + newUUID(t) + `
created_at: "2026-11-22T00:00:00Z"
created_by: ai
intent_summary: Run a command that uses the caches.
risk_level: LOW
action_type: COMMAND_EXECUTION
scope:
  filesystem: {paths: ` + js([]string{w.proj}) + `, recursive: true}
  network: {required: false}
  ui: {required: false}
resources: {max_cpu_ms: 60000, max_memory_mb: 1024, max_disk_mb: 256, max_duration_ms: 120000}
sandbox: {required: true, sandbox_type: container, allow_network: false, max_runs: 1}
rollback: {supported: true, rollback_type: filesystem_snapshot, rollback_scope: declared_effects_only}
confirmation: {required: false, reason: "", cooldown_on_repeat: false}
audit: {log: true, log_level: SUMMARY, retain_days: 30}
preconditions: {paths_exist: [], network_available: false, user_idle: false}
effects:
  filesystem: {create: [], modify: [], delete: []}
  network: false
  system_state_change: false
operation:
  argv: ` + js([]string{"sh", "-c", script}) + `
  workdir: ` + js(w.proj) + `
  env: {PATH: /usr/local/go/bin:/usr/local/bin:/usr/bin:/bin, LC_ALL: C}
` + verification
	d, _, probs := descriptors.Load("d.yaml", []byte(text))
	if probs != nil {
		t.Fatalf("the test descriptor does not load:\n%v\n%s", probs, text)
	}
	dec := w.pol.Decide(d, buildNow)
	if len(dec.Blocked) > 0 {
		t.Fatalf("the policy blocks the test descriptor: %v", dec.Blocked)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute) // a hang guard
	defer cancel()
	return Build(ctx, d, Options{
		StateDir: w.state, Policy: w.pol, Decision: dec, File: "d.yaml",
		Homes: []string{w.home}, UserHome: w.home,
		Now: func() time.Time { return buildNow },
		Host: Host{
			FreeBytes:        func(string) (uint64, error) { return 1 << 40, nil },
			NetworkAvailable: func() (bool, error) { return false, nil },
			LastInput:        func() (time.Time, bool) { return time.Time{}, false },
		},
	})
}

func newUUID(t *testing.T) string {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		t.Fatal(err)
	}
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:])
}

// stdout is the output of p's first command.
func stdout(t *testing.T, p *Plan) string {
	t.Helper()
	if len(p.Commands) == 0 {
		t.Fatal("the plan ran no command")
	}
	return p.Commands[0].Stdout
}

// TestCachesCarryNothing: a dry run's command poisons the Go module cache
// (the extracted source of a dependency, as a later go build would compile
// it) and the build cache; a later dry run must read the person's caches
// as they are. Before, the sandbox mounted act's own cache read-write
// there: the second run compiled "TROJAN" from untouched source and
// go.sum. Now the person's caches are the read-only lower layer of an
// overlay whose upper is thrown away with the sandbox: the second run
// sees the genuine source, the person's caches are untouched, and act
// keeps no cache of its own.
func TestCachesCarryNothing(t *testing.T) {
	t.Parallel()
	w := newCacheWorld(t, cacheBase(t), "carry-"+identity())
	before := mxSnapshot(t, w.home)
	dep := "~/go/pkg/mod/example.com/dep@v1.0.0"
	p, err := w.build(t, `set -e
mkdir -p `+dep+` ~/.cache/go-build/00 ~/.npm/_cacache
chmod -R u+w `+dep+`
echo 'package dep // TROJAN' > `+dep+`/dep.go
mkdir -p ~/go/pkg/mod/cache/download/evil.example
echo planted > ~/.cache/go-build/00/planted-d
echo planted > ~/.npm/_cacache/index
cat `+dep+`/dep.go`)
	if err != nil {
		t.Fatalf("the poisoning run: %v", err)
	}
	if got := stdout(t, p); !strings.Contains(got, "TROJAN") {
		t.Fatalf("the poisoning run read %q, want its own write back", got)
	}
	if len(p.Changes) != 0 {
		t.Errorf("the poisoning run's plan holds %d changes, want none", len(p.Changes))
	}

	p, err = w.build(t, `cat `+dep+`/dep.go ~/.npm/_cacache/index; ls -A ~/.cache/go-build/00 ~/go/pkg/mod/cache/download`)
	if err != nil {
		t.Fatalf("the later run: %v", err)
	}
	got := stdout(t, p)
	for _, bad := range []string{"TROJAN", "planted", "evil"} {
		if strings.Contains(got, bad) {
			t.Errorf("the later run read %q: the poisoning run's %q outlived it", got, bad)
		}
	}
	if !strings.Contains(got, "genuine") || !strings.Contains(got, "prettier") || !strings.Contains(got, "entry-d") {
		t.Errorf("the later run read %q, want the person's own caches", got)
	}
	if diff := cmp.Diff(before, mxSnapshot(t, w.home)); diff != "" {
		t.Errorf("the person's home changed (-before +after):\n%s", diff)
	}
	if ents, err := os.ReadDir(filepath.Join(w.state, "caches")); err == nil && len(ents) > 0 {
		t.Errorf("act's state dir holds %d caches, want none by default", len(ents))
	}
}

// TestCachesCarryNothingOrdinaryUser runs TestCachesCarryNothing as nobody,
// with a home of its own (nobody's /nonexistent would hide the case).
func TestCachesCarryNothingOrdinaryUser(t *testing.T) {
	t.Parallel()
	if os.Getenv(cacheChildEnv) != "" {
		t.Skip("in the child")
	}
	dir := nobodyDir(t)
	base := cacheBase(t)
	mustDo(t, os.Chmod(base, 0o777))
	runAsNobody(t, dir, "TestCachesCarryNothing", cacheChildEnv+"="+base)
}

// TestHomeThrowaway: the masked home is writable through a throwaway
// layer. A test runner's wrapper files (nyc's ~/.node-spawn-wrap-*), a
// shell history and a package manager's cache writes all succeed; the plan
// lists what the command made in the home (not what it wrote in the
// caches, which are no part of the home), nothing of it reaches the
// person's home or a later run, and nothing is a change of the plan.
// Before, the home was an empty read-only directory: npm test failed with
// EROFS. A write to what home_visible shows read-only still fails, and
// act's message says where the sandbox lets a command write.
func TestHomeThrowaway(t *testing.T) {
	t.Parallel()
	w := newCacheWorld(t, cacheBase(t), "home-"+identity())
	mxBuild(t, w.home, map[string]mxEntry{".gitconfig": mxFile("[user]\n", "0644")})
	before := mxSnapshot(t, w.home)
	p, err := w.build(t, `set -e
mkdir ~/.node-spawn-wrap-42-abc && echo wrap > ~/.node-spawn-wrap-42-abc/node
echo ls >> ~/.bash_history
echo '{"key":"prettier"}' > ~/.npm/_cacache/index-new
mkdir -p ~/.config/nyc && echo {} > ~/.config/nyc/config.json
cat ~/.node-spawn-wrap-42-abc/node ~/.npm/_cacache/index`)
	if err != nil {
		t.Fatalf("the run that writes in the home: %v", err)
	}
	if got := stdout(t, p); got != "wrap\nprettier\n" {
		t.Errorf("the run read %q back, want its own write and the person's npm cache", got)
	}
	if len(p.Changes) != 0 {
		t.Errorf("the plan holds %d changes, want none: the home is no scope", len(p.Changes))
	}
	want := &Discarded{Count: 3, Paths: []string{
		filepath.Join(w.home, ".bash_history"), filepath.Join(w.home, ".config"), filepath.Join(w.home, ".node-spawn-wrap-42-abc"),
	}}
	if diff := cmp.Diff(want, p.HomeDiscarded); diff != "" {
		t.Errorf("the plan's home_discarded (-want +got):\n%s", diff)
	}

	p, err = w.build(t, `ls -A ~ ~/.npm/_cacache`)
	if err != nil {
		t.Fatalf("the later run: %v", err)
	}
	if got := stdout(t, p); strings.Contains(got, "spawn-wrap") || strings.Contains(got, "history") || strings.Contains(got, "index-new") {
		t.Errorf("the later run lists %q: the earlier run's writes outlived it", got)
	}
	if p.HomeDiscarded != nil {
		t.Errorf("a run that made nothing in the home lists %+v", p.HomeDiscarded)
	}
	if diff := cmp.Diff(before, mxSnapshot(t, w.home)); diff != "" {
		t.Errorf("the person's home changed (-before +after):\n%s", diff)
	}

	_, err = w.build(t, `echo '[core]' >> ~/.gitconfig`)
	if err == nil || !regexp.MustCompile("Read-only file system|Permission denied").MatchString(err.Error()) || !strings.Contains(err.Error(), "the homes are masked") {
		t.Errorf("a write to ~/.gitconfig (shown read-only): %v, want op.command-failed saying where a command may write", err)
	}
}

// TestHomeThrowawayOrdinaryUser runs TestHomeThrowaway as nobody, with a
// home of its own.
func TestHomeThrowawayOrdinaryUser(t *testing.T) {
	t.Parallel()
	if os.Getenv(cacheChildEnv) != "" {
		t.Skip("in the child")
	}
	dir := nobodyDir(t)
	base := cacheBase(t)
	mustDo(t, os.Chmod(base, 0o777))
	runAsNobody(t, dir, "TestHomeThrowaway", cacheChildEnv+"="+base)
}

// goWorldEnv, in the child TestFirstGoTest starts as nobody, is the
// world its parent made for it (goWorld).
const goWorldEnv = "_ACT_TEST_GO_WORLD"

// goWorld makes, below base/name, a person's home whose Go module cache
// holds example.com/dep v1.0.0 as the go command leaves it (fetched from a
// file:// proxy, read-only) and whose build cache holds what go test of
// the project needs from the standard library (copied from the go
// command's own cache, which is warm: it built these tests), and a
// project below it that requires the module, its go.sum made. It returns
// the world.
func goWorld(t *testing.T, base, name string) *cacheWorld {
	t.Helper()
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go is not installed")
	}
	root := filepath.Join(base, name)
	w := &cacheWorld{base: root, home: filepath.Join(root, "home"), proj: filepath.Join(root, "home", "proj"), state: filepath.Join(root, "state")}
	for _, d := range []string{w.proj, w.state, filepath.Join(root, "proxy"), filepath.Join(root, "src")} {
		mustDo(t, os.MkdirAll(d, 0o755))
	}
	mustDo(t, os.Chmod(w.state, 0o700))
	write := func(p, data string) {
		t.Helper()
		mustDo(t, os.MkdirAll(filepath.Dir(p), 0o755))
		mustDo(t, os.WriteFile(p, []byte(data), 0o644))
	}
	// The dependency, served by a file:// proxy.
	src := filepath.Join(root, "src")
	write(filepath.Join(src, "go.mod"), "module example.com/dep\n\ngo 1.21\n")
	write(filepath.Join(src, "dep.go"), "package dep\n\n// Hello greets.\nfunc Hello() string { return \"hello\" }\n")
	at := filepath.Join(root, "proxy", "example.com", "dep", "@v")
	write(filepath.Join(at, "list"), "v1.0.0\n")
	write(filepath.Join(at, "v1.0.0.info"), `{"Version":"v1.0.0","Time":"2024-01-01T00:00:00Z"}`)
	write(filepath.Join(at, "v1.0.0.mod"), "module example.com/dep\n\ngo 1.21\n")
	var zb bytes.Buffer
	mustDo(t, modzip.CreateFromDir(&zb, module.Version{Path: "example.com/dep", Version: "v1.0.0"}, src))
	write(filepath.Join(at, "v1.0.0.zip"), zb.String())
	// The project.
	write(filepath.Join(w.proj, "go.mod"), "module example.com/proj\n\ngo 1.21\n\nrequire example.com/dep v1.0.0\n")
	write(filepath.Join(w.proj, "proj.go"), "package proj\n\nimport \"example.com/dep\"\n\n// Greeting greets.\nfunc Greeting() string { return dep.Hello() + \", world\" }\n")
	write(filepath.Join(w.proj, "proj_test.go"), "package proj\n\nimport \"testing\"\n\nfunc TestGreeting(t *testing.T) {\n\tif g := Greeting(); g != \"hello, world\" {\n\t\tt.Fatal(g)\n\t}\n}\n")

	out, err := exec.Command(goBin, "env", "GOCACHE").Output()
	from := strings.TrimSpace(string(out))
	if err != nil || from == "" || from == "off" {
		t.Skipf("no Go build cache to seed from (%q, %v)", from, err)
	}
	modCache, buildCache := filepath.Join(w.home, "go", "pkg", "mod"), filepath.Join(w.home, ".cache", "go-build")
	goCmd := func(env []string, args ...string) string {
		t.Helper()
		c := exec.Command(goBin, args...)
		c.Dir = w.proj
		c.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + w.home, "GOTOOLCHAIN=local", "GOMODCACHE=" + modCache,
			"GOCACHE=" + from, "GOTELEMETRY=off", "GOENV=off"}, env...)
		out, err := c.CombinedOutput()
		if err != nil {
			t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	goCmd([]string{"GOPROXY=file://" + filepath.Join(root, "proxy"), "GOSUMDB=off", "GOFLAGS=-mod=mod"}, "mod", "tidy")
	// The build cache entries go test uses (GODEBUG=gocachehash=1 names
	// them, go help cache), each copied with its output.
	hashes := goCmd([]string{"GOPROXY=off", "GOFLAGS=-mod=readonly", "GODEBUG=gocachehash=1"}, "test", "-count=1", "./...")
	copyFile := func(from, to string) bool {
		in, err := os.Open(from)
		if err != nil {
			return false
		}
		defer in.Close()
		mustDo(t, os.MkdirAll(filepath.Dir(to), 0o755))
		out, err := os.Create(to)
		mustDo(t, err)
		_, err = io.Copy(out, in) // copy_file_range where the kernel can
		mustDo(t, err)
		mustDo(t, out.Close())
		return true
	}
	seeded := 0
	for _, id := range goCacheKey.FindAllString(hashes, -1) {
		entry, err := os.ReadFile(filepath.Join(from, id[:2], id+"-a"))
		f := strings.Fields(string(entry))
		if err != nil || len(f) < 3 || f[0] != "v1" || f[1] != id || !goCacheKey.MatchString(f[2]) {
			continue
		}
		if copyFile(filepath.Join(from, f[2][:2], f[2]+"-d"), filepath.Join(buildCache, f[2][:2], f[2]+"-d")) &&
			copyFile(filepath.Join(from, id[:2], id+"-a"), filepath.Join(buildCache, id[:2], id+"-a")) {
			seeded++
		}
	}
	t.Logf("seeded %d entries of the Go build cache", seeded)
	pol, err := policy.Default(w.home)
	mustDo(t, err)
	pol.AllowedRoots = append(pol.AllowedRoots, root)
	w.pol = pol
	return w
}

// goCacheKey is a key or an output id of the Go build cache, in hex.
var goCacheKey = regexp.MustCompile(`\b[0-9a-f]{64}\b`)

// TestFirstGoTest: the first `go test ./...` of a Go module with a
// dependency passes offline with the default policy: the sandbox shows
// the person's module cache, where the go command finds the dependency
// (go.sum checked as always), and build cache, read-only under a throwaway
// layer. Before, the sandbox showed act's own empty caches and go test
// failed reaching for the network it does not have. Nothing of the run is
// left in the person's caches or home. As root it runs again as nobody,
// in a copy of the world of nobody's own.
func TestFirstGoTest(t *testing.T) {
	t.Parallel()
	if dir := os.Getenv(goWorldEnv); dir != "" {
		w := &cacheWorld{base: dir, home: filepath.Join(dir, "home"), proj: filepath.Join(dir, "home", "proj"), state: filepath.Join(dir, "state")}
		pol, err := policy.Default(w.home)
		mustDo(t, err)
		pol.AllowedRoots = append(pol.AllowedRoots, dir)
		w.pol = pol
		firstGoTest(t, w)
		return
	}
	base := cacheBase(t)
	w := goWorld(t, base, "go-"+identity())
	t.Run(identity(), func(t *testing.T) { firstGoTest(t, w) })
	if os.Geteuid() != 0 {
		return
	}
	t.Run("user", func(t *testing.T) {
		dir := nobodyDir(t)
		mustDo(t, os.Chmod(base, 0o777))
		copied := filepath.Join(base, "go-user")
		if out, err := exec.Command("cp", "-a", w.base, copied).CombinedOutput(); err != nil {
			t.Fatalf("copy the world: %v\n%s", err, out)
		}
		mustDo(t, filepath.WalkDir(copied, func(p string, _ fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			return os.Lchown(p, 65534, 65534)
		}))
		runAsNobody(t, dir, "TestFirstGoTest", goWorldEnv+"="+copied)
	})
}

// firstGoTest plans go test ./... in w's project and checks it passed.
func firstGoTest(t *testing.T, w *cacheWorld) {
	before := mxSnapshot(t, w.home)
	p, err := w.build(t, "go test ./...")
	if err != nil {
		t.Fatalf("act plan of go test ./...: %v", err)
	}
	if got := stdout(t, p); !strings.Contains(got, "ok  \texample.com/proj") {
		t.Errorf("go test ./... printed %q, want the package passed", got)
	}
	if len(p.Changes) != 0 {
		t.Errorf("the plan holds %d changes, want none", len(p.Changes))
	}
	if diff := cmp.Diff(before, mxSnapshot(t, w.home)); diff != "" {
		t.Errorf("the person's home changed (-before +after):\n%s", diff)
	}
}

// TestPersistentCache: the policy's opt-in persistent cache keeps only
// what may stay of a dry run's writes, for later dry runs. A module
// whose files hash to its .ziphash is kept; a module directory whose
// files do not (a TROJAN under the genuine module's .ziphash) is not, nor
// is a rewrite of a module the user's cache has, a setuid file, a FIFO, a
// file that would take act's caches past the bound, or anything a
// verification command wrote. The user's caches are untouched.
func TestPersistentCache(t *testing.T) {
	t.Parallel()
	w := newCacheWorld(t, cacheBase(t), "persistent-"+identity())
	mod, build := filepath.Join(w.home, "go", "pkg", "mod"), filepath.Join(w.home, ".cache", "go-build")
	w.pol.Sandbox.PersistentCaches = []string{mod, build}
	w.pol.Sandbox.PersistentCachesMB = 1
	fixtureModule(t, filepath.Join(w.proj, "fixtures", "good"), "example.com/good", "package good // genuine\n", "")
	fixtureModule(t, filepath.Join(w.proj, "fixtures", "evil"), "example.com/evil", "package evil // genuine\n", "package evil // TROJAN\n")
	before := mxSnapshot(t, w.home)

	p, err := w.build(t, `set -e
cp -R fixtures/good/. fixtures/evil/. ~/go/pkg/mod/
chmod -R u+w ~/go/pkg/mod/example.com/dep@v1.0.0 && echo 'package dep // TROJAN' > ~/go/pkg/mod/example.com/dep@v1.0.0/dep.go
echo new > ~/go/pkg/mod/example.com/dep@v1.0.0/new.go
echo s > ~/.cache/go-build/00/suid-d && chmod u+s ~/.cache/go-build/00/suid-d
mkfifo ~/.cache/go-build/00/fifo
head -c 2097152 /dev/zero > ~/.cache/go-build/00/big-d
echo kept > ~/.cache/go-build/00/kept-d`)
	if err != nil {
		t.Fatalf("the run that fills the caches: %v", err)
	}
	var refused []string
	for _, w := range p.Warnings {
		if w.Rule == RuleCacheRefused {
			refused = append(refused, w.Message)
		}
	}
	all := strings.Join(refused, "\n")
	for _, want := range []string{"setuid", "FIFO", "persistent_caches_mb", "do not hash", "adds to a module directory"} {
		if !strings.Contains(all, want) {
			t.Errorf("the refusals %q do not say %q", refused, want)
		}
	}

	_, err = w.buildVerified(t, "true", `echo planted > ~/.cache/go-build/00/verify-d && mkdir -p ~/go/pkg/mod/example.com/verify@v1.0.0`)
	if err != nil {
		t.Fatalf("the run whose verification writes the caches: %v", err)
	}

	p, err = w.build(t, `cat ~/go/pkg/mod/example.com/good@v1.0.0/good.go ~/go/pkg/mod/example.com/dep@v1.0.0/dep.go; ls -A ~/go/pkg/mod/example.com ~/go/pkg/mod/example.com/dep@v1.0.0 ~/.cache/go-build/00`)
	if err != nil {
		t.Fatalf("the later run: %v", err)
	}
	got := stdout(t, p)
	for _, want := range []string{"package good // genuine", "package dep // genuine", "good@v1.0.0", "kept-d", "entry-d"} {
		if !strings.Contains(got, want) {
			t.Errorf("the later run read %q, want %q there", got, want)
		}
	}
	for _, bad := range []string{"TROJAN", "evil@", "new.go", "suid-d", "fifo", "big-d", "verify"} {
		if strings.Contains(got, bad) {
			t.Errorf("the later run read %q: %q was kept", got, bad)
		}
	}
	if diff := cmp.Diff(before, mxSnapshot(t, w.home)); diff != "" {
		t.Errorf("the person's home changed (-before +after):\n%s", diff)
	}
}

// TestPersistentCacheOrdinaryUser runs TestPersistentCache as nobody, with
// a home of its own.
func TestPersistentCacheOrdinaryUser(t *testing.T) {
	t.Parallel()
	if os.Getenv(cacheChildEnv) != "" {
		t.Skip("in the child")
	}
	dir := nobodyDir(t)
	base := cacheBase(t)
	mustDo(t, os.Chmod(base, 0o777))
	runAsNobody(t, dir, "TestPersistentCache", cacheChildEnv+"="+base)
}

// fixtureModule lays out, below dir as in a module cache, the module path
// v1.0.0 with a file of src: its extracted directory, zip and .ziphash. With
// planted, the extracted file holds planted instead: the zip and .ziphash
// stay the genuine module's.
func fixtureModule(t *testing.T, dir, path, src, planted string) {
	t.Helper()
	m := module.Version{Path: path, Version: "v1.0.0"}
	esc, err := module.EscapePath(path)
	mustDo(t, err)
	name := filepath.Base(path) + ".go"
	tree := filepath.Join(dir, filepath.FromSlash(esc)+"@v1.0.0")
	at := filepath.Join(dir, "cache", "download", filepath.FromSlash(esc), "@v")
	mustDo(t, os.MkdirAll(tree, 0o755))
	mustDo(t, os.MkdirAll(at, 0o755))
	gomod := "module " + path + "\n\ngo 1.21\n"
	mustDo(t, os.WriteFile(filepath.Join(tree, "go.mod"), []byte(gomod), 0o644))
	mustDo(t, os.WriteFile(filepath.Join(tree, name), []byte(src), 0o644))
	zipPath := filepath.Join(at, "v1.0.0.zip")
	f, err := os.Create(zipPath)
	mustDo(t, err)
	mustDo(t, modzip.CreateFromDir(f, m, tree))
	mustDo(t, f.Close())
	h, err := dirhash.HashZip(zipPath, dirhash.Hash1)
	mustDo(t, err)
	mustDo(t, os.WriteFile(filepath.Join(at, "v1.0.0.ziphash"), []byte(h), 0o644))
	mustDo(t, os.WriteFile(filepath.Join(at, "v1.0.0.mod"), []byte(gomod), 0o644))
	if planted != "" {
		mustDo(t, os.WriteFile(filepath.Join(tree, name), []byte(planted), 0o644))
	}
}

// TestPersistentCacheTamperedBetweenRuns: the agent may run as the user act
// runs as and write act's state dir between dry runs. A module directory
// act kept, verified when kept, is edited in place there (a TROJAN in its
// .go file): the next dry run must not show it to the command. act
// verifies its own module cache each time it shows it (dirhash h1 of each
// module directory against its .ziphash), finds the edit, empties the
// cache and says so in the plan (sandbox.cache-dropped): the command then
// sees the user's cache alone. A cache that verifies is shown as it is.
func TestPersistentCacheTamperedBetweenRuns(t *testing.T) {
	t.Parallel()
	w := newCacheWorld(t, cacheBase(t), "tampered-"+identity())
	mod := filepath.Join(w.home, "go", "pkg", "mod")
	w.pol.Sandbox.PersistentCaches = []string{mod}
	fixtureModule(t, filepath.Join(w.proj, "fixtures", "good"), "example.com/good", "package good // genuine\n", "")
	if _, err := w.build(t, `cp -R fixtures/good/. ~/go/pkg/mod/`); err != nil {
		t.Fatalf("the run that fills the cache: %v", err)
	}
	own := state.Dir{Root: w.state}.Cache(filepath.Join("go", "pkg", "mod"))
	kept := filepath.Join(own, "example.com", "good@v1.0.0", "good.go")
	if b, err := os.ReadFile(kept); err != nil || !strings.Contains(string(b), "genuine") {
		t.Fatalf("act's cache holds %q (%v), want the genuine module kept", b, err)
	}

	read := `cat ~/go/pkg/mod/example.com/good@v1.0.0/good.go 2>/dev/null; ls -A ~/go/pkg/mod/example.com`
	p, err := w.build(t, read)
	if err != nil {
		t.Fatalf("the run that reads the verified cache: %v", err)
	}
	if got := stdout(t, p); !strings.Contains(got, "package good // genuine") {
		t.Errorf("the run read %q, want the kept module: a cache that verifies is shown", got)
	}
	if dropped := cacheDropped(p); len(dropped) != 0 {
		t.Errorf("a cache that verifies was dropped: %q", dropped)
	}

	// The agent, between runs, as the same user.
	mustDo(t, os.Chmod(kept, 0o644))
	mustDo(t, os.WriteFile(kept, []byte("package good // TROJAN\n"), 0o644))

	p, err = w.build(t, read)
	if err != nil {
		t.Fatalf("the run after the tampering: %v", err)
	}
	if got := stdout(t, p); strings.Contains(got, "TROJAN") || strings.Contains(got, "good@") {
		t.Errorf("the run after the tampering read %q: act showed the tampered module", got)
	}
	dropped := strings.Join(cacheDropped(p), "\n")
	if !strings.Contains(dropped, "good@v1.0.0") || !strings.Contains(dropped, "do not hash") {
		t.Errorf("the plan says %q, want act's cache dropped for good@v1.0.0's files that do not hash", dropped)
	}
	if ents, err := os.ReadDir(own); err != nil || len(ents) != 0 {
		t.Errorf("act's own cache after the drop holds %d entries (%v), want it emptied", len(ents), err)
	}
}

// TestPersistentCacheChangedDuringRun: an agent running beside act edits a
// module in act's cache after the check before a command and leaves it
// so: the check after the command finds it, the plan is refused
// (sandbox.cache-changed) and the cache emptied. (Not parallel: it sets
// testOnlyAfterCacheCheck.)
func TestPersistentCacheChangedDuringRun(t *testing.T) {
	w := newCacheWorld(t, cacheBase(t), "changed-"+identity())
	w.pol.Sandbox.PersistentCaches = []string{filepath.Join(w.home, "go", "pkg", "mod")}
	fixtureModule(t, filepath.Join(w.proj, "fixtures", "good"), "example.com/good", "package good // genuine\n", "")
	if _, err := w.build(t, `cp -R fixtures/good/. ~/go/pkg/mod/`); err != nil {
		t.Fatalf("the run that fills the cache: %v", err)
	}
	own := state.Dir{Root: w.state}.Cache(filepath.Join("go", "pkg", "mod"))
	kept := filepath.Join(own, "example.com", "good@v1.0.0", "good.go")
	defer func(f func(string)) { testOnlyAfterCacheCheck = f }(testOnlyAfterCacheCheck)
	testOnlyAfterCacheCheck = func(string) {
		mustDo(t, os.Chmod(kept, 0o644))
		mustDo(t, os.WriteFile(kept, []byte("package good // TROJAN\n"), 0o644))
	}
	_, err := w.build(t, `cat ~/go/pkg/mod/example.com/good@v1.0.0/good.go`)
	if err == nil || !strings.Contains(err.Error(), "sandbox.cache-changed") || !strings.Contains(err.Error(), "good@v1.0.0") {
		t.Errorf("the run during which act's cache changed: %v; want it refused (sandbox.cache-changed) naming good@v1.0.0", err)
	}
	if ents, err := os.ReadDir(own); err != nil || len(ents) != 0 {
		t.Errorf("act's own cache after the refusal holds %d entries (%v), want it emptied", len(ents), err)
	}
}

// TestPersistentCacheTamperedBetweenRunsOrdinaryUser runs
// TestPersistentCacheTamperedBetweenRuns as nobody, with a home of its own:
// the agent is then the very user act runs as.
func TestPersistentCacheTamperedBetweenRunsOrdinaryUser(t *testing.T) {
	t.Parallel()
	if os.Getenv(cacheChildEnv) != "" {
		t.Skip("in the child")
	}
	dir := nobodyDir(t)
	base := cacheBase(t)
	mustDo(t, os.Chmod(base, 0o777))
	runAsNobody(t, dir, "TestPersistentCacheTamperedBetweenRuns", cacheChildEnv+"="+base)
}

// cacheDropped is what p's warnings say of act's own caches dropped.
func cacheDropped(p *Plan) []string {
	var out []string
	for _, w := range p.Warnings {
		if w.Rule == "sandbox.cache-dropped" {
			out = append(out, w.Message)
		}
	}
	return out
}

// TestPersistentCacheGoSum: what verifyGoModCache cannot catch, go.sum
// does. The agent, writing act's state dir between runs, replaces a
// module in act's own cache whole and consistently: its extracted files,
// its zip and its .ziphash all a TROJAN's, which hash to one another, so
// act's own check passes. The go command of a later go test (-mod=readonly,
// goVerifiedEnv) checks the .ziphash against the project's go.sum, which
// holds the genuine module's hash, and refuses to build: the plan fails
// with the checksum mismatch, and nothing is built from the TROJAN.
func TestPersistentCacheGoSum(t *testing.T) {
	t.Parallel()
	w := goWorld(t, cacheBase(t), "gosum-"+identity())
	modCache := filepath.Join(w.home, "go", "pkg", "mod")
	w.pol.Sandbox.PersistentCaches = []string{modCache}
	// The user's cache has the module no more: the go command finds it in
	// act's alone.
	for _, p := range []string{filepath.Join(modCache, "example.com", "dep@v1.0.0"), filepath.Join(modCache, "cache", "download", "example.com", "dep")} {
		makeRemovable(p)
		mustDo(t, os.RemoveAll(p))
	}
	_, err := CachesDir(w.state)
	mustDo(t, err)
	own := state.Dir{Root: w.state}.Cache(filepath.Join("go", "pkg", "mod"))
	mustDo(t, os.Mkdir(own, 0o700))
	// First the genuine module, in act's cache alone: go test passes.
	genuine := "package dep\n\n// Hello greets.\nfunc Hello() string { return \"hello\" }\n"
	fixtureModule(t, own, "example.com/dep", genuine, "")
	p, err := w.build(t, "go test ./...")
	if err != nil {
		t.Fatalf("go test with the genuine module in act's cache: %v", err)
	}
	if got := stdout(t, p); !strings.Contains(got, "ok  \texample.com/proj") {
		t.Fatalf("go test with the genuine module in act's cache printed %q, want the package passed", got)
	}

	// The agent, between runs, as the same user.
	makeRemovable(own)
	mustDo(t, os.RemoveAll(filepath.Join(own, "example.com")))
	mustDo(t, os.RemoveAll(filepath.Join(own, "cache")))
	fixtureModule(t, own, "example.com/dep", strings.Replace(genuine, "hello", "TROJAN", 1), "")
	if why, err := verifyGoModCache(own, modCache); why != "" || err != nil {
		t.Fatalf("act's check of a module replaced consistently: %q, %v; want it passed (go.sum is what catches it)", why, err)
	}

	p, err = w.build(t, "go test ./...")
	if err == nil {
		t.Fatalf("go test built from the replaced module: the plan succeeded, printing %q", stdout(t, p))
	}
	if msg := err.Error(); !strings.Contains(msg, "does NOT match an earlier download recorded in go.sum") {
		t.Errorf("the plan failed with %q, want go's checksum mismatch against go.sum", msg)
	}
}
