package plan

import (
	"os"
	"sync"

	"github.com/act-project/act/diff"
	"github.com/act-project/act/internal/pathglob"
)

// upperSums are the sums of what a plan's one command wrote, read from the
// sandbox's tmpfs uppers beside init's copy of them into the layer
// (isolate.Spec.Uppers, diff.SumTree), on the other CPU: the diff then
// reads again only the layer files whose size or modification time differ
// from their sum's (docs/timings.md, "Heavy commands").
//
// A plan is summed so only when one sandboxed command is all that writes
// its layer (a COMMAND_EXECUTION, or a PACKAGE_INSTALL or _REMOVE: the
// package manager's one run) and no scope lies within another (an
// inner scope's upper is its own, and the outer's copy must not stand for
// it).
type upperSums struct {
	wg sync.WaitGroup
	mu sync.Mutex
	// sums are by real path; what they hold is bounded as the diff's
	// walk is (diff.Limits): at most maxFiles files, whose paths come to
	// at most maxPaths bytes. Past that, the diff reads the rest.
	sums                         map[string]diff.FileSum
	paths                        int64
	maxFiles, maxPaths, maxBytes int64
}

// newUpperSums returns the sums of a run over scopes, bounded by lim's
// MaxChanges, MaxPathBytes and (each scope's) MaxBytes, or nil where they
// would not stand for the layer.
func newUpperSums(scopes []string, lim diff.Limits) *upperSums {
	for i, a := range scopes {
		for j, b := range scopes {
			if i != j && pathglob.Within(a, b) {
				return nil
			}
		}
	}
	return &upperSums{sums: map[string]diff.FileSum{}, maxFiles: lim.MaxChanges, maxPaths: lim.MaxPathBytes, maxBytes: lim.MaxBytes}
}

// add sums the tmpfs upper dir of the scope at root, in a goroutine of its
// own, and closes it (the tmpfs goes with the last descriptor).
func (u *upperSums) add(root string, dir *os.File) {
	u.wg.Add(1)
	go func() {
		defer u.wg.Done()
		defer dir.Close()
		diff.SumTree(dir, u.maxBytes, func(rel string, s diff.FileSum) bool {
			p := pathglob.Join(root, rel)
			u.mu.Lock()
			defer u.mu.Unlock()
			if (u.maxFiles > 0 && int64(len(u.sums)) >= u.maxFiles) || (u.maxPaths > 0 && u.paths+int64(len(p)) > u.maxPaths) {
				return false
			}
			u.sums[p] = s
			u.paths += int64(len(p))
			return true
		})
	}()
}

// lookup is diff.Limits.Sums: the sum of the file at the real path p,
// once every upper is summed. Every upper was handed over (add) before the
// run returned: isolate reads init's messages in order, to the end,
// before it reports the run.
func (u *upperSums) lookup(p string) (diff.FileSum, bool) {
	u.wg.Wait()
	u.mu.Lock()
	defer u.mu.Unlock()
	s, ok := u.sums[p]
	return s, ok
}
