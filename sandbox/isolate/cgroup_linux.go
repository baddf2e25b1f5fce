package isolate

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
)

// cgroupV1 is one sandbox's directories in the v1 hierarchies that are
// writable here; a missing controller has an empty path.
//
// The sandbox's init joins them itself: join holds each directory's
// "tasks" file, open for writing, which init inherits and writes "0" to
// before it forks the command. A single thread moving itself skips the
// kernel's global cgroup_threadgroup_rwsem, whose write side waits for an
// RCU grace period (5–20 ms here) on every write of a pid to cgroup.procs.
type cgroupV1 struct {
	memory, pids, cpuacct string
	join                  []*os.File
}

var cgroupSeq atomic.Int64

// v1Dirs maps a v1 controller to the directory of this process's cgroup in
// it, for the controllers that are mounted.
func v1Dirs() map[string]string {
	mine := map[string]string{}
	f, err := os.Open("/proc/self/cgroup")
	if err != nil {
		return nil
	}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		parts := strings.SplitN(sc.Text(), ":", 3)
		if len(parts) != 3 || parts[1] == "" {
			continue
		}
		for _, c := range strings.Split(parts[1], ",") {
			mine[c] = parts[2]
		}
	}
	f.Close()

	dirs := map[string]string{}
	mi, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return nil
	}
	for _, line := range strings.Split(string(mi), "\n") {
		pre, post, ok := strings.Cut(line, " - ")
		if !ok {
			continue
		}
		pf, qf := strings.Fields(pre), strings.Fields(post)
		if len(pf) < 5 || len(qf) < 3 || qf[0] != "cgroup" {
			continue
		}
		root, point := pf[3], pf[4]
		for _, opt := range strings.Split(qf[2], ",") {
			p, ok := mine[opt]
			if !ok || (opt != "memory" && opt != "pids" && opt != "cpuacct") {
				continue
			}
			rel, err := filepath.Rel(root, p)
			if err != nil || strings.HasPrefix(rel, "..") {
				continue
			}
			dirs[opt] = filepath.Join(point, rel)
		}
	}
	return dirs
}

// newCgroupV1 makes a child cgroup in each writable v1 controller and sets
// its limits; controllers that refuse are left out.
func newCgroupV1(l Limits, procs int64) *cgroupV1 {
	cg := &cgroupV1{}
	name := fmt.Sprintf("act-sandbox-%d-%d", os.Getpid(), cgroupSeq.Add(1))
	for ctl, dir := range v1Dirs() {
		d := filepath.Join(dir, name)
		if os.Mkdir(d, 0o755) != nil {
			continue
		}
		ok := true
		switch ctl {
		case "memory":
			if l.MemoryMB > 0 {
				b := strconv.FormatInt(l.MemoryMB<<20, 10)
				ok = writeFile(d, "memory.limit_in_bytes", b) == nil
				if ok {
					// Where swap is accounted, cap memory+swap alike.
					_ = writeFile(d, "memory.memsw.limit_in_bytes", b)
				}
			}
		case "pids":
			ok = writeFile(d, "pids.max", strconv.FormatInt(procs, 10)) == nil
		}
		var tasks *os.File
		if ok {
			var err error
			tasks, err = os.OpenFile(filepath.Join(d, "tasks"), os.O_WRONLY, 0)
			ok = err == nil
		}
		if !ok {
			os.Remove(d)
			continue
		}
		cg.join = append(cg.join, tasks)
		switch ctl {
		case "memory":
			cg.memory = d
		case "pids":
			cg.pids = d
		case "cpuacct":
			cg.cpuacct = d
		}
	}
	return cg
}

func writeFile(dir, name, val string) error {
	return os.WriteFile(filepath.Join(dir, name), []byte(val), 0)
}

// closeJoin closes the parent's copies of the tasks files.
func (cg *cgroupV1) closeJoin() {
	for _, f := range cg.join {
		f.Close()
	}
	cg.join = nil
}

// cpuUsage is the CPU time used in the cpuacct cgroup so far.
func (cg *cgroupV1) cpuUsage() (time.Duration, bool) {
	if cg.cpuacct == "" {
		return 0, false
	}
	b, err := os.ReadFile(filepath.Join(cg.cpuacct, "cpuacct.usage"))
	if err != nil {
		return 0, false
	}
	n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	return time.Duration(n), err == nil
}

// field reads "key value" from a flat-keyed cgroup file.
func field(dir, file, key string) int64 {
	if dir == "" {
		return 0
	}
	b, err := os.ReadFile(filepath.Join(dir, file))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(line, " "); ok && k == key {
			n, _ := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			return n
		}
	}
	return 0
}

func (cg *cgroupV1) oomKills() int64    { return field(cg.memory, "memory.oom_control", "oom_kill") }
func (cg *cgroupV1) pidsMaxHits() int64 { return field(cg.pids, "pids.events", "max") }

// remove deletes the cgroups; they are empty once the namespace is gone,
// but the kernel may take a moment to notice.
func (cg *cgroupV1) remove() {
	cg.closeJoin()
	for _, d := range []string{cg.memory, cg.pids, cg.cpuacct} {
		if d == "" {
			continue
		}
		for i := 0; i < 100; i++ {
			if err := os.Remove(d); err == nil || os.IsNotExist(err) {
				break
			}
			time.Sleep(2 * time.Millisecond)
		}
	}
}
