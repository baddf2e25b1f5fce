// Package cgrouptest delegates a memory cgroup to an ordinary user, for
// tests that run act as one: where no memory cgroup is writable act
// refuses commands with a memory cap (docs/sandbox-process.md), so such a
// test runs its child in a cgroup of its own, as a user's delegated
// session would be.
package cgrouptest

import (
	"fmt"
	"os"
	"path/filepath"
	"sync/atomic"
	"time"

	"github.com/act-project/act/internal/cgroupfs"
)

var seq atomic.Int64

// Delegate makes a cgroup in the cgroup v1 memory hierarchy, below the
// caller's own, whose directory, tasks and cgroup.procs are uid's, and
// returns the argv prefix that moves a process into it and execs the rest
// of its argv (sh -c 'echo 0 > …/tasks && exec "$@"' sh), and a function
// that removes the cgroup once nothing is in it. It needs root, and a v1
// memory hierarchy (the error says so where there is none).
func Delegate(uid, gid int) (prefix []string, remove func(), err error) {
	own, err := ownMemoryCgroup()
	if err != nil {
		return nil, nil, err
	}
	dir := filepath.Join(own, fmt.Sprintf("act-test-%d-%d", os.Getpid(), seq.Add(1)))
	if err := os.Mkdir(dir, 0o755); err != nil {
		return nil, nil, fmt.Errorf("make a memory cgroup to delegate: %w", err)
	}
	remove = func() {
		for i := 0; i < 200; i++ {
			if err := os.Remove(dir); err == nil || os.IsNotExist(err) {
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	for _, f := range []string{"", "tasks", "cgroup.procs"} {
		if err := os.Chown(filepath.Join(dir, f), uid, gid); err != nil {
			remove()
			return nil, nil, fmt.Errorf("delegate the memory cgroup: %w", err)
		}
	}
	return []string{"sh", "-c", `echo 0 > "$0/tasks" && exec "$@"`, dir}, remove, nil
}

// ownMemoryCgroup is the directory of this process's cgroup in the v1
// memory hierarchy.
func ownMemoryCgroup() (string, error) {
	own, err := cgroupfs.Own()
	if err != nil {
		return "", err
	}
	if own["memory"] == "" {
		return "", fmt.Errorf("no cgroup v1 memory hierarchy is mounted here: cannot delegate a memory cgroup to an ordinary user")
	}
	return own["memory"], nil
}
