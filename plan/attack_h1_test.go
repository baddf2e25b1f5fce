package plan

// Attack cases of issue 12 for the command process (items 1, 4, 5 and 12):
// descriptors act inherited, the ways around the AF_UNIX rule (io_uring,
// a datagram socket pair), the session keyring, and socket families
// outside the allow-list. docs/sandbox-process.md says what stops each.

import (
	"errors"
	"fmt"
	"net"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

func init() {
	attackCases = append(attackCases,
		attackCase{
			// `act plan d.yaml 7</some/dir`: a directory descriptor act
			// inherited, not close-on-exec, reaches the outside tree past
			// the read-only mounts (it names the host's mount).
			name:   "fd-inherited-dir",
			script: `echo pwned > "/proc/self/fd/$FD/new" || echo pwned >> "/proc/self/fd/$FD/notes"`,
			want:   "op.command-failed", msg: "Directory nonexistent|No such file or directory",
			setup: holdInheritedDir,
		},
		attackCase{
			// The same with a pipe act inherited (a terminal is the same
			// kind of descriptor): nothing may reach its reader.
			name:   "fd-inherited-pipe",
			script: `echo pwned > "/proc/self/fd/$FD"`,
			want:   "op.command-failed", msg: "Directory nonexistent|No such file or directory",
			setup: holdInheritedPipe,
			check: nothingInPipe,
		},
		attackCase{
			// io_uring makes sockets and connects them without the
			// socket syscall (IORING_OP_SOCKET, IORING_OP_CONNECT): the
			// filter refuses io_uring itself. (The whole connect to a
			// host socket is TestIoUringSocketBypass in sandbox/isolate.)
			name: "io-uring",
			script: `python3 -c '
import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
params = ctypes.create_string_buffer(120)
for nr, name in ((425, "io_uring_setup"), (426, "io_uring_enter"), (427, "io_uring_register")):
    args = (4, params) if nr == 425 else (-1, 0, 0, 0, 0, 0)
    if libc.syscall(nr, *args) >= 0 or ctypes.get_errno() != 38:
        print(name, "is there: errno", ctypes.get_errno(), file=sys.stderr); sys.exit(0)
sys.exit("io_uring refused: ENOSYS")'`,
			want: "op.command-failed", msg: "io_uring refused: ENOSYS",
			needs: "python3",
		},
		attackCase{
			// The whole io_uring attack: IORING_OP_SOCKET makes an AF_UNIX
			// socket, IORING_OP_CONNECT connects it to a host socket
			// outside the scope, and a write reaches its listener.
			name:   "io-uring-connect",
			script: `"$PROBE" uring-connect "$SOCK" hello >&2`,
			want:   "op.command-failed", msg: "ENOSYS",
			needs: "cc",
			setup: func(t *testing.T, w *attackWorld) map[string]string {
				env := holdUnixFile(t, w)
				env["PROBE"] = buildSysprobe(t, w)
				return env
			},
			check: noUnixFileConnectionStrict,
		},
		attackCase{
			// socket(AF_UNIX) is refused, but a datagram pair could
			// sendto(2) any path: a host daemon's datagram socket.
			name: "unix-dgram-pair-sendto",
			script: `python3 -c '
import os, socket
a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)
a.sendto(b"hello", os.environ["DSOCK"])'`,
			want: "op.command-failed", msg: "PermissionError: \\[Errno 13\\]",
			needs: "python3",
			setup: holdUnixgram,
			check: nothingReceived,
		},
		attackCase{
			// A stream pair stays allowed (node and Python use one for a
			// child's stdio); it is connected, so it cannot address a
			// path either.
			name: "unix-stream-pair-sendto",
			script: `python3 -c '
import os, socket
a, b = socket.socketpair()
a.sendto(b"hello", os.environ["DSOCK"])'`,
			want: "op.command-failed", msg: "OSError: \\[Errno 106\\]",
			needs: "python3",
			setup: holdUnixgram,
			check: nothingReceived,
		},
		attackCase{
			// Keys are not namespaced: the caller's session keyring (and
			// every key its uid may see) would be readable and writable.
			name: "session-keyring",
			script: `python3 -c '
import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
key, ring = int(os.environ["KEYID"]), int(os.environ["RING"])
buf = ctypes.create_string_buffer(256)
got = []
if libc.syscall(250, 11, key, buf, 256) >= 0: got.append("read " + buf.value.decode())
if libc.syscall(250, 2, key, b"overwritten", 11) >= 0: got.append("updated")
if libc.syscall(248, b"user", b"planted", b"x", 1, ring) >= 0: got.append("planted")
if libc.syscall(248, b"user", b"planted", b"x", 1, -3) >= 0: got.append("planted in @s")
if got: print("keyring reached:", got, file=sys.stderr); sys.exit(0)
sys.exit("keys refused: errno %d" % ctypes.get_errno())'`,
			want: "op.command-failed", msg: "keys refused: errno 1$",
			needs: "python3",
			setup: holdSessionKey,
			check: sessionKeyUnchanged,
		},
		attackCase{
			// socket() is an allow-list: AF_VSOCK (the hypervisor's and
			// other guests' port space), AF_PACKET, AF_ALG, AF_XDP … and
			// netlink protocols but NETLINK_ROUTE are refused.
			name: "socket-families",
			script: `python3 -c '
import socket, sys
tries = [(40, socket.SOCK_STREAM, 0, "AF_VSOCK"), (17, socket.SOCK_RAW, 0, "AF_PACKET"), (38, socket.SOCK_SEQPACKET, 0, "AF_ALG"),
         (44, socket.SOCK_RAW, 0, "AF_XDP"), (30, socket.SOCK_RDM, 0, "AF_TIPC"), (15, socket.SOCK_RAW, 2, "AF_KEY"),
         (29, socket.SOCK_RAW, 1, "AF_CAN"), (21, socket.SOCK_SEQPACKET, 0, "AF_RDS"), (16, socket.SOCK_RAW, 15, "NETLINK_KOBJECT_UEVENT"),
         (16, socket.SOCK_RAW, 4, "NETLINK_SOCK_DIAG"), (16, socket.SOCK_RAW, 9, "NETLINK_AUDIT")]
errs = []
for fam, typ, proto, name in tries:
    try:
        socket.socket(fam, typ, proto)
    except OSError as e:
        errs.append("%s %d" % (name, e.errno)); continue
    print(name, "opened", file=sys.stderr); sys.exit(0)
sys.exit("no family opened: " + ", ".join(errs))'`,
			want: "op.command-failed", msg: "no family opened: AF_VSOCK 97, AF_PACKET 97, AF_ALG 97, AF_XDP 97, AF_TIPC 97, AF_KEY 97, AF_CAN 97, AF_RDS 97, NETLINK_KOBJECT_UEVENT 93, NETLINK_SOCK_DIAG 93, NETLINK_AUDIT 93$",
			needs: "python3",
		},
		attackCase{
			// The 32-bit entry points have their own numbers (and i386
			// multiplexes sockets through socketcall): a syscall of
			// another ABI kills the process.
			name: "foreign-abi",
			script: `python3 -c '
import ctypes, sys
libc = ctypes.CDLL(None, use_errno=True)
r = libc.syscall(0x40000000 | 41, 1, 1, 0)
sys.exit("x32 socket(AF_UNIX) returned %d, errno %d" % (r, ctypes.get_errno()))'`,
			want: "op.command-failed", msg: "Bad system call",
			needs: "python3",
		},
	)
}

// holdInheritedDir opens the outside directory in this process, not
// close-on-exec, as if act's parent had passed it; FD names it.
func holdInheritedDir(t *testing.T, w *attackWorld) map[string]string {
	fd, err := syscall.Open(w.out, syscall.O_RDONLY|syscall.O_DIRECTORY, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Close(fd) })
	return map[string]string{"FD": strconv.Itoa(fd)}
}

// holdInheritedPipe makes a pipe whose write end is not close-on-exec; FD
// names it.
func holdInheritedPipe(t *testing.T, w *attackWorld) map[string]string {
	var p [2]int
	if err := syscall.Pipe(p[:]); err != nil {
		t.Fatal(err)
	}
	syscall.CloseOnExec(p[0])
	t.Cleanup(func() {
		syscall.Close(p[0])
		syscall.Close(p[1])
	})
	attackListeners.Store(w.tag, p[0])
	return map[string]string{"FD": strconv.Itoa(p[1])}
}

func nothingInPipe(t *testing.T, w *attackWorld, _ *Plan) {
	v, _ := attackListeners.Load(w.tag)
	fd := v.(int)
	mustDo(t, syscall.SetNonblock(fd, true))
	if n, _ := syscall.Read(fd, make([]byte, 64)); n > 0 {
		t.Errorf("the command wrote %d bytes into a pipe act inherited", n)
	}
}

// holdUnixgram binds a datagram socket in the outside directory; DSOCK
// names it.
func holdUnixgram(t *testing.T, w *attackWorld) map[string]string {
	p := filepath.Join(w.out, "dsock")
	c, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: p, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	attackListeners.Store(w.tag, c)
	return map[string]string{"DSOCK": p}
}

func nothingReceived(t *testing.T, w *attackWorld, _ *Plan) {
	v, _ := attackListeners.Load(w.tag)
	c := v.(*net.UnixConn)
	mustDo(t, c.SetReadDeadline(time.Now().Add(50*time.Millisecond)))
	if n, _, err := c.ReadFrom(make([]byte, 64)); err == nil {
		t.Errorf("the sandbox sent %d bytes to the datagram socket %s the test holds", n, filepath.Join(w.out, "dsock"))
	}
}

// The caller's key of a session-keyring case.
type heldKey struct {
	id, ring int
	keys     []int
}

// holdSessionKey puts a key in a session keyring of this test's own, as a
// caller's would be; KEYID and RING name the key and the keyring. Keyrings
// are per thread: the case's goroutine keeps its thread (which ends with
// it), and Build starts the sandbox from there.
func holdSessionKey(t *testing.T, w *attackWorld) map[string]string {
	runtime.LockOSThread()
	ring, err := unix.KeyctlJoinSessionKeyring("act-attack")
	if errors.Is(err, unix.ENOSYS) {
		t.Skip("no keys in this kernel")
	}
	mustDo(t, err)
	id, err := unix.AddKey("user", "act-attack-secret", []byte("the caller's secret"), ring)
	mustDo(t, err)
	attackListeners.Store(w.tag, heldKey{id: id, ring: ring, keys: keyringKeys(t, ring)})
	return map[string]string{"KEYID": strconv.Itoa(id), "RING": strconv.Itoa(ring)}
}

// keyringKeys lists the ids of the keys linked in ring.
func keyringKeys(t *testing.T, ring int) []int {
	buf := make([]byte, 4096)
	n, err := unix.KeyctlBuffer(unix.KEYCTL_READ, ring, buf, 0)
	mustDo(t, err)
	var ids []int
	for i := 0; i+4 <= min(n, len(buf)); i += 4 {
		ids = append(ids, int(int32(uint32(buf[i])|uint32(buf[i+1])<<8|uint32(buf[i+2])<<16|uint32(buf[i+3])<<24)))
	}
	sort.Ints(ids)
	return ids
}

func sessionKeyUnchanged(t *testing.T, w *attackWorld, _ *Plan) {
	v, _ := attackListeners.Load(w.tag)
	k := v.(heldKey)
	buf := make([]byte, 64)
	n, err := unix.KeyctlBuffer(unix.KEYCTL_READ, k.id, buf, 0)
	if err != nil || string(buf[:n]) != "the caller's secret" {
		t.Errorf("the caller's key now reads %q (%v)", buf[:max(n, 0)], err)
	}
	if got := keyringKeys(t, k.ring); fmt.Sprint(got) != fmt.Sprint(k.keys) {
		t.Errorf("the caller's session keyring held %v, now %v", k.keys, got)
	}
}

// buildSysprobe compiles sandbox/isolate/testdata/sysprobe.c into the
// case's tree (before its snapshot) and returns the binary's path.
func buildSysprobe(t *testing.T, w *attackWorld) string {
	_, self, _, ok := runtime.Caller(0)
	if !ok {
		t.Fatal("no source path")
	}
	src := filepath.Join(filepath.Dir(self), "..", "sandbox", "isolate", "testdata", "sysprobe.c")
	// In the scope: outside it and the system trees a file does not open
	// for reading, nor so for exec (SystemReads).
	bin := filepath.Join(w.s, "sysprobe")
	if out, err := exec.Command("cc", "-O1", "-o", bin, src).CombinedOutput(); err != nil {
		t.Fatalf("cc %s: %v\n%s", src, err, out)
	}
	return bin
}

// noUnixFileConnectionStrict fails the case if the sandbox reached the
// Unix socket holdUnixFile listens on.
func noUnixFileConnectionStrict(t *testing.T, w *attackWorld, _ *Plan) {
	v, _ := attackListeners.Load(w.tag)
	l := v.(*net.UnixListener)
	mustDo(t, l.SetDeadline(time.Now().Add(50*time.Millisecond)))
	if c, err := l.Accept(); err == nil {
		c.Close()
		t.Errorf("the sandbox reached the Unix socket %s the test holds", filepath.Join(w.out, "sock"))
	}
}
