package cgroupfs

import "testing"

// TestDirs: the process's cgroup directory in the v2 hierarchy (unified
// and hybrid layouts) and in a v1 controller's, and none where the
// hierarchy is not mounted.
func TestDirs(t *testing.T) {
	unified := "30 23 0:26 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:4 - cgroup2 cgroup2 rw,nsdelegate\n"
	hybrid := "35 30 0:30 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw\n" +
		"36 30 0:31 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory\n"
	for _, c := range []struct{ mi, pc, ctl, want string }{
		{unified, "0::/user.slice/user-1000.slice/user@1000.service/app.slice/run-r1.scope\n", "", "/sys/fs/cgroup/user.slice/user-1000.slice/user@1000.service/app.slice/run-r1.scope"},
		{hybrid, "4:memory:/x\n0::/\n", "", "/sys/fs/cgroup/unified"},
		{hybrid, "4:memory:/x\n", "", ""},
		{hybrid, "4:memory:/x\n", "memory", "/sys/fs/cgroup/memory/x"},
		{hybrid, "5:pids:/x\n", "pids", ""},
		{"36 30 0:31 / /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory\n", "0::/a\n", "", ""},
		// A cgroup whose name starts with "..": inside the mount, not above it.
		{unified, "0::/..a/b\n", "", "/sys/fs/cgroup/..a/b"},
		// A cgroup mounted from a root below the hierarchy's: one above that
		// root is not in the mount, one beside it neither.
		{"37 30 0:26 /a /c rw - cgroup2 cgroup2 rw\n", "0::/a/x\n", "", "/c/x"},
		{"37 30 0:26 /a /c rw - cgroup2 cgroup2 rw\n", "0::/b\n", "", ""},
		{"37 30 0:26 /a /c rw - cgroup2 cgroup2 rw\n", "0::/ab\n", "", ""},
	} {
		if got := Dirs(c.pc, c.mi)[c.ctl]; got != c.want {
			t.Errorf("Dirs(%q, %q)[%q] = %q, want %q", c.pc, c.mi, c.ctl, got, c.want)
		}
	}
}
