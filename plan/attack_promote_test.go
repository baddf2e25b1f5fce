package plan

// Attack cases of issue 12 for what a plan may promote: a setuid copy of a
// shell, file capabilities, and what a command could leave in the layer
// for promotion. docs/sandbox-promotion.md says what stops each.

import (
	"errors"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/act-project/act/internal/cgrouptest"
)

func init() {
	attackCases = append(attackCases,
		attackCase{
			// no_new_privs and nosuid hold in the sandbox only: a setuid
			// copy of a shell, promoted by a LOW action as root, would be
			// setuid root on the host.
			name:   "setuid-shell",
			script: `cp /bin/sh "$S/sh" && chmod 4755 "$S/sh"`,
			create: []string{"sh"},
			want:   RuleSpecialMode, msg: "setuid",
		},
		attackCase{
			name:   "setgid-file",
			script: `echo x > "$S/g" && chmod 2755 "$S/g"`,
			create: []string{"g"},
			want:   RuleSpecialMode, msg: "setgid",
		},
		attackCase{
			// A file capability in the sandbox (as its root) is a
			// security.* xattr copy-out does not carry: the layer, and so
			// what apply promotes, has none.
			name:    "file-capability",
			script:  `cp /bin/true "$S/t" && { setcap cap_net_raw+ep "$S/t" 2>/dev/null || true; }`,
			create:  []string{"t"},
			want:    "planned",
			changes: []string{"create t"},
			check:   noCapability("t"),
		},
	)
}

// noCapability checks that the plan's layer copy of rel carries no
// security.capability xattr.
func noCapability(rel string) func(t *testing.T, w *attackWorld, p *Plan) {
	return func(t *testing.T, w *attackWorld, p *Plan) {
		if p == nil {
			return
		}
		name := UpperDir(w.stateDir, p.ID) + filepath.Join(w.s, rel)
		buf := make([]byte, 64)
		_, err := unix.Lgetxattr(name, "security.capability", buf)
		if !errors.Is(err, unix.ENODATA) {
			t.Errorf("the layer's %s has a security.capability xattr (or the check failed): %v", rel, err)
		}
	}
}

func init() {
	attackCases = append(attackCases,
		attackCase{
			// The state dir holds backups of deleted files, other plans'
			// layers and the audit key: the command sees an empty
			// directory there.
			name:   "state-dir-read",
			script: `ls -A "$STATE"; cat "$STATE"/plans/*/plan.json 2>/dev/null; true`,
			want:   "planned",
			check:  commandPrinted(""),
		},
		attackCase{
			// A credential store of the user's home, by $HOME or not.
			name:   "credential-read",
			script: `cat "$H/.ssh/id_key"`,
			// Hidden; as root, closed to the sandbox's own identity
			// too (root's 0700 .ssh is not even there to hide).
			want: "op.command-failed", msg: "No such file or directory|Permission denied",
		},
		attackCase{
			// Read-only does not stop writes to a device: a device node
			// anywhere on the host tree must not open (nodev).
			name:   "device-node-outside-dev",
			script: `echo x > "$OUT/null" && echo wrote`,
			want:   "op.command-failed", msg: "Permission denied",
			setup: mknodOutside,
		},
	)
}

// commandPrinted checks that the plan's command printed exactly want.
func commandPrinted(want string) func(t *testing.T, w *attackWorld, p *Plan) {
	return func(t *testing.T, w *attackWorld, p *Plan) {
		if p == nil || len(p.Commands) == 0 {
			t.Fatal("no command ran")
		}
		if got := p.Commands[0].Stdout; got != want {
			t.Errorf("the command printed %q, want %q", got, want)
		}
	}
}

// mknodOutside makes a character device node like /dev/null in the outside
// directory; only root can, so it skips otherwise.
func mknodOutside(t *testing.T, w *attackWorld) map[string]string {
	if err := unix.Mknod(filepath.Join(w.out, "null"), unix.S_IFCHR|0o666, int(unix.Mkdev(1, 3))); err != nil {
		t.Skipf("cannot make a device node here (%v): only root can, and then nodev must stop its use", err)
	}
	return nil
}

func init() {
	attackCases = append(attackCases,
		attackCase{
			// The disk cap counts inodes too: 30,000 empty files (no bytes)
			// would cost the host as many inodes and directory entries.
			name:   "many-empty-files",
			script: `i=0; while [ $i -lt 30000 ]; do : > "f$i" || exit 1; i=$((i+1)); done`,
			res:    "{max_cpu_ms: 20000, max_memory_mb: 256, max_disk_mb: 1, max_duration_ms: 120000}",
			want:   "op.cap-exceeded", msg: "disk cap of 1 MiB hit",
			create: []string{"f*"},
			check:  layerSmall(2048),
		},
	)
}

// layerSmall checks that no plan's layer was left with more than n entries.
func layerSmall(n int) func(t *testing.T, w *attackWorld, p *Plan) {
	return func(t *testing.T, w *attackWorld, p *Plan) {
		count := 0
		filepath.WalkDir(filepath.Join(w.stateDir, "plans"), func(string, fs.DirEntry, error) error {
			count++
			return nil
		})
		if count > n {
			t.Errorf("the state dir holds %d entries after the run, more than %d", count, n)
		}
	}
}

func init() {
	attackCases = append(attackCases,
		attackCase{
			// A FIFO is opened for writing whatever the read-only mount
			// says: a host FIFO outside the scope, with a reader waiting,
			// must get nothing (Landlock: writes only beneath the scopes,
			// /tmp, /dev and /proc).
			name:   "host-fifo",
			script: `echo pwned > "$OUT/fifo"`,
			want:   "op.command-failed", msg: "Permission denied",
			setup: hostFIFO,
			check: fifoGotNothing,
		},
	)
}

// hostFIFO makes a FIFO in the outside directory and holds it open for
// reading (without blocking), as a host process waiting for input would.
func hostFIFO(t *testing.T, w *attackWorld) map[string]string {
	p := filepath.Join(w.out, "fifo")
	if err := unix.Mkfifo(p, 0o666); err != nil {
		t.Fatal(err)
	}
	fd, err := unix.Open(p, unix.O_RDONLY|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	fifoReaders[w.out] = fd
	t.Cleanup(func() { unix.Close(fd) })
	return nil
}

var fifoReaders = map[string]int{}

func fifoGotNothing(t *testing.T, w *attackWorld, _ *Plan) {
	buf := make([]byte, 64)
	n, err := unix.Read(fifoReaders[w.out], buf)
	if n > 0 {
		t.Errorf("the host FIFO's reader got %q from the command", buf[:n])
	} else if err != nil && !errors.Is(err, unix.EAGAIN) {
		t.Errorf("read the FIFO: %v", err)
	}
}

func init() {
	attackCases = append(attackCases,
		attackCase{
			// Ten processes under a 128 MiB cap: the memory cgroup bounds
			// them together (as root; the ordinary user runs in a
			// delegated one, without which the command is refused:
			// TestMemoryCapRefusedWithoutCgroup).
			name:   "memory-many-processes",
			script: `for i in 1 2 3 4 5 6 7 8 9 10; do sleep 0.2 & done; wait`,
			static: []string{"forbidden.background-execution"},
			res:    "{max_cpu_ms: 5000, max_memory_mb: 128, max_disk_mb: 8, max_duration_ms: 60000}",
			want:   "planned",
			check:  memoryMechanismSaid,
		},
		attackCase{
			// Issue 12 item 9's attack: ten processes of up to 100 MiB
			// each, a memfd filled with write() (never mapped, so no
			// RLIMIT_AS counts it) and a SysV segment filled and
			// detached, under a 128 MiB cap. It held ~1.2 GiB as an
			// ordinary user under RLIMIT_AS. The cgroup's OOM killer
			// stops it.
			name:   "memory-memfd-many-processes",
			script: `exec python3 -c "$ATTACK"`,
			setup:  memoryAttackEnv,
			res:    "{max_cpu_ms: 20000, max_memory_mb: 128, max_disk_mb: 8, max_duration_ms: 120000}",
			needs:  "python3",
			want:   "op.cap-exceeded", msg: `memory cap of 128 MiB hit \(cgroup`,
		},
	)
}

// memoryAttackEnv gives the command the memory attack's program as ATTACK.
func memoryAttackEnv(*testing.T, *attackWorld) map[string]string {
	return map[string]string{"ATTACK": cgrouptest.MemoryAttack}
}

// memoryMechanismSaid checks that the plan names a cgroup as the memory
// cap's mechanism.
func memoryMechanismSaid(t *testing.T, w *attackWorld, p *Plan) {
	if p == nil || len(p.Commands) == 0 {
		t.Fatal("no command ran")
	}
	if mech := p.Commands[0].Caps["memory"]; !strings.HasPrefix(mech, "cgroup v") {
		t.Errorf("the plan says the memory cap was held by %q, not a memory cgroup", mech)
	}
}
