package plan

import (
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/act-project/act/sandbox"
)

// SpareDirs keeps one temporary plan directory made ahead, with its empty
// layer directory, for a process that plans again and again (act mcp):
// a Build takes it (Options.PlanDir) instead of creating both, and the
// next is made at once, beside the Build that took this one. Creating a
// directory is an inode allocation, which on ext4 costs from 0.05 to
// over 1 ms; these two are then off the path of a plan.
//
// A spare is an ordinary leftover to act gc (plans/.tmp-*), removed once
// it is older than the plan expiry: Take then finds it gone, and Build
// makes its own.
type SpareDirs struct {
	plans string
	mu    sync.Mutex
	ready chan string // the spare, once made ("" if making it failed)
	busy  bool        // a spare is being made or waits in ready
}

// NewSpareDirs returns the spares of the state dir stateDir, the first
// being made already.
func NewSpareDirs(stateDir string) *SpareDirs {
	s := &SpareDirs{plans: filepath.Join(stateDir, "plans"), ready: make(chan string, 1)}
	s.fill()
	return s
}

// fill makes the next spare in the background. Called with s.mu held or
// before s is shared.
func (s *SpareDirs) fill() {
	s.busy = true
	go func() {
		dir := ""
		if os.MkdirAll(s.plans, 0o700) == nil {
			if d, err := os.MkdirTemp(s.plans, ".tmp-"); err == nil {
				if os.Mkdir(filepath.Join(d, "layer"), 0o700) == nil {
					dir = d
				} else {
					os.Remove(d)
				}
			}
		}
		s.ready <- dir
	}()
}

// Take returns the spare of plans directory plans, if it is made and
// there (else "", and Build makes its own), and starts making the next.
// Its times are set to now: it is as fresh as a directory made now.
func (s *SpareDirs) Take(plans string) string {
	if s == nil || plans != s.plans {
		return ""
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var dir string
	select {
	case dir = <-s.ready:
		s.fill()
	default:
		return "" // still being made: not waited for
	}
	now := time.Now()
	if dir == "" || os.Chtimes(dir, now, now) != nil {
		return ""
	}
	return dir
}

// Close removes the spare, waiting for it if it is being made.
func (s *SpareDirs) Close() {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.busy {
		if dir := <-s.ready; dir != "" {
			sandbox.RemoveAll(dir)
		}
		s.busy = false
	}
}
