package cmd

import (
	"os"
	"path/filepath"
	"testing"
)

// TestKeepPolicy: a one-shot decision (a hook's) reads the policy once,
// at its first load, and decides every step under that one; other
// commands load it each time.
func TestKeepPolicy(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "policy.yaml")
	write := func(root string) {
		if err := os.WriteFile(file, []byte("allowed_roots: ["+root+"]\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, keep := range []bool{true, false} {
		env := DefaultEnv(Stdio{})
		env.home, env.policyFile, env.keepPolicy = filepath.Join(dir, "state"), file, keep
		write("/srv/first")
		first, err := env.loadPolicy(&result{})
		if err != nil {
			t.Fatal(err)
		}
		write("/srv/second")
		res := &result{}
		second, err := env.loadPolicy(res)
		if err != nil {
			t.Fatal(err)
		}
		if same := first == second; same != keep {
			t.Errorf("keepPolicy %v: the second load is the first's: %v (allowed roots %v, then %v)", keep, same, first.AllowedRoots, second.AllowedRoots)
		}
		if res.Policy == nil || res.Policy.File != file {
			t.Errorf("keepPolicy %v: the second load's origin is %+v", keep, res.Policy)
		}
	}
}
