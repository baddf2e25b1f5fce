package isolate

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// The tests of what the command process gets: its descriptors, its seccomp
// filter, its keyring, and of the parent's side of the protocol
// (docs/sandbox-process.md).

// childSources reads the sandbox child's C files (nsexec.h and every .c
// file of the package, which cgo compiles into it), all together.
func childSources(t *testing.T) []byte {
	t.Helper()
	files, err := filepath.Glob("*.[ch]")
	if err != nil || len(files) < 2 {
		t.Fatalf("the sandbox child's C files: %v %v", files, err)
	}
	var all []byte
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		all = append(append(all, b...), '\n')
	}
	return all
}

// TestProtocolAgrees: the message letters the sandbox child writes (the
// MSG_ defines of nsexec.h) are the ones run_linux.go reads (its msg
// constants).
func TestProtocolAgrees(t *testing.T) {
	h, err := os.ReadFile("nsexec.h")
	if err != nil {
		t.Fatal(err)
	}
	src := childSources(t)
	c := map[string]byte{}
	for _, m := range regexp.MustCompile(`(?m)^#define MSG_([A-Z_]+) '(.)'`).FindAllStringSubmatch(string(h), -1) {
		c[m[1]] = m[2][0]
	}
	if n := len(regexp.MustCompile(`(?m)^#define MSG_`).FindAll(src, -1)); n != len(c) {
		t.Errorf("the C files define %d MSG_ letters, nsexec.h %d: each is defined once, in nsexec.h", n, len(c))
	}
	goSide := map[string]byte{
		"PID": msgPID, "UNAVAILABLE": msgUnavailable, "SETUP": msgSetup,
		"COPY": msgCopy, "DISK": msgDisk, "STATUS": msgStatus, "USAGE": msgUsage,
		"WROTE_PATH": msgWrotePath, "WROTE": msgWrote, "LISTENER": msgListener, "TIMES": msgTimes,
		"HOME_PATH": msgHomePath, "HOME": msgHome, "UPPER": msgUpper,
	}
	if len(c) != len(goSide) {
		t.Errorf("nsexec.h defines %d messages %v, run_linux.go %d", len(c), c, len(goSide))
	}
	seen := map[byte]string{}
	for name, letter := range goSide {
		if c[name] != letter {
			t.Errorf("MSG_%s: nsexec.h says %q, run_linux.go %q", name, c[name], letter)
		}
		if other, dup := seen[letter]; dup {
			t.Errorf("MSG_%s and MSG_%s share the letter %q", name, other, letter)
		}
		seen[letter] = name
	}
	// Every message C writes uses a name, not a bare letter.
	for _, re := range []string{`fail_kind = '`, `snprintf\([^)]*"[PUECDS]%`} {
		if regexp.MustCompile(re).Match(src) {
			t.Errorf("the sandbox child writes a message letter without its MSG_ name (%s)", re)
		}
	}
}

// TestSpecKeysAgree: every key the parent writes into each part of the
// spec (encode, rlimits.add, sendMounts' "cgroups") is one
// nsexec_spec.c's act_read_spec reads in that part, and the other way
// round.
func TestSpecKeysAgree(t *testing.T) {
	src, err := os.ReadFile("nsexec_spec.c")
	if err != nil {
		t.Fatal(err)
	}
	cKeys := func(list string) map[string]bool {
		m := regexp.MustCompile(`static const char \*const ` + list + `\[\] = \{([^}]*)\}`).FindSubmatch(src)
		if m == nil {
			t.Fatalf("nsexec_spec.c has no %s", list)
		}
		keys := map[string]bool{}
		for _, k := range regexp.MustCompile(`"([a-z_]+)"`).FindAllSubmatch(m[1], -1) {
			keys[string(k[1])] = true
		}
		return keys
	}
	read := func(b []byte) map[string]bool {
		keys := map[string]bool{}
		parts := strings.Split(strings.TrimSuffix(string(b), "\x00"), "\x00")
		for i := 0; i+1 < len(parts); i += 2 {
			keys[parts[i]] = true
		}
		return keys
	}
	spec := Spec{Argv: []string{"a"}, Env: []string{"K=v"}, Workdir: "/w", AllowNetwork: true, Loopback: true,
		Scopes: []Scope{{Path: "/s", Upper: "/u", Work: "/k"}}, Hide: []string{"/h"}, Discard: true, Limits: Limits{DiskMB: 1},
		Mask: []string{"/home"}, Binds: []string{"/home/a/.gitconfig"}, Reads: []string{"/usr"},
		Home: "/home/a", Caches: []Cache{{Path: "/home/a/.cache/go-build", Dir: "/c", Own: "/o", Out: "/p"}}, Files: []File{{Path: "/home/a/.npmrc", Data: []byte("x")}}}
	p, err := encode(spec, true)
	if err != nil {
		t.Fatal(err)
	}
	p = rlimits{cpuS: 1, nproc: 1, as: 1}.add(p, 1)
	p.command = put(p.command, "timings", "1") // run's, where ctx carries a recorder (marks.go)
	p.command = put(p.command, "uppers", "1")  // run's, for Spec.Uppers
	mount := read(p.mount)
	pp, err := encode(Spec{Argv: []string{"a"}, Proxy: func(context.Context, net.Listener) {}}, false)
	if err != nil {
		t.Fatal(err)
	}
	for k := range read(pp.mount) {
		mount[k] = true
	}
	mount["cgroups"] = true  // sendMounts' head
	mount["mountfds"] = true // sendRights' heads
	mount["fds"] = true
	for _, c := range []struct {
		name   string
		goSide map[string]bool
		list   string
	}{{"mount", mount, "mount_keys"}, {"command's", read(p.command), "command_keys"}} {
		c2 := cKeys(c.list)
		for k := range c.goSide {
			if !c2[k] {
				t.Errorf("the parent writes the spec key %q in the %s part, which nsexec_spec.c does not read there", k, c.name)
			}
		}
		for k := range c2 {
			if !c.goSide[k] {
				t.Errorf("nsexec_spec.c reads the spec key %q in the %s part, which the parent never writes there", k, c.name)
			}
		}
	}
	if got := read([]byte(endMounts)); !got["mounts"] || len(got) != 1 {
		t.Errorf("endMounts %q is not the one record \"mounts\"", endMounts)
	}
}

// TestArchSupported: commands run only where nsexec_seccomp.c has a
// seccomp filter.
func TestArchSupported(t *testing.T) {
	for arch, ok := range map[string]bool{"amd64": true, "arm64": true, "riscv64": false, "386": false, "arm": false} {
		err := archSupported(arch)
		if (err == nil) != ok || (err != nil && !errors.Is(err, ErrUnavailable)) {
			t.Errorf("archSupported(%s) = %v", arch, err)
		}
	}
	if err := archSupported(runtime.GOARCH); err != nil && Available() == nil {
		t.Errorf("Available() on %s, which has no filter", runtime.GOARCH)
	}
}

// TestFilterBuildsForArm64: the sandbox child's C files, its seccomp
// filter included, compile for aarch64 where the cross compiler is
// installed (Debian's gcc-aarch64-linux-gnu); the filter's range
// assumptions are checked by its _Static_asserts.
func TestFilterBuildsForArm64(t *testing.T) {
	cc, err := exec.LookPath("aarch64-linux-gnu-gcc")
	if err != nil {
		t.Skip("no aarch64-linux-gnu-gcc: the aarch64 filter is not compiled here")
	}
	files, err := filepath.Glob("*.c")
	if err != nil || len(files) == 0 {
		t.Fatalf("the sandbox child's C files: %v %v", files, err)
	}
	out, err := exec.Command(cc, append([]string{"-Wall", "-Werror", "-fsyntax-only"}, files...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("%v for aarch64: %v\n%s", files, err, out)
	}
	out, err = exec.Command(cc, "-E", "-dM", "nsexec_seccomp.c").Output()
	if err != nil || !strings.Contains(string(out), "#define FILTER_ARCH AUDIT_ARCH_AARCH64") {
		t.Errorf("nsexec_seccomp.c for aarch64 has no aarch64 filter (%v)", err)
	}
}

// TestNsexecUnit builds and runs testdata/nsexec_unit.c, which includes
// the sandbox child's C files: the fallbacks of close_inherited (nsexec.c)
// and cloexec_all (nsexec_init.c) on a kernel without close_range(2) (made
// to fail there), and fail_line's cutting.
func TestNsexecUnit(t *testing.T) {
	cc, err := exec.LookPath("cc")
	if err != nil {
		t.Skip("no C compiler (cc)")
	}
	bin := filepath.Join(t.TempDir(), "nsexec_unit")
	if out, err := exec.Command(cc, "-Wall", "-o", bin, "testdata/nsexec_unit.c").CombinedOutput(); err != nil {
		t.Fatalf("cc nsexec_unit.c: %v\n%s", err, out)
	}
	out, err := exec.Command(bin).CombinedOutput()
	if err != nil || string(out) != "ok\n" {
		t.Fatalf("nsexec_unit: %v\n%s", err, out)
	}
}

// TestFailMessageWhole: a setup error longer than fail's buffer is cut,
// keeps its errno text, and has no NUL or newline inside.
func TestFailMessageWhole(t *testing.T) {
	requireIsolation(t)
	long := "/no-such-" + strings.Repeat("x", 5000)
	for _, c := range []struct{ argv0, want string }{
		{long, "File name too long"},
		{"/no/such\ncommand\nS0", "No such file or directory"},
	} {
		_, err := Run(context.Background(), Spec{Argv: []string{c.argv0}, Env: pathEnv, Limits: Limits{WallMs: 10_000}})
		var se *SetupError
		if !errors.As(err, &se) {
			t.Fatalf("Run(%.20q) = %v, want a SetupError", c.argv0, err)
		}
		if strings.ContainsAny(se.Msg, "\x00\n") || !strings.HasPrefix(se.Msg, "exec /no") || !strings.HasSuffix(se.Msg, ": "+c.want) {
			t.Errorf("message %q (%d bytes): want one line, no NUL, ending in %q", tail([]byte(se.Msg), 80), len(se.Msg), c.want)
		}
	}
}

// TestInheritedDescriptorsClosed: descriptors act inherited (a directory
// outside every scope, a pipe) do not reach the command, which has exactly
// 0, 1 and 2, with /dev/null as standard input.
func TestInheritedDescriptorsClosed(t *testing.T) {
	requireIsolation(t)
	outside := t.TempDir()
	// Not close-on-exec, as a descriptor act's own parent passed it.
	dirFD, err := syscall.Open(outside, syscall.O_RDONLY|syscall.O_DIRECTORY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Close(dirFD)
	var p [2]int
	if err := syscall.Pipe(p[:]); err != nil {
		t.Fatal(err)
	}
	defer syscall.Close(p[0])
	defer syscall.Close(p[1])
	script := fmt.Sprintf(`ls /proc/self/fd | sort -n | tr '\n' ' '; readlink /proc/self/fd/0
echo pwned > /proc/self/fd/%d/pwned && echo WROTE-DIR
echo pwned > /proc/self/fd/%d && echo WROTE-PIPE
true`, dirFD, p[1])
	res := sh(t, script, nil, Limits{})
	mustExit(t, res, 0)
	// ls's own directory descriptor is 3.
	if first := strings.SplitN(string(res.Stdout), "\n", 2)[0]; first != "0 1 2 3 /dev/null" {
		t.Errorf("the command's descriptors and stdin: %q", first)
	}
	if strings.Contains(string(res.Stdout), "WROTE") {
		t.Errorf("the command wrote through an inherited descriptor: %s", res.Stdout)
	}
	if ents, _ := os.ReadDir(outside); len(ents) != 0 {
		t.Errorf("the outside directory holds %v", ents)
	}
	syscall.SetNonblock(p[0], true)
	if n, _ := syscall.Read(p[0], make([]byte, 16)); n > 0 {
		t.Errorf("the command wrote %d bytes to the inherited pipe", n)
	}
}

// sysprobe builds testdata/sysprobe.c into dir (which the sandbox must
// show) and returns its path; it skips t without a C compiler.
func sysprobe(t *testing.T, dir string) string {
	t.Helper()
	cc, err := exec.LookPath("cc")
	if err != nil {
		t.Skip("no C compiler (cc) for the syscall probe")
	}
	src, err := filepath.Abs("testdata/sysprobe.c")
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "sysprobe")
	if out, err := exec.Command(cc, "-O1", "-o", bin, src).CombinedOutput(); err != nil {
		t.Fatalf("cc sysprobe.c: %v\n%s", err, out)
	}
	return bin
}

// probeIn runs the probe with args in the sandbox and returns its first
// line of output, or "killed by SIG…".
func probeIn(t *testing.T, net bool, args ...string) string {
	t.Helper()
	return probeNet(t, netMode{network: net}, args...)
}

// A netMode is how a sandbox is networked: the host's network, or its own
// namespace with or without IPv4/IPv6 sockets on its loopback.
type netMode struct{ network, loopback bool }

func (m netMode) String() string {
	switch {
	case m.network:
		return "network"
	case m.loopback:
		return "loopback"
	}
	return "no network"
}

// probeNet runs the probe in a sandbox networked as m.
func probeNet(t *testing.T, m netMode, args ...string) string {
	t.Helper()
	res, err := Run(context.Background(), Spec{Argv: args, Env: pathEnv, AllowNetwork: m.network, Loopback: m.loopback, Limits: Limits{WallMs: 10_000}})
	if err != nil {
		t.Fatalf("Run(%v): %v", args, err)
	}
	if res.Signal != 0 {
		return "killed by " + unix.SignalName(res.Signal)
	}
	return strings.SplitN(string(res.Stdout), "\n", 2)[0]
}

// hostDir makes a directory the sandbox shows as it is on the host
// (read-only, outside every scope): under /var/tmp, not the private /tmp.
func hostDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("/var/tmp", "act-isolate-test-")
	if err != nil {
		t.Skipf("no directory outside /tmp the sandbox shows: %v", err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// probeOut runs the probe on the host (the control).
func probeOut(args ...string) string {
	out, err := exec.Command(args[0], args[1:]...).Output()
	var ee *exec.ExitError
	if errors.As(err, &ee) && ee.ProcessState.Sys().(syscall.WaitStatus).Signaled() {
		return "killed by " + unix.SignalName(ee.ProcessState.Sys().(syscall.WaitStatus).Signal())
	}
	return strings.SplitN(string(out), "\n", 2)[0]
}

// TestSeccompFilter: the filter's rules, each tried inside the sandbox
// (and, for the record, on the host, where it succeeds when the kernel
// offers it).
func TestSeccompFilter(t *testing.T) {
	requireIsolation(t)
	bin := sysprobe(t, hostDir(t))
	d := func(v int) string { return fmt.Sprint(v) }
	// IPv4 and IPv6 sockets: only with the network, or on the sandbox's
	// own loopback where the policy allows it (sandbox.loopback).
	inet := map[netMode]string{{}: "EACCES", {loopback: true}: "ok", {network: true}: "ok"}
	for _, fam := range []int{unix.AF_INET, unix.AF_INET6} {
		for m, want := range inet {
			for _, typ := range []int{unix.SOCK_STREAM, unix.SOCK_DGRAM} {
				if got := probeNet(t, m, bin, "socket", d(fam), d(typ), "0"); got != want {
					t.Errorf("%s: socket(%d, %d) in the sandbox = %q, want %q", m, fam, typ, got, want)
				}
			}
		}
	}
	cases := []struct {
		args []string
		want string // inside, without and with the network
	}{
		// socket(): an allow-list of families.
		{[]string{"socket", d(unix.AF_NETLINK), d(unix.SOCK_RAW), d(unix.NETLINK_ROUTE)}, "ok"},
		{[]string{"socket", d(unix.AF_NETLINK), d(unix.SOCK_RAW), d(unix.NETLINK_KOBJECT_UEVENT)}, "EPROTONOSUPPORT"},
		{[]string{"socket", d(unix.AF_NETLINK), d(unix.SOCK_RAW), d(unix.NETLINK_SOCK_DIAG)}, "EPROTONOSUPPORT"},
		{[]string{"socket", d(unix.AF_UNIX), d(unix.SOCK_STREAM), "0"}, "EACCES"},
		{[]string{"socket", d(unix.AF_UNIX), d(unix.SOCK_DGRAM | unix.SOCK_CLOEXEC), "0"}, "EACCES"},
		{[]string{"socket", d(unix.AF_VSOCK), d(unix.SOCK_STREAM), "0"}, "EAFNOSUPPORT"},
		{[]string{"socket", d(unix.AF_PACKET), d(unix.SOCK_RAW), "0"}, "EAFNOSUPPORT"},
		{[]string{"socket", d(unix.AF_ALG), d(unix.SOCK_SEQPACKET), "0"}, "EAFNOSUPPORT"},
		{[]string{"socket", d(unix.AF_XDP), d(unix.SOCK_RAW), "0"}, "EAFNOSUPPORT"},
		{[]string{"socket", d(unix.AF_TIPC), d(unix.SOCK_RDM), "0"}, "EAFNOSUPPORT"},
		{[]string{"socket", d(unix.AF_KEY), d(unix.SOCK_RAW), "2"}, "EAFNOSUPPORT"},
		{[]string{"socket", d(unix.AF_BLUETOOTH), d(unix.SOCK_RAW), "0"}, "EAFNOSUPPORT"},
		// socketpair(): AF_UNIX SOCK_STREAM only.
		{[]string{"socketpair", d(unix.AF_UNIX), d(unix.SOCK_STREAM)}, "ok"},
		{[]string{"socketpair", d(unix.AF_UNIX), d(unix.SOCK_STREAM | unix.SOCK_CLOEXEC | unix.SOCK_NONBLOCK)}, "ok"},
		{[]string{"socketpair", d(unix.AF_UNIX), d(unix.SOCK_DGRAM)}, "EACCES"},
		{[]string{"socketpair", d(unix.AF_UNIX), d(unix.SOCK_SEQPACKET)}, "EACCES"},
		{[]string{"socketpair", d(unix.AF_UNIX), d(unix.SOCK_DGRAM | unix.SOCK_CLOEXEC)}, "EACCES"},
		// A connected stream pair cannot address a path.
		{[]string{"pair-sendto", d(unix.SOCK_STREAM), "/nonexistent-act-socket", "x"}, "EISCONN"},
		// io_uring, the keys, the foreign ABIs.
		{[]string{"io_uring_setup"}, "ENOSYS"},
		{[]string{"io_uring_enter"}, "ENOSYS"},
		{[]string{"io_uring_register"}, "ENOSYS"},
		{[]string{"key-session"}, "EPERM"},
		{[]string{"add_key", d(unix.KEY_SPEC_SESSION_KEYRING)}, "EPERM"},
		{[]string{"request_key"}, "EPERM"},
		{[]string{"syscall-minus-one"}, "ENOSYS"},
	}
	if runtime.GOARCH == "amd64" {
		cases = append(cases,
			struct {
				args []string
				want string
			}{[]string{"x32"}, "killed by SIGSYS"},
			struct {
				args []string
				want string
			}{[]string{"i386"}, "killed by SIGSYS"})
	}
	for _, c := range cases {
		args := append([]string{bin}, c.args...)
		name := strings.Join(c.args, " ")
		t.Run(name, func(t *testing.T) {
			want := c.want
			if name == "i386" && probeOut(args...) == "killed by SIGSEGV" {
				// A kernel without IA32 emulation (ia32_emulation=0, or
				// built without it) has no i386 system calls to filter:
				// int 0x80 faults before seccomp sees it.
				t.Skip("this kernel has no i386 system calls (int 0x80 is SIGSEGV on the host)")
			}
			for _, net := range []bool{false, true} {
				if got := probeIn(t, net, args...); got != want {
					t.Errorf("network %v: %s in the sandbox = %q, want %q (on the host: %q)", net, name, got, want, probeOut(args...))
				}
			}
		})
	}
	t.Logf("on the host: vsock %s, io_uring %s, i386 %s", probeOut(bin, "socket", d(unix.AF_VSOCK), d(unix.SOCK_STREAM), "0"),
		probeOut(bin, "io_uring_setup"), probeOut(bin, "i386"))
}

// TestIoUringSocketBypass: the io_uring way around the socket rule
// (IORING_OP_SOCKET, IORING_OP_CONNECT) reaches a host socket from the
// host, and not from the sandbox.
func TestIoUringSocketBypass(t *testing.T) {
	requireIsolation(t)
	dir := hostDir(t)
	bin := sysprobe(t, dir)
	path := filepath.Join(dir, "host.sock")
	l, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	accepted := func() bool {
		l.(*net.UnixListener).SetDeadline(time.Now().Add(100 * time.Millisecond))
		c, err := l.Accept()
		if err == nil {
			c.Close()
		}
		return err == nil
	}
	if got := probeOut(bin, "uring-connect", path, "hello"); got != "ok" || !accepted() {
		t.Logf("on the host the io_uring connect gives %q: no bypass to prove here", got)
	}
	got := probeIn(t, false, bin, "uring-connect", path, "hello")
	if reached := accepted(); got != "ENOSYS" || reached {
		t.Errorf("io_uring from the sandbox: %q (want ENOSYS), the host socket reached: %v", got, reached)
	}
}

// TestDatagramPairSendto: a datagram pair's sendto to a path reaches a
// host datagram socket from the host; in the sandbox the pair is refused.
func TestDatagramPairSendto(t *testing.T) {
	requireIsolation(t)
	dir := hostDir(t)
	bin := sysprobe(t, dir)
	path := filepath.Join(dir, "dgram.sock")
	c, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: path, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	received := func() bool {
		c.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
		n, _, err := c.ReadFrom(make([]byte, 64))
		return err == nil && n > 0
	}
	if got := probeOut(bin, "pair-sendto", fmt.Sprint(unix.SOCK_DGRAM), path, "hello"); got != "ok" || !received() {
		t.Logf("on the host the datagram sendto gives %q", got)
	}
	got := probeIn(t, false, bin, "pair-sendto", fmt.Sprint(unix.SOCK_DGRAM), path, "hello")
	if reached := received(); got != "EACCES" || reached {
		t.Errorf("a datagram pair's sendto from the sandbox: %q (want EACCES), the host socket reached: %v", got, reached)
	}
}

// TestSessionKeyring: the command can neither read nor change a key in
// the caller's session keyring, nor plant one there; the caller's keyring
// is the same after the run.
func TestSessionKeyring(t *testing.T) {
	requireIsolation(t)
	// Keyrings are credentials, which are per thread: this goroutine keeps
	// its thread (which ends with it), joins a session keyring of its own
	// and starts the sandbox from there, as act's one thread would.
	runtime.LockOSThread()
	ring, err := unix.KeyctlJoinSessionKeyring("act-test")
	if errors.Is(err, unix.ENOSYS) {
		t.Skip("no keys in this kernel")
	}
	if err != nil {
		t.Fatal(err)
	}
	id, err := unix.AddKey("user", fmt.Sprintf("act-test-%d", os.Getpid()), []byte("the caller's secret"), unix.KEY_SPEC_SESSION_KEYRING)
	if err != nil {
		t.Fatal(err)
	}
	keys := func() []int {
		buf := make([]byte, 4096)
		n, err := unix.KeyctlBuffer(unix.KEYCTL_READ, ring, buf, 0)
		if err != nil {
			t.Fatal(err)
		}
		var ids []int
		for i := 0; i+4 <= n && i+4 <= len(buf); i += 4 {
			ids = append(ids, int(int32(uint32(buf[i])|uint32(buf[i+1])<<8|uint32(buf[i+2])<<16|uint32(buf[i+3])<<24)))
		}
		sort.Ints(ids)
		return ids
	}
	before := keys()
	bin := sysprobe(t, hostDir(t))
	if got := probeOut(bin, "key-read", fmt.Sprint(id)); got != "read the caller's secret" {
		t.Logf("on the host the key reads %q", got)
	}
	for _, args := range [][]string{
		{"key-read", fmt.Sprint(id)},
		{"key-update", fmt.Sprint(id), "overwritten"},
		{"add_key", fmt.Sprint(ring)},
		{"add_key", fmt.Sprint(unix.KEY_SPEC_SESSION_KEYRING)},
	} {
		if got := probeIn(t, false, append([]string{bin}, args...)...); got != "EPERM" {
			t.Errorf("%v in the sandbox: %q, want EPERM", args, got)
		}
	}
	buf := make([]byte, 64)
	n, err := unix.KeyctlBuffer(unix.KEYCTL_READ, id, buf, 0)
	if err != nil || string(buf[:n]) != "the caller's secret" {
		t.Errorf("the caller's key now reads %q, %v", buf[:max(n, 0)], err)
	}
	if after := keys(); fmt.Sprint(after) != fmt.Sprint(before) {
		t.Errorf("the caller's session keyring held %v, now %v", before, after)
	}
}

// TestCopyOutDepthLimit: with a disk cap the layer is copied out of the
// tmpfs; 2048 nested directories are copied, 2049 are refused with the
// designed error (not a crash of init).
func TestCopyOutDepthLimit(t *testing.T) {
	requireIsolation(t)
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("python3 is not installed")
	}
	for _, c := range []struct {
		depth int
		err   string
	}{{2048, ""}, {2049, "more than 2048 nested directories"}} {
		t.Run(fmt.Sprint(c.depth), func(t *testing.T) {
			s, res, err := runDeep(t, c.depth, false)
			if c.err == "" {
				if err != nil {
					t.Fatal(err)
				}
				mustExit(t, res, 0)
				p := s.Upper + strings.Repeat("/d", c.depth) + "/f"
				// Longer than PATH_MAX: read it through a descriptor walk.
				if got := readDeep(t, p); got != "x\n" {
					t.Errorf("the deepest file reads %q", got)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Fatalf("Run = %v, %v; want an error saying %q", res, err, c.err)
			}
		})
	}
}

// runDeep runs, in a new scope with a disk cap, a command that makes depth
// nested directories and a file "f" in the deepest (discard: the run
// discards its changes).
func runDeep(t *testing.T, depth int, discard bool) (Scope, *Result, error) {
	t.Helper()
	s := newScope(t, t.TempDir(), nil)
	// Python, whose chdir is relative (a shell's cd fails past PATH_MAX).
	script := fmt.Sprintf(`import os
for i in range(%d):
    os.mkdir("d")
    os.chdir("d")
open("f", "w").write("x\n")
`, depth)
	res, err := Run(context.Background(), Spec{Argv: []string{"python3", "-c", script}, Env: pathEnv, Workdir: s.Path,
		Scopes: []Scope{{Path: s.Path, Upper: s.Upper}}, Limits: Limits{WallMs: 60_000, DiskMB: 64}, Discard: discard})
	return s, res, err
}

// readDeep reads the file at path, which may be longer than PATH_MAX.
func readDeep(t *testing.T, path string) string {
	t.Helper()
	parts := strings.Split(strings.TrimPrefix(path, "/"), "/")
	fd, err := unix.Open("/", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	for i, p := range parts {
		flags := unix.O_RDONLY | unix.O_CLOEXEC | unix.O_NOFOLLOW
		if i < len(parts)-1 {
			flags |= unix.O_DIRECTORY
		}
		next, err := unix.Openat(fd, p, flags, 0)
		unix.Close(fd)
		if err != nil {
			t.Fatalf("open %s (component %d): %v", p, i, err)
		}
		fd = next
	}
	f := os.NewFile(uintptr(fd), path)
	defer f.Close()
	b := make([]byte, 64)
	n, _ := f.Read(b)
	return string(b[:n])
}

// TestProcessAsNobody re-runs this file's sandbox tests as uid 65534 (as
// TestAsNobody does the basic ones).
func TestProcessAsNobody(t *testing.T) {
	t.Parallel() // a child process: beside TestAsNobody's
	if os.Getenv("ACT_ISOLATE_TEST_NOBODY") != "" {
		t.Skip("already nobody")
	}
	if os.Getuid() != 0 {
		t.Skip("needs root to switch to uid 65534")
	}
	setpriv, err := exec.LookPath("setpriv")
	if err != nil {
		t.Skip("setpriv not found")
	}
	requireIsolation(t)
	dir, err := os.MkdirTemp("", "act-isolate-nobody-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	os.Chmod(dir, 0o755)
	self, _ := os.Executable()
	bin := filepath.Join(dir, "isolate.test")
	// A hard link where it can be: a copy written here while another
	// test's goroutine forks may still be open for writing in that child
	// when it is run ("text file busy").
	if os.Link(self, bin) != nil {
		data, err := os.ReadFile(self)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(bin, data, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// 0755 whatever the umask: go test wrote the binary, and WriteFile
	// the copy, with the umask's mode (0700 under umask 077), and the
	// sandbox re-executes it as uid 65534.
	if err := os.Chmod(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	// The probe's source, which the tests read from testdata/.
	// Modes set whatever the umask: uid 65534 reads them.
	if err := os.Mkdir(filepath.Join(dir, "testdata"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(filepath.Join(dir, "testdata"), 0o755); err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile("testdata/sysprobe.c")
	if err != nil {
		t.Fatal(err)
	}
	readable := func(name string, data []byte) {
		t.Helper()
		if err := os.WriteFile(name, data, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(name, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	readable(filepath.Join(dir, "testdata", "sysprobe.c"), src)
	// The sandbox child's C files, which TestProtocolAgrees reads.
	cFiles, _ := filepath.Glob("*.[ch]")
	for _, f := range cFiles {
		c, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		readable(filepath.Join(dir, f), c)
	}
	run := "^(TestProtocolAgrees|TestFailMessageWhole|TestInheritedDescriptorsClosed|TestSeccompFilter|TestIoUringSocketBypass|TestDatagramPairSendto|TestSessionKeyring|TestCopyOutDepthLimit|TestDiscard|TestDiscardBounded|TestTimingsMarks)$"
	cmd := exec.Command(setpriv, "--reuid=65534", "--regid=65534", "--clear-groups", bin, "-test.run="+run, "-test.v")
	cmd.Env = []string{"ACT_ISOLATE_TEST_NOBODY=1", "PATH=/usr/bin:/bin", "HOME=/nonexistent", "TMPDIR=/tmp"}
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	t.Logf("as uid 65534:\n%s", out)
	if err != nil {
		t.Fatalf("as uid 65534: %v", err)
	}
	// A kernel with no i386 system calls skips that one case, as root too.
	if bytes.Contains(bytes.ReplaceAll(out, []byte("--- SKIP: TestSeccompFilter/i386"), nil), []byte("--- SKIP")) {
		t.Errorf("tests skipped as uid 65534")
	}
}
