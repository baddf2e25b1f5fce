// Package cgrouptest delegates a memory cgroup to an ordinary user, for
// tests that run act as one: where no memory cgroup is writable act
// refuses commands with a memory cap (docs/sandbox-process.md), so such a
// test runs its child in a cgroup of its own, as a user's delegated
// session would be.
package cgrouptest

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"
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
	f, err := os.Open("/proc/self/cgroup")
	if err != nil {
		return "", err
	}
	defer f.Close()
	var path string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		parts := strings.SplitN(sc.Text(), ":", 3)
		if len(parts) == 3 && hasItem(parts[1], "memory") {
			path = parts[2]
		}
	}
	if path == "" {
		return "", fmt.Errorf("no cgroup v1 memory hierarchy here: cannot delegate a memory cgroup to an ordinary user")
	}
	mi, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return "", err
	}
	for _, line := range strings.Split(string(mi), "\n") {
		pre, post, ok := strings.Cut(line, " - ")
		if !ok {
			continue
		}
		pf, qf := strings.Fields(pre), strings.Fields(post)
		if len(pf) < 5 || len(qf) < 3 || qf[0] != "cgroup" || !hasItem(qf[2], "memory") {
			continue
		}
		rel, err := filepath.Rel(pf[3], path)
		if err != nil || strings.HasPrefix(rel, "..") {
			continue
		}
		return filepath.Join(pf[4], rel), nil
	}
	return "", fmt.Errorf("the cgroup v1 memory hierarchy is not mounted here")
}

func hasItem(list, item string) bool {
	for _, x := range strings.Split(list, ",") {
		if x == item {
			return true
		}
	}
	return false
}
