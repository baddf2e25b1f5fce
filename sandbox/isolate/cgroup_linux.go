package isolate

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/act-project/act/internal/cgroupfs"
)

// cgroups is one sandbox's cgroup directories: in the v1 hierarchies that
// are writable here, or, where no v1 memory hierarchy is, one cgroup in a
// delegated cgroup v2 tree (v2; memory and pids are then the same
// directory). A missing controller has an empty path.
//
// The sandbox's init joins them itself: join holds each directory's
// "tasks" file (v1) or "cgroup.procs" (v2), open for writing, which init
// inherits and writes "0" to before it forks the command. In v1 a single
// thread moving itself skips the kernel's global cgroup_threadgroup_rwsem,
// whose write side waits for an RCU grace period (5–20 ms here) on every
// write of a pid to cgroup.procs.
type cgroups struct {
	memory, pids, cpuacct string
	v2                    bool
	join                  []*os.File
	// ahead: the limits written before the spec came (limitAhead); the
	// spec's must be the same.
	ahead *aheadLimits
	// stats: the files read during and after a run, by path, opened
	// with the cgroups (an open in cgroupfs costs more than the read).
	stats map[string]*os.File
	// tasksReadable: the tasks files in join are open for reading too,
	// which the pool needs (empty); oomBase and pidsMaxBase are the
	// counters an earlier run left (oomKills, pidsMaxHits).
	tasksReadable        bool
	oomBase, pidsMaxBase int64
}

// The pool of a process's v1 cgroups whose sandboxes have ended, reset
// for the next: a process that runs sandbox after sandbox (act mcp) makes
// and removes its cgroups once, not per run (a mkdir and an rmdir in
// three hierarchies, the memory cgroup's the dearest). Only a process
// that asked for it ([PoolCgroups]) keeps one. Settle removes it.
var cgPool struct {
	sync.Mutex
	on   atomic.Bool
	free []*cgroups
}

// PoolCgroups makes this process keep the cgroups of its finished runs
// for its next ones, or not (see cgPool); a process that runs one sandbox
// and exits does better to remove them at once.
func PoolCgroups(on bool) { cgPool.on.Store(on) }

// maxPooled bounds the pool: a run and the sandbox started ahead of the
// next.
const maxPooled = 2

// maxPooledCharge is the most memory a pooled memory cgroup may still be
// charged: what a short command leaves (0.3 to 2.5 MiB measured here).
// memory.force_empty would give it back, but costs more CPU than making
// a new cgroup.
const maxPooledCharge = 4 << 20

// statFiles are the files of each v1 controller that a run reads.
var statFiles = map[string]string{"memory": "memory.oom_control", "pids": "pids.events", "cpuacct": "cpuacct.usage"}

type aheadLimits struct{ memoryMB, procs int64 }

// newCgroups makes the sandbox's cgroups: v1 where its hierarchies are
// writable, else a delegated v2 cgroup for memory and processes.
func newCgroups(l Limits, procs int64) *cgroups {
	cg := newCgroupV1(l, procs)
	if cg.memory == "" && l.MemoryMB > 0 {
		if v2 := newCgroupV2(delegatedV2(), l, procs); v2 != nil {
			cg.remove()
			return v2
		}
	}
	return cg
}

var cgroupSeq atomic.Int64

// v1Dirs maps a v1 controller act uses to the directory of this process's
// cgroup in it, for the controllers that are mounted.
func v1Dirs() map[string]string {
	own, err := cgroupfs.Own()
	if err != nil {
		return nil
	}
	dirs := map[string]string{}
	for _, ctl := range []string{"memory", "pids", "cpuacct"} {
		if d, ok := own[ctl]; ok {
			dirs[ctl] = d
		}
	}
	return dirs
}

// newCgroupV1 makes a child cgroup in each writable v1 controller and sets
// its limits; controllers that refuse are left out.
func newCgroupV1(l Limits, procs int64) *cgroups {
	return makeV1(func(ctl, d string) bool { return limitV1(ctl, d, l, procs) })
}

// makeV1 makes a child cgroup in each writable v1 controller for which
// limit (nil: none) succeeds, and opens its tasks file for init to join.
func makeV1(limit func(ctl, dir string) bool) *cgroups {
	if cg := takePooled(limit); cg != nil {
		return cg
	}
	cg := &cgroups{tasksReadable: true}
	name := fmt.Sprintf("act-sandbox-%d-%d", os.Getpid(), cgroupSeq.Add(1))
	for ctl, dir := range v1Dirs() {
		d := filepath.Join(dir, name)
		if os.Mkdir(d, 0o755) != nil {
			continue
		}
		ok := limit == nil || limit(ctl, d)
		var tasks *os.File
		if ok {
			var err error
			// Read too, to see it empty before the cgroup is pooled.
			tasks, err = os.OpenFile(filepath.Join(d, "tasks"), os.O_RDWR, 0)
			if err != nil {
				cg.tasksReadable = false
				tasks, err = os.OpenFile(filepath.Join(d, "tasks"), os.O_WRONLY, 0)
			}
			ok = err == nil
		}
		if !ok {
			os.Remove(d)
			continue
		}
		cg.join = append(cg.join, tasks)
		if f, err := os.Open(filepath.Join(d, statFiles[ctl])); err == nil {
			if cg.stats == nil {
				cg.stats = map[string]*os.File{}
			}
			cg.stats[f.Name()] = f
		}
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

// dirs maps each controller of cg to its directory.
func (cg *cgroups) dirs() map[string]string {
	m := map[string]string{}
	for ctl, d := range map[string]string{"memory": cg.memory, "pids": cg.pids, "cpuacct": cg.cpuacct} {
		if d != "" {
			m[ctl] = d
		}
	}
	return m
}

// takePooled returns cgroups from the pool with limit (nil: none) set in
// each controller, or nil (none pooled, or a limit failed: those are
// removed).
func takePooled(limit func(ctl, dir string) bool) *cgroups {
	cgPool.Lock()
	n := len(cgPool.free)
	if n == 0 {
		cgPool.Unlock()
		return nil
	}
	cg := cgPool.free[n-1]
	cgPool.free = cgPool.free[:n-1]
	cgPool.Unlock()
	if limit != nil {
		for ctl, d := range cg.dirs() {
			if !limit(ctl, d) {
				cg.remove()
				return nil
			}
		}
	}
	return cg
}

// release ends cg's use by a run whose processes are all gone: back to
// the pool if it may go and is empty, its limits lifted and its counters
// reset or noted; otherwise removed.
func (cg *cgroups) release() {
	if cg == nil {
		return
	}
	// Only a whole set is pooled: one without a controller (its mkdir
	// failed) would refuse a later run's cap that a new set could hold.
	whole := cg.memory != "" && cg.pids != "" && cg.cpuacct != ""
	if !cgPool.on.Load() || !cg.tasksReadable || cg.v2 || !whole || !cg.empty() || !cg.reset() {
		cg.remove()
		return
	}
	cgPool.Lock()
	if len(cgPool.free) < maxPooled {
		cgPool.free = append(cgPool.free, cg)
		cgPool.Unlock()
		return
	}
	cgPool.Unlock()
	cg.remove()
}

// empty reports whether no task is in any of cg's cgroups.
func (cg *cgroups) empty() bool {
	var b [1]byte
	for _, f := range cg.join {
		if n, err := f.ReadAt(b[:], 0); n != 0 || err != io.EOF {
			return false
		}
	}
	return len(cg.join) > 0
}

// reset makes empty cgroups as a new run needs them: no limits (the run
// sets its own), little memory charged (maxPooledCharge), the CPU time at
// zero, and the counters that cannot be reset noted as the new zero. It
// reports false where they cannot be.
func (cg *cgroups) reset() bool {
	cg.ahead = nil
	cg.oomBase, cg.pidsMaxBase = 0, 0
	if d := cg.memory; d != "" {
		// memory+swap first: it may never be below the memory limit.
		if err := writeFile(d, "memory.memsw.limit_in_bytes", "-1"); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return false
		}
		if writeFile(d, "memory.limit_in_bytes", "-1") != nil {
			return false
		}
		// What the run left charged (mostly the page cache of what it
		// read) would count against the next run's cap: a little is
		// kept (the kernel reclaims it under the cap), more is handed
		// to the parent by removing the cgroup.
		b, err := cg.read(d, "memory.usage_in_bytes")
		if n, perr := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64); err != nil || perr != nil || n > maxPooledCharge {
			return false
		}
		cg.oomBase = cg.oomKills()
	}
	if d := cg.pids; d != "" {
		if writeFile(d, "pids.max", "max") != nil {
			return false
		}
		cg.pidsMaxBase = cg.pidsMaxHits()
	}
	if d := cg.cpuacct; d != "" && writeFile(d, "cpuacct.usage", "0") != nil {
		return false
	}
	return true
}

// drainPool removes the pooled cgroups.
func drainPool() {
	cgPool.Lock()
	free := cgPool.free
	cgPool.free = nil
	cgPool.Unlock()
	for _, cg := range free {
		cg.remove()
	}
}

// limitV1 writes the limits of l to the v1 cgroup dir of controller ctl.
func limitV1(ctl, d string, l Limits, procs int64) bool {
	switch ctl {
	case "memory":
		if l.MemoryMB > 0 {
			b := strconv.FormatInt(l.MemoryMB<<20, 10)
			if writeFile(d, "memory.limit_in_bytes", b) != nil {
				return false
			}
			// Where swap is accounted, cap memory+swap alike.
			_ = writeFile(d, "memory.memsw.limit_in_bytes", b)
		}
	case "pids":
		return writeFile(d, "pids.max", strconv.FormatInt(procs, 10)) == nil
	}
	return true
}

// limit sets l on v1 cgroups made without limits (a Warm's, made before
// its spec: nothing runs in them before init joins, after this). It
// reports false where a limit could not be set or the cgroups are not
// the v1 ones l needs (then the caller removes them and makes new ones).
//
// Cgroups limited ahead (limitAhead) are not written again: they suit
// only the limits they have.
func (cg *cgroups) limit(l Limits, procs int64) bool {
	if cg.v2 || (l.MemoryMB > 0 && cg.memory == "") {
		return false
	}
	if cg.ahead != nil {
		return *cg.ahead == aheadLimits{max(l.MemoryMB, 0), procs}
	}
	return (cg.memory == "" || limitV1("memory", cg.memory, l, procs)) &&
		(cg.pids == "" || limitV1("pids", cg.pids, l, procs))
}

// limitAhead sets the limits of a Spec that has not come yet, of v1
// cgroups made without limits: those that l probably will be. It reports
// false where they could not be set (the caller makes new cgroups).
func (cg *cgroups) limitAhead(l Limits) bool {
	procs := procsOf(l)
	if !cg.limit(l, procs) {
		return false
	}
	cg.ahead = &aheadLimits{max(l.MemoryMB, 0), procs}
	return true
}

func writeFile(dir, name, val string) error {
	return os.WriteFile(filepath.Join(dir, name), []byte(val), 0)
}

// closeJoin closes the parent's copies of the tasks files.
func (cg *cgroups) closeJoin() {
	for _, f := range cg.join {
		f.Close()
	}
	cg.join = nil
}

// cpuUsage is the CPU time used in the cpuacct cgroup so far.
func (cg *cgroups) cpuUsage() (time.Duration, bool) {
	if cg.cpuacct == "" {
		return 0, false
	}
	b, err := cg.read(cg.cpuacct, "cpuacct.usage")
	if err != nil {
		return 0, false
	}
	n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	return time.Duration(n), err == nil
}

// read reads the cgroup file dir/name: from the start of its copy in
// stats (the kernel renders it anew), else opened now.
func (cg *cgroups) read(dir, name string) ([]byte, error) {
	p := filepath.Join(dir, name)
	f := cg.stats[p]
	if f == nil {
		return os.ReadFile(p)
	}
	b := make([]byte, 0, 512)
	for {
		n, err := f.ReadAt(b[len(b):cap(b)], int64(len(b)))
		b = b[:len(b)+n]
		if err == io.EOF {
			return b, nil
		}
		if err != nil {
			return nil, err
		}
		b = slices.Grow(b, cap(b))
	}
}

// field reads "key value" from the flat-keyed cgroup file dir/file.
func (cg *cgroups) field(dir, file, key string) int64 {
	if dir == "" {
		return 0
	}
	b, err := cg.read(dir, file)
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

func (cg *cgroups) oomKills() int64 {
	if cg.v2 {
		return cg.field(cg.memory, "memory.events", "oom_kill")
	}
	return cg.field(cg.memory, "memory.oom_control", "oom_kill") - cg.oomBase
}
func (cg *cgroups) pidsMaxHits() int64 {
	return cg.field(cg.pids, "pids.events", "max") - cg.pidsMaxBase
}

// remove deletes the cgroups; they are empty once the namespace is gone,
// but the kernel may take a moment to notice.
func (cg *cgroups) remove() {
	if cg == nil {
		return
	}
	cg.closeJoin()
	for _, f := range cg.stats {
		f.Close()
	}
	for _, d := range []string{cg.memory, cg.pids, cg.cpuacct} {
		if d == "" {
			continue
		}
		for i := 0; i < 100; i++ {
			if err := syscall.Rmdir(d); err == nil || err == syscall.ENOENT {
				break
			}
			time.Sleep(2 * time.Millisecond)
		}
	}
}

// The delegated cgroup v2 tree act makes the sandboxes' cgroups in, found
// (and prepared) once per process: "" where there is none.
var delegatedV2 = sync.OnceValue(func() string {
	own, err := cgroupfs.Own()
	if err != nil || own[""] == "" {
		return ""
	}
	return prepareV2(own[""], os.Getpid(), os.Geteuid())
})

// v2Leaf is the cgroup act moves itself into, below its own delegated
// cgroup, so that the sandboxes' cgroups may have controllers (cgroup v2
// puts processes in leaves only).
const v2Leaf = "act"

// prepareV2 readies own, the cgroup v2 directory that process pid of
// effective uid euid is in, for the sandboxes' cgroups and returns it, or
// "" where it cannot be used. It is used only where it is delegated to
// euid: its directory, cgroup.procs and cgroup.subtree_control are
// euid's and writable, memory is among its controllers, and nothing but
// this process is in it; for root, only where systemd marked it delegated
// (Delegate=yes: the trusted.delegate or user.delegate xattr), so act does
// not reorganise a cgroup systemd manages. Then act moves itself into
// own/act and enables the memory (and pids) controllers for own's
// children (docs/sandbox-process.md).
func prepareV2(own string, pid, euid int) string {
	ctl, err := os.ReadFile(filepath.Join(own, "cgroup.controllers"))
	if err != nil || !hasWord(string(ctl), "memory") {
		return ""
	}
	sub, err := os.ReadFile(filepath.Join(own, "cgroup.subtree_control"))
	if err != nil {
		return ""
	}
	if hasWord(string(sub), "memory") {
		return own // prepared already (act is in a leaf below it)
	}
	for _, f := range []string{"", "cgroup.procs", "cgroup.subtree_control"} {
		var st syscall.Stat_t
		p := filepath.Join(own, f)
		if syscall.Stat(p, &st) != nil || int(st.Uid) != euid || syscall.Access(p, 2) != nil {
			return ""
		}
	}
	if euid == 0 && !hasXattr(own, "trusted.delegate") && !hasXattr(own, "user.delegate") {
		return ""
	}
	procs, err := os.ReadFile(filepath.Join(own, "cgroup.procs"))
	if err != nil || strings.TrimSpace(string(procs)) != strconv.Itoa(pid) {
		return ""
	}
	leaf := filepath.Join(own, v2Leaf)
	if err := os.Mkdir(leaf, 0o755); err != nil && !os.IsExist(err) {
		return ""
	}
	if writeFile(leaf, "cgroup.procs", strconv.Itoa(pid)) != nil {
		os.Remove(leaf)
		return ""
	}
	if writeFile(own, "cgroup.subtree_control", "+memory") != nil {
		// Put act back where it was.
		_ = writeFile(own, "cgroup.procs", strconv.Itoa(pid))
		os.Remove(leaf)
		return ""
	}
	_ = writeFile(own, "cgroup.subtree_control", "+pids") // optional
	return own
}

func hasWord(s, w string) bool {
	for _, f := range strings.Fields(s) {
		if f == w {
			return true
		}
	}
	return false
}

func hasXattr(path, name string) bool {
	_, err := syscall.Getxattr(path, name, nil)
	return err == nil
}

// newCgroupV2 makes a sandbox's cgroup below base, a delegated cgroup v2
// directory prepared by prepareV2, with memory.max (and pids.max, where
// the pids controller is enabled) set; nil where base is "" or it fails.
func newCgroupV2(base string, l Limits, procs int64) *cgroups {
	if base == "" {
		return nil
	}
	d := filepath.Join(base, fmt.Sprintf("act-sandbox-%d-%d", os.Getpid(), cgroupSeq.Add(1)))
	if os.Mkdir(d, 0o755) != nil {
		return nil
	}
	cg := &cgroups{v2: true, memory: d}
	b := strconv.FormatInt(l.MemoryMB<<20, 10)
	err := writeFile(d, "memory.max", b)
	if err == nil {
		// Swap would hold what memory.max does not count (the file is
		// missing where swap is not accounted).
		if _, e := os.Stat(filepath.Join(d, "memory.swap.max")); e == nil {
			err = writeFile(d, "memory.swap.max", "0")
		}
	}
	if err == nil {
		if _, e := os.Stat(filepath.Join(d, "pids.max")); e == nil && writeFile(d, "pids.max", strconv.FormatInt(procs, 10)) == nil {
			cg.pids = d
		}
	}
	var procsFile *os.File
	if err == nil {
		procsFile, err = os.OpenFile(filepath.Join(d, "cgroup.procs"), os.O_WRONLY, 0)
	}
	if err != nil {
		os.Remove(d)
		return nil
	}
	cg.join = []*os.File{procsFile}
	return cg
}
