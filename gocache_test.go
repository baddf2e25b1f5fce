package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/act-project/act/internal/clitest"
	"github.com/rogpeppe/go-internal/testscript"
)

// A go command in a sandbox builds with a build cache no test has warmed:
// the standard library alone takes it tens of seconds on two cores, more
// than all else a script does. These seed such a cache with exactly the
// entries a go test needs, copied from the cache of the go command
// running these tests, which built them.

// testGoCache is the Go build cache of the go command running these tests
// (for a copy run as nobody, the one asNobody gave it), or "" if off.
var testGoCache = clitest.GoCache

// seedGoCache copies into the Go build cache dir the entries that go test
// ./... in proj takes from testGoCache: the go command names the cache
// keys it uses with GODEBUG=gocachehash=1 (go help cache); each key found
// there ("ID-a": "v1 ID OUTPUT size time") is copied with its output
// ("OUTPUT-d"). It returns how many entries it copied: none where that
// cache is off.
func seedGoCache(t testing.TB, proj string, env []string, dir string) int {
	t.Helper()
	n, err := seedGoCacheFrom(testGoCache(), proj, env, dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("seeded %d entries of the Go build cache %s from %s", n, dir, testGoCache())
	return n
}

func seedGoCacheFrom(from, proj string, env []string, dir string) (int, error) {
	if from == "" {
		return 0, nil
	}
	c := exec.Command("go", "test", "./...")
	c.Dir, c.Env = proj, append(slices.Clip(env), "GOCACHE="+from, "GODEBUG=gocachehash=1")
	hashes, err := c.CombinedOutput()
	if err != nil {
		return 0, fmt.Errorf("go test ./... in %s with the cache %s: %v\n%s", proj, from, err, hashes)
	}
	copyFile := func(src, dst string) error {
		data, err := os.ReadFile(src)
		if err != nil {
			return err
		}
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return err
		}
		return os.WriteFile(dst, data, 0o644)
	}
	seeded, copied := map[string]bool{}, 0
	for _, id := range cacheKey.FindAllString(string(hashes), -1) {
		if seeded[id] {
			continue
		}
		seeded[id] = true
		entry, err := os.ReadFile(filepath.Join(from, id[:2], id+"-a"))
		if err != nil {
			continue // an input's hash, or not in the cache
		}
		f := strings.Fields(string(entry))
		if len(f) < 3 || f[0] != "v1" || f[1] != id || !cacheKey.MatchString(f[2]) {
			continue
		}
		output := filepath.Join(f[2][:2], f[2]+"-d")
		if fi, err := os.Stat(filepath.Join(from, output)); err != nil || !fi.Mode().IsRegular() {
			continue
		}
		if err := copyFile(filepath.Join(from, output), filepath.Join(dir, output)); err != nil {
			return copied, err
		}
		if err := copyFile(filepath.Join(from, id[:2], id+"-a"), filepath.Join(dir, id[:2], id+"-a")); err != nil {
			return copied, err
		}
		copied++
	}
	return copied, nil
}

// cacheKey is a key or an output id of the Go build cache, in hex.
var cacheKey = regexp.MustCompile(`\b[0-9a-f]{64}\b`)

// cmdGocache seeds the Go build cache dir with what go test ./... in the
// script's current directory needs, under the script's environment.
//
//	usage: gocache dir
func cmdGocache(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: gocache dir")
	}
	env := os.Environ()
	for _, name := range []string{"HOME", "PATH", "GOFLAGS", "GOPROXY", "GOTOOLCHAIN"} {
		env = append(env, name+"="+ts.Getenv(name))
	}
	n, err := seedGoCacheFrom(testGoCache(), ts.MkAbs("."), env, ts.MkAbs(args[0]))
	ts.Check(err)
	ts.Logf("seeded %d entries of the Go build cache", n)
}

// seedGoCacheEnv, given to asNobody, seeds the build cache of the copy
// run as nobody (seedNobodyGoCache) for scripts that run go test.
const seedGoCacheEnv = "ACT_TEST_SEED_GOCACHE=1"

// seedNobodyGoCache fills dir, the build cache of a copy of this test
// binary run as uid 65534, with the standard library a go test takes, so
// that its scripts' gocache does not build it.
func seedNobodyGoCache(dir string) error {
	mod, err := os.MkdirTemp("", "act-gocache-seed-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(mod)
	files := map[string]string{
		"go.mod":       "module example.com/seed\n\ngo 1.21\n",
		"seed_test.go": "package seed\n\nimport \"testing\"\n\nfunc TestSeed(t *testing.T) {}\n",
	}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(mod, name), []byte(data), 0o644); err != nil {
			return err
		}
	}
	env := append(os.Environ(), "GOFLAGS=", "GOPROXY=off", "GOTOOLCHAIN=local")
	if _, err := seedGoCacheFrom(testGoCache(), mod, env, dir); err != nil {
		return err
	}
	return filepath.Walk(dir, func(p string, _ os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, 65534, 65534)
	})
}
