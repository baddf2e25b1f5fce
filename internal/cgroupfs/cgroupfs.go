// Package cgroupfs finds the directories of this process's cgroups in the
// mounted cgroup hierarchies.
package cgroupfs

import (
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
)

// Dirs maps each hierarchy this process is in to the directory of its
// cgroup there, from the text of /proc/self/cgroup (procCgroup) and of
// /proc/self/mountinfo: a v1 hierarchy by each of its controllers
// ("memory", "pids", …), the v2 hierarchy by "". A hierarchy not mounted
// above the process's cgroup is left out.
func Dirs(procCgroup, mountinfo string) map[string]string {
	dirs := map[string]string{}
	for _, line := range strings.Split(procCgroup, "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			continue
		}
		if parts[1] == "" {
			if d := mountedAt(mountinfo, "cgroup2", "", parts[2]); d != "" {
				dirs[""] = d
			}
			continue
		}
		for _, ctl := range strings.Split(parts[1], ",") {
			if d := mountedAt(mountinfo, "cgroup", ctl, parts[2]); d != "" {
				dirs[ctl] = d
			}
		}
	}
	return dirs
}

// Own is Dirs of this process. The mount table is read again only when
// the process's cgroups (/proc/self/cgroup) have changed since the last
// call: a long-running act (act mcp) makes a sandbox's cgroups per run,
// and the cgroup hierarchies are not remounted under it.
func Own() (map[string]string, error) {
	pc, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return nil, err
	}
	own.Lock()
	defer own.Unlock()
	if own.dirs == nil || own.procCgroup != string(pc) {
		mi, err := os.ReadFile("/proc/self/mountinfo")
		if err != nil {
			return nil, err
		}
		own.procCgroup, own.dirs = string(pc), Dirs(string(pc), string(mi))
	}
	return maps.Clone(own.dirs), nil
}

// own is Own's last answer and the /proc/self/cgroup it was for.
var own struct {
	sync.Mutex
	procCgroup string
	dirs       map[string]string
}

// mountedAt is where path, a cgroup's path in the hierarchy mounted as
// fstype ("cgroup" with the controller ctl among its options, or "cgroup2"
// with ctl ""), is, from mountinfo: "" where no such mount holds it.
func mountedAt(mountinfo, fstype, ctl, path string) string {
	for _, line := range strings.Split(mountinfo, "\n") {
		pre, post, ok := strings.Cut(line, " - ")
		if !ok {
			continue
		}
		pf, qf := strings.Fields(pre), strings.Fields(post)
		if len(pf) < 5 || len(qf) < 1 || qf[0] != fstype {
			continue
		}
		if ctl != "" && (len(qf) < 3 || !slices.Contains(strings.Split(qf[2], ","), ctl)) {
			continue
		}
		// Rel, not a prefix test: path is cleaned first (a cgroup outside
		// the namespace's root reads "/../x"). A name may itself start
		// with "..": only a ".." element leaves the mount.
		rel, err := filepath.Rel(pf[3], path)
		if err != nil || rel == ".." || strings.HasPrefix(rel, "../") {
			continue
		}
		return filepath.Join(pf[4], rel)
	}
	return ""
}
