package plan

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/act-project/act/descriptors"
	"github.com/act-project/act/internal/digest"
	"github.com/act-project/act/internal/problem"
)

// Host is what preconditions read about the machine beyond the files
// themselves. Tests replace its functions; [DefaultHost] reads the real
// machine.
type Host struct {
	// FreeBytes returns the bytes available to an unprivileged user on the
	// filesystem holding path.
	FreeBytes func(path string) (uint64, error)
	// NetworkAvailable reports whether a non-loopback route exists.
	NetworkAvailable func() (bool, error)
	// LastInput returns the time of the current user's last terminal input;
	// ok is false when it cannot be determined.
	LastInput func() (t time.Time, ok bool)
}

// DefaultHost reads the real machine.
func DefaultHost() Host {
	return Host{FreeBytes: freeBytes, NetworkAvailable: networkAvailable, LastInput: lastTerminalInput}
}

// CheckPreconditions evaluates d's preconditions on the real filesystem
// (docs/descriptor.md) and returns one problem per precondition that does not hold,
// or nil. idle is the policy's idle period for user_idle.
func CheckPreconditions(d *descriptors.Descriptor, host Host, now time.Time, idle time.Duration) problem.List {
	var probs problem.List
	add := func(rule string, field []string, format string, args ...any) {
		probs = append(probs, problem.Problem{
			Rule: rule, Field: problem.FieldPath(field...),
			Message: fmt.Sprintf(format, args...), Layer: problem.Precondition,
		})
	}
	pre := d.Preconditions
	for i, p := range pre.PathsExist {
		if _, err := os.Lstat(p); err != nil {
			add("precondition.path-missing", []string{"preconditions", "paths_exist", itoa(i)},
				"%s must exist: %s", p, errText(err))
		}
	}
	for i, p := range pre.PathsAbsent {
		_, err := os.Lstat(p)
		switch {
		case err == nil:
			add("precondition.path-present", []string{"preconditions", "paths_absent", itoa(i)},
				"%s must not exist, and it does", p)
		case !errors.Is(err, fs.ErrNotExist):
			add("precondition.path-present", []string{"preconditions", "paths_absent", itoa(i)},
				"cannot tell whether %s exists: %s", p, errText(err))
		}
	}
	for _, p := range sortedKeys(pre.SHA256) {
		want := strings.ToLower(pre.SHA256[p])
		got, err := digest.RegularFile(p)
		field := []string{"preconditions", "sha256", p}
		switch {
		case err != nil:
			add("precondition.sha256-mismatch", field, "%s must have sha256 %s: %s", p, want, errText(err))
		case got != want:
			add("precondition.sha256-mismatch", field, "%s has sha256 %s, not %s", p, got, want)
		}
	}
	if pre.MinFreeDiskMB != nil {
		need := uint64(*pre.MinFreeDiskMB) << 20
		for i, root := range d.Scope.Filesystem.Paths {
			dir := existingAncestor(root)
			free, err := host.FreeBytes(dir)
			field := []string{"preconditions", "min_free_disk_mb"}
			switch {
			case err != nil:
				add("precondition.disk-space", field, "cannot read the free space of %s (scope.filesystem.paths[%d]): %s", dir, i, errText(err))
			case free < need:
				add("precondition.disk-space", field, "%s has %d MiB free, less than the %d MiB required", dir, free>>20, *pre.MinFreeDiskMB)
			}
		}
	}
	if pre.NetworkAvailable {
		ok, err := host.NetworkAvailable()
		field := []string{"preconditions", "network_available"}
		switch {
		case err != nil:
			add("precondition.network-unavailable", field, "cannot tell whether the network is available: %s", errText(err))
		case !ok:
			add("precondition.network-unavailable", field, "no network route other than loopback exists")
		}
	}
	if pre.UserIdle {
		field := []string{"preconditions", "user_idle"}
		last, ok := host.LastInput()
		switch {
		case !ok:
			add("precondition.user-idle-unknown", field, "whether the user is idle is unknown: no terminal of this user shows its last input")
		case now.Sub(last) < idle:
			add("precondition.user-not-idle", field, "the user typed at a terminal %s ago, less than the policy's idle period of %s",
				now.Sub(last).Round(time.Second), idle)
		}
	}
	return probs
}

func itoa(i int) string { return fmt.Sprint(i) }

func errText(err error) string {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		err = pe.Err
	}
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return "it does not exist"
	case errors.Is(err, digest.ErrNotRegular):
		return "it is not a regular file"
	}
	return err.Error()
}

// existingAncestor returns p or its nearest ancestor that exists.
func existingAncestor(p string) string {
	for {
		if _, err := os.Lstat(p); err == nil || p == "/" {
			return p
		}
		p = filepath.Dir(p)
	}
}

func freeBytes(path string) (uint64, error) {
	var st unix.Statfs_t
	if err := unix.Statfs(path, &st); err != nil {
		return 0, err
	}
	return st.Bavail * uint64(st.Bsize), nil
}

// networkAvailable reports whether an IPv4 or IPv6 route goes through an
// interface other than loopback.
func networkAvailable() (bool, error) {
	found := false
	var firstErr error
	for _, f := range []struct {
		name  string
		iface func([]string) string
	}{
		{"/proc/net/route", func(fs []string) string { return fs[0] }},
		{"/proc/net/ipv6_route", func(fs []string) string { return fs[len(fs)-1] }},
	} {
		file, err := os.Open(f.name)
		if err != nil {
			if firstErr == nil && !errors.Is(err, fs.ErrNotExist) {
				firstErr = err
			}
			continue
		}
		sc := bufio.NewScanner(file)
		for sc.Scan() {
			fields := strings.Fields(sc.Text())
			if len(fields) < 2 || fields[0] == "Iface" {
				continue
			}
			if name := f.iface(fields); name != "lo" && name != "" {
				found = true
			}
		}
		file.Close()
	}
	if !found && firstErr != nil {
		return false, firstErr
	}
	return found, nil
}

// lastTerminalInput returns the latest access time of the terminals the
// current user owns (/dev/pts/N, /dev/ttyN): the kernel updates it on input,
// which is how w(1) computes IDLE.
func lastTerminalInput() (time.Time, bool) {
	uid := uint32(os.Getuid())
	var last time.Time
	found := false
	for _, pattern := range []string{"/dev/pts/[0-9]*", "/dev/tty[0-9]*"} {
		names, _ := filepath.Glob(pattern)
		for _, n := range names {
			fi, err := os.Stat(n)
			if err != nil {
				continue
			}
			st, ok := fi.Sys().(*syscall.Stat_t)
			if !ok || st.Uid != uid {
				continue
			}
			at := time.Unix(st.Atim.Sec, st.Atim.Nsec)
			if !found || at.After(last) {
				last, found = at, true
			}
		}
	}
	return last, found
}
