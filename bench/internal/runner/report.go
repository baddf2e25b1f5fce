package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"
)

func printHeader(w io.Writer, b *bench, pairs, warmup int) {
	commit := cmdOut(b.root, "git", "describe", "--always", "--dirty")
	fmt.Fprintf(w, "act benchmarks  %s  commit %s\n", time.Now().UTC().Format("2006-01-02 15:04 MST"), orUnknown(commit))
	fmt.Fprintf(w, "kernel %s · %d CPUs (%s) · %s\n", orUnknown(kernel()), runtime.NumCPU(), orUnknown(cpuModel()),
		orUnknown(cmdOut(b.root, "go", "env", "GOVERSION")))
	fstype, source := filesystem(b.work)
	fmt.Fprintf(w, "work dir %s: %s on %s", b.work, orUnknown(fstype), orUnknown(source))
	if strings.HasPrefix(fstype, "ext") {
		fmt.Fprintf(w, ", journal %s", journal(source))
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "load average (1 5 15 min) %s at start, %s at end: other work on the machine widens min–max\n",
		orUnknown(b.loadStart), orUnknown(loadavg()))
	fmt.Fprintf(w, "%d interleaved pairs (A B A B …) per row after %d warm-up pairs; wall clock of the whole process\n", pairs, warmup)
	fmt.Fprintln(w, "only ratios are comparable between runs and machines; absolute ms drift ~2×")
	fmt.Fprintln(w)
}

func printTable(w io.Writer, b *bench, results []*result) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "#\tname\tA ms median [min–max]\tB ms median [min–max]\tA/B median [min–max]\ttarget\tmet\tA peak RSS MiB max")
	for _, r := range results {
		target := fmt.Sprintf("≤ %g", r.target)
		if r.target == 0 { // a memory row: the ratio is for information
			target = "-"
		}
		if r.err != nil {
			fmt.Fprintf(tw, "%s\t%s\t-\t-\t-\t%s\tERROR\t-\n", r.num, r.name, target)
			continue
		}
		a, bb, q := summarize(walls(r.as)), summarize(walls(r.bs)), summarize(r.ratios)
		met := "yes"
		switch {
		case r.target == 0:
			met = "-"
		case q.med > r.target:
			met = fmt.Sprintf("NO (+%.0f%%)", (q.med/r.target-1)*100)
		}
		rss := "-"
		if r.rssMeasured {
			m := summarize(rssMiB(r.as)).hi
			rss = fmt.Sprintf("%.1f", m)
			if r.rssMiB > 0 {
				ok := "yes"
				if m > r.rssMiB {
					ok = "NO"
				}
				rss += fmt.Sprintf(" (≤ %g: %s)", r.rssMiB, ok)
			}
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.num, r.name,
			fmtStats(a, "%.2f"), fmtStats(bb, "%.2f"), fmtStats(q, "%.2f"), target, met, rss)
	}
	tw.Flush()
	fmt.Fprintln(w)
	for _, r := range results {
		if r.err != nil {
			msg, _, _ := strings.Cut(r.err.Error(), "\n")
			fmt.Fprintf(w, "%-3s ERROR: %s\n", r.num, msg)
			continue
		}
		fmt.Fprintf(w, "%-3s A: %s\n    B: %s\n", r.num, r.a.label, r.b.label)
	}
	if hwm := selfHWM(); hwm != "" {
		fmt.Fprintf(w, "\npeak RSS is the child's getrusage maxrss, which cannot read below the runner's own (%s)\n", hwm)
	}
}

// selfHWM is the runner's own peak RSS: a child started by fork or vfork
// begins with its parent's, so child figures below it are meaningless.
func selfHWM() string {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return ""
	}
	for line := range strings.SplitSeq(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			var kb float64
			if _, err := fmt.Sscan(v, &kb); err == nil {
				return fmt.Sprintf("%.1f MiB", kb/1024)
			}
		}
	}
	return ""
}

func fmtStats(s stats, f string) string {
	return fmt.Sprintf(f+" ["+f+"–"+f+"]", s.med, s.lo, s.hi)
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}

// cmdOut is the trimmed standard output of a command, or "" on failure.
func cmdOut(dir string, name string, args ...string) string {
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(out))
}

func loadavg() string {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	f := strings.Fields(string(data))
	if len(f) < 3 {
		return ""
	}
	return strings.Join(f[:3], " ")
}

func kernel() string {
	data, err := os.ReadFile("/proc/sys/kernel/osrelease")
	if err != nil {
		return cmdOut("/", "uname", "-r")
	}
	return strings.TrimSpace(string(data))
}

func cpuModel() string {
	f, err := os.Open("/proc/cpuinfo")
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.Join(strings.Fields(v), " ")
		}
	}
	return ""
}

// filesystem is the type and source device of the filesystem holding dir:
// findmnt, else df, else statfs's magic number.
func filesystem(dir string) (fstype, source string) {
	if out := cmdOut("/", "findmnt", "-n", "-o", "FSTYPE,SOURCE", "-T", dir); out != "" {
		if f := strings.Fields(out); len(f) == 2 {
			return f[0], f[1]
		}
	}
	if out := cmdOut("/", "df", "--output=fstype,source", dir); out != "" {
		lines := strings.Split(out, "\n")
		if f := strings.Fields(lines[len(lines)-1]); len(f) == 2 {
			return f[0], f[1]
		}
	}
	var st syscall.Statfs_t
	if syscall.Statfs(dir, &st) == nil {
		switch st.Type {
		case 0xEF53:
			return "ext2/3/4", ""
		case 0x01021994:
			return "tmpfs", ""
		case 0x58465342:
			return "xfs", ""
		case 0x9123683E:
			return "btrfs", ""
		case 0x794c7630:
			return "overlay", ""
		default:
			return fmt.Sprintf("statfs type %#x", st.Type), ""
		}
	}
	return "", ""
}

// journal says whether the ext4 filesystem on source has a journal, and
// how that is known: dumpe2fs -h (needs read access to the device), else
// the kernel's view in /sys/fs/ext4/DEV/journal_task ("<none>" without a
// journal) or /proc/fs/jbd2/DEV-*, else unknown.
func journal(source string) string {
	if source == "" {
		return "unknown"
	}
	if out := cmdOut("/", "dumpe2fs", "-h", source); out != "" {
		for line := range strings.SplitSeq(out, "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && k == "Filesystem features" {
				if strings.Contains(" "+v+" ", " has_journal ") {
					return "yes (dumpe2fs)"
				}
				return "no (dumpe2fs)"
			}
		}
	}
	dev := source
	if p, err := filepath.EvalSymlinks(source); err == nil {
		dev = p
	}
	dev = filepath.Base(dev)
	if data, err := os.ReadFile(filepath.Join("/sys/fs/ext4", dev, "journal_task")); err == nil {
		if strings.TrimSpace(string(data)) == "<none>" {
			return "no (/sys/fs/ext4/" + dev + "/journal_task)"
		}
		return "yes (/sys/fs/ext4/" + dev + "/journal_task)"
	}
	if m, _ := filepath.Glob(filepath.Join("/proc/fs/jbd2", dev+"-*")); len(m) > 0 {
		return "yes (" + m[0] + ")"
	}
	return "unknown"
}
