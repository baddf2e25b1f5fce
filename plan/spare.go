package plan

import (
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/act-project/act/internal/state"
	"github.com/act-project/act/sandbox"
)

// SpareDirs keeps one temporary plan directory made ahead, with its layer
// directory, for a process that plans again and again (act mcp): a Build
// takes it (Options.PlanDir) instead of creating them, and the next is
// made at once, beside the Build that took this one. The layer holds the
// scope roots of the plan before, copied up (sandbox.LayerSystem's
// CopyUpDir: what a command's overlays need), as an agent usually plans in
// one project after another: a Build of the same scope finds them made,
// once checked to be as CopyUpDir would make them now (CopiedUp), and
// another Build does not get that spare. Creating a directory is an inode
// allocation, which on ext4 costs from 0.05 to over 1 ms; these are then
// off the path of a plan.
//
// A spare is an ordinary leftover to act gc (plans/.tmp-*), removed once
// it is older than the plan expiry: Take then finds it gone, and Build
// makes its own.
type SpareDirs struct {
	plans string
	mu    sync.Mutex
	ready chan spareDir // the spare, once made (dir "" if making it failed)
	busy  bool          // a spare is being made or waits in ready
}

// spareDir is a spare plan directory and the scope roots its layer holds.
type spareDir struct {
	dir    string
	scopes []string
}

// NewSpareDirs returns the spares of the state dir stateDir, the first
// being made already.
func NewSpareDirs(stateDir string) *SpareDirs {
	s := &SpareDirs{plans: state.Dir{Root: stateDir}.Plans(), ready: make(chan spareDir, 1)}
	s.fill(nil)
	return s
}

// fill makes the next spare in the background, its layer holding the
// scope roots scopes copied up. Called with s.mu held or before s is
// shared.
func (s *SpareDirs) fill(scopes []string) {
	s.busy = true
	go func() {
		sp := spareDir{scopes: scopes}
		if os.MkdirAll(s.plans, 0o700) == nil {
			if d, err := os.MkdirTemp(s.plans, state.TempPrefix); err == nil {
				layer := filepath.Join(d, state.LayerName)
				if os.Mkdir(layer, 0o700) == nil {
					sp.dir = d
					l := sandbox.NewLayerSystem(sandbox.RealSystem{}, layer)
					for _, root := range scopes {
						l.CopyUpDir(root) // else not CopiedUp: the spare is not taken
					}
				} else {
					os.Remove(d)
				}
			}
		}
		s.ready <- sp
	}()
}

// Take returns the spare of plans directory plans for a plan of the scope
// roots scopes, if it is made, there, and its layer holds no other scope
// roots than scopes, copied up as they would be now (else "", and Build
// makes its own); and it starts making the next, for scopes. Its times
// are set to now: it is as fresh as a directory made now.
func (s *SpareDirs) Take(plans string, scopes []string) string {
	if s == nil || plans != s.plans {
		return ""
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var sp spareDir
	select {
	case sp = <-s.ready:
		s.fill(slices.Clone(scopes))
	default:
		return "" // still being made: not waited for
	}
	if sp.dir == "" {
		return ""
	}
	usable := len(sp.scopes) == 0 || slices.Equal(sp.scopes, scopes)
	if usable {
		l := sandbox.NewLayerSystem(sandbox.RealSystem{}, filepath.Join(sp.dir, state.LayerName))
		for _, root := range sp.scopes {
			usable = usable && l.CopiedUp(root)
		}
	}
	now := time.Now()
	if !usable || os.Chtimes(sp.dir, now, now) != nil {
		sandbox.RemoveAll(sp.dir)
		return ""
	}
	return sp.dir
}

// Close removes the spare, waiting for it if it is being made.
func (s *SpareDirs) Close() {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.busy {
		if sp := <-s.ready; sp.dir != "" {
			sandbox.RemoveAll(sp.dir)
		}
		s.busy = false
	}
}
