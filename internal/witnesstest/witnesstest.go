// Package witnesstest runs a real c2sp.org/tlog-witness witness for tests:
// litewitness (filippo.io/torchwood/cmd/litewitness v0.6.1, the tool
// directive of go.mod), built once per test process by `go tool -n`, its
// Ed25519 key held by an ssh-agent served in-process on a unix socket
// (golang.org/x/crypto/ssh/agent), its state in its own SQLite database.
//
// witnessctl, which registers logs in that database, does not build here
// (its sigsum.org/sigsum-go dependency is not served), so [Witness.AddLog]
// does what its add-log and add-key commands do, with the sqlite3 command:
// one row in log (origin, size 0, the empty tree's hash) and one in key
// (origin, the log's note verifier key).
//
// Only tests import this package.
package witnesstest

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/agent"
)

var (
	buildOnce sync.Once
	binary    string
	buildErr  error
)

// Binary returns the path of the litewitness executable, built (or found
// in the build cache) by `go tool -n litewitness` once per process.
func Binary(t testing.TB) string {
	t.Helper()
	buildOnce.Do(func() {
		goCmd, err := exec.LookPath("go")
		if err != nil {
			goCmd = filepath.Join(runtime.GOROOT(), "bin", "go")
		}
		var out, errb bytes.Buffer
		c := exec.Command(goCmd, "tool", "-n", "litewitness")
		c.Stdout, c.Stderr = &out, &errb
		if err := c.Run(); err != nil {
			buildErr = fmt.Errorf("go tool -n litewitness: %v\n%s", err, errb.String())
			return
		}
		binary = strings.TrimSpace(out.String())
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binary
}

// A Witness is one running litewitness.
type Witness struct {
	t testing.TB
	// Name is its name (-name): the name its cosignature lines carry.
	Name string
	// URL is its submission prefix.
	URL string
	// VKey is its verifier key as litewitness prints it (cosignature/v1).
	VKey string
	// Addr is the address it listens on.
	Addr string
	// Priv is its private key, made by the test and given to litewitness
	// through the agent: for a verifier the test builds on its own side.
	Priv ed25519.PrivateKey

	dir    string
	db     string
	sock   string
	fp     string
	cmd    *exec.Cmd
	done   chan struct{}
	stderr *lockedBuffer
}

// Start starts a litewitness named name with a new key, listening on a
// free loopback port; it is stopped when the test ends.
func Start(t testing.TB, name string) *Witness {
	return StartAt(t, name, "")
}

// StartAt is Start listening on addr ("" for a free port).
func StartAt(t testing.TB, name, addr string) *Witness {
	t.Helper()
	if _, err := exec.LookPath("sqlite3"); err != nil {
		t.Skipf("the sqlite3 command registers logs in litewitness's database, and it is not installed: %v", err)
	}
	Binary(t)
	dir, err := os.MkdirTemp("", "litewitness-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	w := &Witness{t: t, Name: name, Priv: priv, dir: dir, db: filepath.Join(dir, "litewitness.db"), sock: filepath.Join(dir, "agent.sock")}
	w.serveAgent(priv)
	sshPub, err := ssh.NewPublicKey(priv.Public())
	if err != nil {
		t.Fatal(err)
	}
	w.fp = ssh.FingerprintSHA256(sshPub)
	if addr == "" {
		addr = FreeAddr(t)
	}
	w.Addr = addr
	w.URL = "http://" + addr
	w.start()
	return w
}

// FreeAddr returns a loopback address no one listens on now.
func FreeAddr(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

// serveAgent serves an ssh-agent holding priv on w.sock.
func (w *Witness) serveAgent(priv ed25519.PrivateKey) {
	kr := agent.NewKeyring()
	if err := kr.Add(agent.AddedKey{PrivateKey: priv, Comment: "litewitness " + w.Name}); err != nil {
		w.t.Fatal(err)
	}
	l, err := net.Listen("unix", w.sock)
	if err != nil {
		w.t.Fatal(err)
	}
	w.t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				agent.ServeAgent(kr, c)
			}()
		}
	}()
}

var vkeyLine = regexp.MustCompile(`msg="verifier key" vkey="?([^"\s]+)"?`)

// start runs litewitness and waits until it answers.
func (w *Witness) start() {
	w.t.Helper()
	w.stderr = &lockedBuffer{}
	w.cmd = exec.Command(Binary(w.t), "-name", w.Name, "-db", w.db, "-ssh-agent", w.sock, "-key", w.fp, "-listen", w.Addr)
	w.cmd.Stderr = w.stderr
	w.cmd.Dir = w.dir
	if err := w.cmd.Start(); err != nil {
		w.t.Fatal(err)
	}
	w.done = make(chan struct{})
	go func() { w.cmd.Wait(); close(w.done) }()
	w.t.Cleanup(w.Stop)
	deadline := time.Now().Add(20 * time.Second)
	for {
		resp, err := http.Get(w.URL + "/")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
			}
		}
		select {
		case <-w.done:
			w.t.Fatalf("litewitness exited:\n%s", w.stderr.String())
		default:
		}
		if time.Now().After(deadline) {
			w.t.Fatalf("litewitness does not answer at %s: %v\n%s", w.URL, err, w.stderr.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	m := vkeyLine.FindStringSubmatch(w.stderr.String())
	if m == nil {
		w.t.Fatalf("litewitness printed no verifier key:\n%s", w.stderr.String())
	}
	w.VKey = m[1]
}

// Stop stops litewitness (SIGINT, as a person would); its database stays,
// so Restart brings the same witness back.
func (w *Witness) Stop() {
	if w.cmd == nil || w.cmd.Process == nil {
		return
	}
	select {
	case <-w.done:
		return
	default:
	}
	w.cmd.Process.Signal(os.Interrupt)
	select {
	case <-w.done:
	case <-time.After(10 * time.Second):
		w.cmd.Process.Kill()
		<-w.done
	}
}

// Restart starts the stopped witness again, on the same address with the
// same key and state.
func (w *Witness) Restart() {
	w.t.Helper()
	w.Stop()
	w.start()
}

// Log is what litewitness has printed so far.
func (w *Witness) Log() string { return w.stderr.String() }

// AddLog registers a log as witnessctl add-log and add-key do: origin at
// size 0 with the empty tree's hash, and its note verifier key.
func (w *Witness) AddLog(origin, vkey string) {
	w.t.Helper()
	const emptyTree = "47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU="
	w.SQL(fmt.Sprintf("INSERT INTO log (origin, tree_size, tree_hash) VALUES (%s, 0, %s); INSERT INTO key (origin, key) VALUES (%s, %s);",
		quote(origin), quote(emptyTree), quote(origin), quote(vkey)))
}

// Size is the size litewitness holds for origin (-1 when unknown).
func (w *Witness) Size(origin string) int64 {
	w.t.Helper()
	out := strings.TrimSpace(w.SQL(fmt.Sprintf("SELECT tree_size FROM log WHERE origin = %s;", quote(origin))))
	if out == "" {
		return -1
	}
	n, err := strconv.ParseInt(out, 10, 64)
	if err != nil {
		w.t.Fatalf("litewitness's size of %s: %q", origin, out)
	}
	return n
}

// SQL runs statements on litewitness's database with the sqlite3
// command and returns what it printed.
func (w *Witness) SQL(stmts string) string {
	w.t.Helper()
	c := exec.Command("sqlite3", "-cmd", ".timeout 5000", w.db, stmts)
	out, err := c.CombinedOutput()
	if err != nil {
		w.t.Fatalf("sqlite3 %s: %v\n%s", stmts, err, out)
	}
	return string(out)
}

func quote(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

// lockedBuffer is a bytes.Buffer safe for the writer goroutine of exec
// and the test's reads.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}
