package isolate

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestOwnIdentity: as root, the command runs as the sandbox's own
// identity. Root's files outside the scope — a 0600 file, the shadow
// file, root's home — are closed to it by kernel permission, with no path
// hidden (Spec.Hide is empty); root's 0600 file inside the scope is its
// own, and what it writes there lands in the layer owned by host uid 0,
// as if root had written it. Both with a disk cap (the layer seeded and
// copied out through an idmapped mount) and without (the overlay's upper
// dir itself idmapped).
func TestOwnIdentity(t *testing.T) {
	requireIsolation(t)
	if os.Geteuid() != 0 {
		t.Skip("the sandbox has an identity of its own only when act runs as root")
	}
	for _, disk := range []int64{0, 8} {
		t.Run(fmt.Sprintf("disk=%d", disk), func(t *testing.T) {
			base, err := os.MkdirTemp("/var/tmp", "act-identity-")
			if err != nil {
				t.Skipf("no writable /var/tmp: %v", err)
			}
			t.Cleanup(func() { RemoveWorkDir(base) })
			if err := os.Chmod(base, 0o755); err != nil {
				t.Fatal(err)
			}
			secret := filepath.Join(base, "secret")
			if err := os.WriteFile(secret, []byte("root's secret\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			s := newScope(t, base, map[string]string{"own": "mine\n"})
			if err := os.Chmod(filepath.Join(s.Path, "own"), 0o600); err != nil {
				t.Fatal(err)
			}
			script := fmt.Sprintf(`cat %[1]s; cat /etc/shadow; ls /root; cd %[2]s && cat own && echo more >> own && echo new > made && mkdir d && id -u`, secret, s.Path)
			res := sh(t, script, []Scope{s}, Limits{DiskMB: disk})
			out, errs := string(res.Stdout), string(res.Stderr)
			if strings.Contains(out, "root's secret") || strings.Contains(out, "root:") {
				t.Errorf("the command read root's files:\n%s", out)
			}
			for _, p := range []string{secret + ":", "/etc/shadow:", "'/root':"} {
				if !strings.Contains(errs, p+" Permission denied") {
					t.Errorf("no permission error for %s:\n%s", p, errs)
				}
			}
			if out != "mine\n0\n" {
				t.Errorf("stdout %q, want root's scope file and uid 0 inside", out)
			}
			mustExit(t, res, 0)
			for _, n := range []string{"own", "made", "d"} {
				fi, err := os.Lstat(filepath.Join(s.Upper, n))
				if err != nil {
					t.Fatal(err)
				}
				if st := fi.Sys().(*syscall.Stat_t); st.Uid != 0 || st.Gid != 0 {
					t.Errorf("layer %s owned by %d:%d on the host, want 0:0", n, st.Uid, st.Gid)
				}
			}
			if got := readFile(t, filepath.Join(s.Upper, "own")); got != "mine\nmore\n" {
				t.Errorf("layer own = %q", got)
			}
		})
	}
}

// TestReadAllowList: with Reads, a file outside the scopes, the binds and
// the named trees cannot be opened for reading — a host FIFO whose mode
// lets anyone read it, holding a writer's bytes, gives the command
// nothing; a masked home shows its binds and nothing else.
func TestReadAllowList(t *testing.T) {
	requireIsolation(t)
	base, err := os.MkdirTemp("/var/tmp", "act-reads-")
	if err != nil {
		t.Skipf("no writable /var/tmp: %v", err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	if err := os.Chmod(base, 0o755); err != nil {
		t.Fatal(err)
	}
	home := filepath.Join(base, "home")
	user := filepath.Join(home, "user")
	if err := os.MkdirAll(user, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string]string{"user/.gitconfig": "[user]\n", "user/notes": "home secret\n", "../plain": "plain secret\n"} {
		if err := os.WriteFile(filepath.Join(home, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	fifo := filepath.Join(base, "fifo")
	if err := syscall.Mkfifo(fifo, 0o666); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(fifo, 0o666); err != nil {
		t.Fatal(err)
	}
	w, err := os.OpenFile(fifo, os.O_RDWR, 0) // never blocks; holds the bytes
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if _, err := w.WriteString("fifo secret\n"); err != nil {
		t.Fatal(err)
	}
	script := fmt.Sprintf(`cat %[1]s/.gitconfig; cat %[1]s/notes; cat %[2]s/plain; timeout 2 cat %[2]s/fifo; head -c5 /etc/passwd`, user, base)
	res, err := Run(context.Background(), Spec{Argv: []string{"/bin/sh", "-c", script}, Env: pathEnv,
		Mask: []string{home}, Binds: []string{filepath.Join(user, ".gitconfig")},
		Reads: []string{"/usr", "/bin", "/lib", "/lib64", "/etc"}, Limits: Limits{WallMs: 20_000}})
	if err != nil {
		t.Fatal(err)
	}
	out, errs := string(res.Stdout), string(res.Stderr)
	if out != "[user]\nroot:" {
		t.Errorf("stdout %q, want the bind and /etc/passwd only", out)
	}
	for _, want := range []string{"notes: No such file", "plain: Permission denied", "fifo: Permission denied"} {
		if !strings.Contains(errs, want) {
			t.Errorf("stderr lacks %q:\n%s", want, errs)
		}
	}
}

// TestProxy: with Spec.Proxy the command's only way out is the listener
// the parent serves; a service on the host's loopback, reachable with the
// host's network namespace, is not reachable from the sandbox's own.
func TestProxy(t *testing.T) {
	requireIsolation(t)
	bash := lookPathEnv(t, "bash")
	host, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer host.Close()
	go func() {
		for {
			c, err := host.Accept()
			if err != nil {
				return
			}
			c.Write([]byte("host service\n"))
			c.Close()
		}
	}()
	served := make(chan string, 4)
	proxy := func(ctx context.Context, ln net.Listener) {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			line, _ := bufio.NewReader(c).ReadString('\n')
			served <- strings.TrimSpace(line)
			c.Write([]byte("HTTP/1.0 200 OK\r\n\r\nfrom the proxy\n"))
			c.Close()
		}
	}
	port := host.Addr().(*net.TCPAddr).Port
	script := fmt.Sprintf(`exec 3<>/dev/tcp/127.0.0.1/%d && printf 'GET http://example.org/ HTTP/1.0\r\n\r\n' >&3 && cat <&3
(exec 4<>/dev/tcp/127.0.0.1/%d && cat <&4) || echo host loopback unreachable`, ProxyPort, port)
	res, err := Run(context.Background(), Spec{Argv: []string{bash, "-c", script}, Env: pathEnv, Proxy: proxy, Limits: Limits{WallMs: 20_000}})
	if err != nil {
		t.Fatal(err)
	}
	out := string(res.Stdout)
	if !strings.Contains(out, "from the proxy") || strings.Contains(out, "host service") || !strings.Contains(out, "host loopback unreachable") {
		t.Errorf("stdout %q; stderr %q", out, res.Stderr)
	}
	select {
	case got := <-served:
		if got != "GET http://example.org/ HTTP/1.0" {
			t.Errorf("the proxy read %q", got)
		}
	default:
		t.Error("the proxy served nothing")
	}
}

// BenchmarkRunProxy: the cost of Spec.Proxy to a run — the sandbox's own
// network namespace with a listener handed to the parent, and the proxy's
// goroutine — against the same run without, interleaved.
func BenchmarkRunProxy(b *testing.B) {
	requireIsolation(b)
	ctx := context.Background()
	plain := Spec{Argv: []string{"/bin/true"}, Limits: Limits{WallMs: 10_000, DiskMB: 100}}
	proxied := plain
	proxied.Proxy = func(ctx context.Context, ln net.Listener) { <-ctx.Done() }
	var tPlain, tProxy time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for _, s := range []struct {
			spec Spec
			t    *time.Duration
		}{{plain, &tPlain}, {proxied, &tProxy}} {
			t0 := time.Now()
			res, err := Run(ctx, s.spec)
			if err != nil || res.ExitCode != 0 {
				b.Fatal(res, err)
			}
			*s.t += time.Since(t0)
		}
	}
	b.ReportMetric(float64(tPlain.Microseconds())/float64(b.N), "run-µs/op")
	b.ReportMetric(float64(tProxy.Microseconds())/float64(b.N), "proxy-µs/op")
	b.ReportMetric(float64(tProxy)/float64(tPlain), "proxy/run")
}

// TestCaches: a cache is the caller's directory, read-write at its path
// below a masked home: what the command writes there lands in the
// directory (owned by the caller: as root, by host uid 0 through the
// idmapped mount), is no part of a scope's layer, and does not count
// against the disk cap (2 MiB written under a cap of 1 MiB).
func TestCaches(t *testing.T) {
	requireIsolation(t)
	base, err := os.MkdirTemp("/var/tmp", "act-caches-")
	if err != nil {
		t.Skipf("no writable /var/tmp: %v", err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	mustChmod(t, base, 0o755)
	home := filepath.Join(base, "home")
	dir := filepath.Join(base, "cache")
	for _, d := range []string{filepath.Join(home, "u"), dir} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "old"), []byte("warm\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	s := newScope(t, base, nil)
	at := filepath.Join(home, "u", ".cache", "go-build")
	script := fmt.Sprintf(`cat %[1]s/old && head -c 2097152 /dev/zero > %[1]s/big && echo new > %[1]s/new && echo in scope > %[2]s/f`, at, s.Path)
	res, err := Run(context.Background(), Spec{Argv: []string{"/bin/sh", "-c", script}, Env: pathEnv, Scopes: []Scope{s},
		Mask: []string{home}, Caches: []Cache{{Path: at, Dir: dir}}, Limits: Limits{WallMs: 20_000, DiskMB: 1}})
	if err != nil {
		t.Fatal(err)
	}
	mustExit(t, res, 0)
	if string(res.Stdout) != "warm\n" {
		t.Errorf("stdout %q, want the warm cache's file", res.Stdout)
	}
	fi, err := os.Stat(filepath.Join(dir, "big"))
	if err != nil || fi.Size() != 2<<20 {
		t.Fatalf("the cache's big file: %v %v", fi, err)
	}
	if st := fi.Sys().(*syscall.Stat_t); st.Uid != uint32(os.Geteuid()) {
		t.Errorf("the cache's file is uid %d's, want %d", st.Uid, os.Geteuid())
	}
	if got := readFile(t, filepath.Join(s.Upper, "f")); got != "in scope\n" {
		t.Errorf("layer f = %q", got)
	}
	if _, err := os.Lstat(filepath.Join(s.Upper, "big")); err == nil {
		t.Error("the cache's file is in the layer")
	}
}

func mustChmod(t *testing.T, p string, m os.FileMode) {
	t.Helper()
	if err := os.Chmod(p, m); err != nil {
		t.Fatal(err)
	}
}
