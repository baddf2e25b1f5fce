package isolate

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"slices"
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

// TestCaches: a cache is an overlay whose lower is the caller's directory
// and whose upper is on the disk cap's tmpfs. The command reads the warm
// cache and writes there; none of it reaches the caller's directory
// (before, act's own cache was mounted read-write and kept every write),
// and what it writes counts against the disk cap. A cache reached through
// a symbolic link is refused, not followed. The home is writable through
// a throwaway directory: what the command made there is named, sorted,
// and gone; what act made for its mounts (the cache's parents) is not
// named.
func TestCaches(t *testing.T) {
	requireIsolation(t)
	base, err := os.MkdirTemp("/var/tmp", "act-caches-")
	if err != nil {
		t.Skipf("no writable /var/tmp: %v", err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	mustChmod(t, base, 0o755)
	homes := filepath.Join(base, "home")
	home := filepath.Join(homes, "u")
	dir := filepath.Join(home, ".cache", "go-build")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "old"), []byte("warm\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(home, ".profile"), []byte("# profile\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	s := newScope(t, base, nil)
	script := fmt.Sprintf(`cat %[1]s/old && echo poisoned > %[1]s/old && echo new > %[1]s/new && cat %[1]s/old &&
echo in scope > %[2]s/f && mkdir -p %[3]s/.node-spawn-wrap-1/sub && echo x > %[3]s/.node-spawn-wrap-1/sub/x && echo y > %[3]s/.bash_history &&
echo z > %[3]s/.cache/other`, dir, s.Path, home)
	res, err := Run(context.Background(), Spec{Argv: []string{"/bin/sh", "-c", script}, Env: pathEnv, Scopes: []Scope{s},
		Mask: []string{homes}, Home: home, Caches: []Cache{{Path: dir, Dir: dir}}, Limits: Limits{WallMs: 20_000, DiskMB: 4}})
	if err != nil {
		t.Fatal(err)
	}
	mustExit(t, res, 0)
	if string(res.Stdout) != "warm\npoisoned\n" {
		t.Errorf("stdout %q, want the warm cache's file, then the command's own write", res.Stdout)
	}
	if got := readFile(t, filepath.Join(dir, "old")); got != "warm\n" {
		t.Errorf("the caller's cache file = %q after the run, want it untouched", got)
	}
	if _, err := os.Lstat(filepath.Join(dir, "new")); err == nil {
		t.Error("the command's new cache file is in the caller's directory")
	}
	if ents, _ := os.ReadDir(home); len(ents) != 2 {
		t.Errorf("the home holds %d entries after the run, want its 2", len(ents))
	}
	if got := readFile(t, filepath.Join(s.Upper, "f")); got != "in scope\n" {
		t.Errorf("layer f = %q", got)
	}
	want := []string{filepath.Join(home, ".bash_history"), filepath.Join(home, ".cache", "other"), filepath.Join(home, ".node-spawn-wrap-1")}
	if !slices.Equal(res.HomeWrote, want) || res.HomeWroteCount != 3 {
		t.Errorf("HomeWrote = %q (%d), want %q (3)", res.HomeWrote, res.HomeWroteCount, want)
	}

	// What the command writes in a cache counts against the disk cap.
	res, err = Run(context.Background(), Spec{Argv: []string{"/bin/sh", "-c", "head -c 8388608 /dev/zero > " + dir + "/big"}, Env: pathEnv, Scopes: []Scope{s},
		Mask: []string{homes}, Home: home, Caches: []Cache{{Path: dir, Dir: dir}}, Limits: Limits{WallMs: 20_000, DiskMB: 4}})
	if err != nil {
		t.Fatal(err)
	}
	if res.ExitCode == 0 || res.CapHit == nil || res.CapHit.Cap != CapDisk {
		t.Errorf("8 MiB into a cache under a 4 MiB disk cap: exit %d, cap %v; want a failure naming the disk cap", res.ExitCode, res.CapHit)
	}

	// A scope that is the home itself: the command writes there, in the
	// scope's layer, and never sees the throwaway home, of which nothing
	// is named (what act made in it for the cache included).
	hs := Scope{Path: home, Upper: filepath.Join(base, "home-upper"), Work: filepath.Join(base, "home-work")}
	for _, d := range []string{hs.Upper, hs.Work} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() { RemoveWorkDir(hs.Work) })
	res, err = Run(context.Background(), Spec{Argv: []string{"/bin/sh", "-c", "echo x > " + home + "/made"}, Env: pathEnv, Scopes: []Scope{hs},
		Mask: []string{homes}, Home: home, Caches: []Cache{{Path: dir, Dir: dir}}, Limits: Limits{WallMs: 20_000, DiskMB: 4}})
	if err != nil {
		t.Fatal(err)
	}
	mustExit(t, res, 0)
	if res.HomeWroteCount != 0 || readFile(t, filepath.Join(hs.Upper, "made")) != "x\n" {
		t.Errorf("a scope over the home: HomeWrote %q (%d), want none and the file in the layer", res.HomeWrote, res.HomeWroteCount)
	}

	// A symbolic link on the cache's path: refused, not followed.
	other := filepath.Join(base, "elsewhere")
	if err := os.MkdirAll(filepath.Join(other, "go-build"), 0o755); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(home, ".cache-link")
	if err := os.Symlink(other, link); err != nil {
		t.Fatal(err)
	}
	_, err = Run(context.Background(), Spec{Argv: []string{"true"}, Env: pathEnv, Scopes: []Scope{s},
		Mask: []string{homes}, Caches: []Cache{{Path: dir, Dir: filepath.Join(link, "go-build")}}, Limits: Limits{WallMs: 20_000, DiskMB: 4}})
	var se *SetupError
	if !errors.As(err, &se) {
		t.Errorf("a cache through a symbolic link: %v, want a SetupError", err)
	}
}

// TestCachesOwn: act's own cache (Own) is shown read-only over the
// user's (Dir), and what the command wrote there is copied, whole, to Out
// after a run that keeps its changes, for the caller to check; neither
// Own nor Dir is written. A run that discards its changes (a verification)
// copies nothing out.
func TestCachesOwn(t *testing.T) {
	requireIsolation(t)
	base, err := os.MkdirTemp("/var/tmp", "act-caches-own-")
	if err != nil {
		t.Skipf("no writable /var/tmp: %v", err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	mustChmod(t, base, 0o755)
	homes := filepath.Join(base, "home")
	at := filepath.Join(homes, "u", "go", "pkg", "mod")
	dir, own := filepath.Join(base, "user-cache"), filepath.Join(base, "own")
	if err := os.Mkdir(homes, 0o755); err != nil {
		t.Fatal(err)
	}
	for d, files := range map[string]map[string]string{dir: {"a": "user's a\n", "u": "user's u\n"}, own: {"a": "act's a\n", "o": "act's o\n"}} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		for name, data := range files {
			if err := os.WriteFile(filepath.Join(d, name), []byte(data), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	s := newScope(t, base, nil)
	script := fmt.Sprintf(`cd %s && cat a u o && echo new > n && echo x > s && chmod u+s s && rm o`, at)
	for _, discard := range []bool{true, false} {
		out := filepath.Join(base, fmt.Sprint("out-", discard))
		if err := os.Mkdir(out, 0o755); err != nil {
			t.Fatal(err)
		}
		res, err := Run(context.Background(), Spec{Argv: []string{"/bin/sh", "-c", script}, Env: pathEnv, Scopes: []Scope{s}, Discard: discard,
			Mask: []string{homes}, Caches: []Cache{{Path: at, Dir: dir, Own: own, Out: out}}, Limits: Limits{WallMs: 20_000, DiskMB: 4}})
		if err != nil {
			t.Fatal(err)
		}
		mustExit(t, res, 0)
		if string(res.Stdout) != "act's a\nuser's u\nact's o\n" {
			t.Errorf("stdout %q, want act's own cache over the user's", res.Stdout)
		}
		ents, _ := os.ReadDir(out)
		var names []string
		for _, e := range ents {
			names = append(names, e.Name())
		}
		want := []string{"n", "o", "s"}
		if discard {
			want = nil
		}
		if !slices.Equal(names, want) {
			t.Errorf("discard %v: copied out %q, want %q", discard, names, want)
		}
		if !discard {
			if fi, err := os.Lstat(filepath.Join(out, "s")); err != nil || fi.Mode()&fs.ModeSetuid == 0 {
				t.Errorf("the setuid file copied out: %v %v, want its mode whole for the caller to refuse", fi, err)
			}
			if fi, err := os.Lstat(filepath.Join(out, "o")); err != nil || fi.Mode()&fs.ModeCharDevice == 0 {
				t.Errorf("the removed file: %v %v, want a whiteout", fi, err)
			}
		}
		for d, n := range map[string]int{dir: 2, own: 2} {
			if ents, _ := os.ReadDir(d); len(ents) != n {
				t.Errorf("%s holds %d entries after the run, want its %d", d, len(ents), n)
			}
		}
	}
}

func mustChmod(t *testing.T, p string, m os.FileMode) {
	t.Helper()
	if err := os.Chmod(p, m); err != nil {
		t.Fatal(err)
	}
}
