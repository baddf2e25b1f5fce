package promotion

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"filippo.io/torchwood"
	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"

	"github.com/act-project/act/audit"
	"github.com/act-project/act/internal/witnesstest"
)

// witnessPolicy is a policy file: allowed roots, then the audit section.
func witnessPolicy(t *testing.T, w *world, base, audit string) {
	t.Helper()
	must(t, os.WriteFile(w.policy, []byte(fmt.Sprintf("allowed_roots: [%s]\naudit:\n%s", base, audit)), 0o644))
}

func witnessEntry(name, key, url string) string {
	return fmt.Sprintf("    - {name: %s, key: %q, url: %q}\n", name, key, url)
}

// records is the number of records the log of w holds, verified.
func (w *world) records() int64 {
	w.t.Helper()
	r, err := audit.Verify(filepath.Join(w.home, "audit"), audit.VerifyOptions{})
	if err != nil {
		w.t.Fatal(err)
	}
	return r.Records
}

// TestWitnessAfterActions: with audit.witness_after, apply and rollback
// ask the policy's witnesses (a real litewitness) to cosign. A witness
// that is down, or one that never answers, does not fail or hold the
// apply: one warning line, which says act gave up on the one that never
// answers ("no answer in time": act's bound); act audit witness names it
// and exits 1; once it is back, the rollback's witnessing cosigns the
// whole log, and act audit verify reports the cosignature and the quorum;
// act audit verify --witnesses asks it again.
func TestWitnessAfterActions(t *testing.T) {
	t.Parallel()
	base := t.TempDir()
	w := newWorld(t, base, "33333333-4444-4555-8666-777777777777", map[string]string{"a.txt": "a\n"}, `action_type: FILE_WRITE
effects: {filesystem: {create: [$P/new.txt], modify: [], delete: []}, network: false, system_state_change: false}
operation: {path: $P/new.txt, content: "new\n", mode: "0640"}
`)
	// The log's note key, as a person registers it with a witness.
	vkey := strings.TrimSpace(w.ok(0, "audit", "pubkey", "--note").stdout)
	origin, _, _ := strings.Cut(vkey, "+")
	lw := witnesstest.Start(t, "witness.test/after")
	lw.AddLog(origin, vkey)
	lw.Stop()
	// A witness that takes the connection and never answers.
	hang, err := net.Listen("tcp", "127.0.0.1:0")
	must(t, err)
	defer hang.Close()
	go func() {
		for {
			c, err := hang.Accept()
			if err != nil {
				return
			}
			defer c.Close()
		}
	}()
	witnessPolicy(t, w, base, "  witness_after: true\n  quorum: 1\n  witnesses:\n"+
		witnessEntry("w1", lw.VKey, lw.URL)+witnessEntry("hang", "witness.example/hang+57e40b63+BERERERERERERERERERERERERERERERERERERERERERE", "http://"+hang.Addr().String()))

	r := w.ok(0, "apply", "--confirm", w.descriptor)
	if !strings.Contains(r.stdout, "Applied: 1 created") {
		t.Fatalf("apply's outcome:\n%s", r)
	}
	lines := strings.Split(strings.TrimSpace(r.stderr), "\n")
	last := lines[len(lines)-1]
	if !strings.HasPrefix(last, "act: warning: the audit log was not witnessed") || !strings.Contains(last, "witness w1: unreachable") || !strings.Contains(last, "witness hang: unreachable: no answer in time") {
		t.Fatalf("apply's note of the witnesses:\n%s", r)
	}
	if _, err := os.Stat(filepath.Join(w.home, "audit", "witness", "w1")); err == nil {
		t.Fatal("a cosignature stored while the witness was down")
	}

	witnessPolicy(t, w, base, "  witness_after: true\n  witness_grace: 0s\n  witnesses:\n"+witnessEntry("w1", lw.VKey, lw.URL))
	r = w.ok(1, "audit", "witness")
	if !strings.Contains(r.stderr, "act: error: witness w1: unreachable") {
		t.Fatalf("act audit witness with the witness down:\n%s", r)
	}
	r = w.ok(1, "--json", "audit", "witness")
	var res struct {
		Data audit.WitnessReport `json:"data"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &res); err != nil || len(res.Data.Witnesses) != 1 || res.Data.Witnesses[0].Status != audit.WitnessFailed {
		t.Fatalf("--json: %v\n%s", err, r)
	}
	// Unwitnessed past the grace period (0s): verify fails. (The test
	// CLI's clock is fixed, and records are stamped by the real one: move
	// it past them.)
	r = w.actAt(time.Now().Add(time.Minute), 1, "audit", "verify")
	if !strings.Contains(r.stderr, "unwitnessed") {
		t.Fatalf("verify without the quorum:\n%s", r)
	}

	lw.Restart()
	r = w.ok(0, "rollback", w.id)
	if strings.Contains(r.stderr, "warning") {
		t.Fatalf("rollback with the witness back:\n%s", r)
	}
	n := w.records()
	if got := lw.Size(origin); got != n {
		t.Fatalf("the witness holds %d records of %d", got, n)
	}
	later := time.Now().Add(time.Minute)
	r = w.actAt(later, 0, "audit", "verify")
	if !strings.Contains(r.stdout, fmt.Sprintf("witness w1: cosigned %d records at ", n)) || !strings.Contains(r.stdout, fmt.Sprintf("quorum 1 of w1: %d records cosigned; %d due", n, n)) {
		t.Fatalf("verify with the witness:\n%s", r)
	}
	r = w.actAt(later, 0, "--json", "audit", "verify")
	var vr struct {
		Data audit.Report `json:"data"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &vr); err != nil || len(vr.Data.Witnessed) != 1 || vr.Data.Witnessed[0].Size != n || vr.Data.Quorums[0].Size != n {
		t.Fatalf("verify --json: %v\n%s", err, r)
	}
	r = w.ok(0, "audit", "witness")
	if strings.TrimSpace(r.stdout) != fmt.Sprintf("witness w1: had cosigned these %d records already", n) {
		t.Fatalf("act audit witness, nothing new:\n%s", r)
	}
	// act audit verify --witnesses asks it all the same: it cosigns the
	// same checkpoint again, with its clock's time now.
	r = w.ok(0, "audit", "verify", "--witnesses")
	if !strings.Contains(r.stdout, fmt.Sprintf("witness w1: cosigned %d records (it had cosigned %d)", n, n)) || !strings.Contains(r.stdout, fmt.Sprintf("ok: %d records", n)) {
		t.Fatalf("act audit verify --witnesses:\n%s", r)
	}
	// act run promotes through the same gate, and witnesses after too.
	r = w.ok(0, "run", "--confirm", "--workspace", w.root, "--", "sh", "-c", "echo ran > ran.txt")
	if strings.Contains(r.stderr, "warning") {
		t.Fatalf("act run with the witness up:\n%s", r)
	}
	if n, got := w.records(), lw.Size(origin); got != n || n == 0 {
		t.Fatalf("after act run the witness holds %d records of %d", got, n)
	}
}

// actAt runs the test CLI in w with its clock at now, and requires exit
// code want.
func (w *world) actAt(now time.Time, want int, args ...string) run {
	w.t.Helper()
	c := exec.Command("act", args...)
	c.Env = append(os.Environ(), "ACT_HOME="+w.home, "ACT_POLICY="+w.policy, "XDG_STATE_HOME=", "NO_COLOR=1", "TERM=dumb", "ACT_TEST_NOW="+now.UTC().Format(time.RFC3339))
	var out, errb strings.Builder
	c.Stdout, c.Stderr = &out, &errb
	err := c.Run()
	r := run{args: args, stdout: out.String(), stderr: errb.String()}
	if ee, ok := err.(*exec.ExitError); ok {
		r.code = ee.ExitCode()
	} else if err != nil {
		w.t.Fatal(err)
	}
	if r.code != want {
		w.t.Fatalf("want exit %d\n%s", want, r)
	}
	return r
}

// TestWitnessFleet is the fleet of docs/audit.md ("A fleet"): three hosts
// (three state dirs), each with its own log, origin and key, one shared
// witness (a real litewitness); each host runs act audit witness and act
// audit export --tiles, the tiles are served by plain file servers, and a
// central check with torchwood's tlog client (which act did not write)
// verifies each log's checkpoint with the key the host enrolled, its
// witness cosignature with torchwood's cosignature verifier, and every
// entry against the tree.
func TestWitnessFleet(t *testing.T) {
	t.Parallel()
	lw := witnesstest.Start(t, "witness.test/fleet")
	// The central side's verifier of the witness, torchwood's own; its
	// key string is the one litewitness printed.
	cosigner, err := torchwood.NewCosignatureSigner(lw.Name, lw.Priv)
	must(t, err)
	wv := cosigner.Verifier()
	if wv.String() != lw.VKey {
		t.Fatalf("torchwood's verifier key %s, litewitness's %s", wv.String(), lw.VKey)
	}
	type host struct {
		w      *world
		origin string
		vkey   string // enrolled centrally
		url    string
		n      int64
	}
	var hosts []*host
	// Before any cosignature: each is made between this and now (the
	// witness's clock, in seconds).
	begun := time.Now().Truncate(time.Second)
	at := time.Date(2026, 11, 21, 0, 0, 0, 0, time.UTC)
	for i := 1; i <= 3; i++ {
		base := t.TempDir()
		w := newWorld(t, base, "44444444-5555-4666-8777-88888888888"+fmt.Sprint(i), nil, "")
		h := &host{w: w, origin: fmt.Sprintf("act.test/host%d/audit", i)}
		// Each host's own log: a few records under its own origin.
		l, err := audit.Open(filepath.Join(w.home, "audit"), h.origin)
		must(t, err)
		clock := at
		l.Now = func() time.Time { clock = clock.Add(time.Minute); return clock }
		for j := 0; j < 3+i; j++ {
			_, err := l.Append(context.Background(), audit.Event{Name: audit.EventApplied, ActionID: fmt.Sprintf("host%d-%d", i, j), Status: "succeeded",
				DescriptorSHA256: fmt.Sprintf("%064x", i*100+j), LogLevel: audit.LevelSummary, Via: "cli"})
			must(t, err)
		}
		l.Close()
		h.vkey = strings.TrimSpace(w.ok(0, "audit", "pubkey", "--note").stdout)
		if !strings.HasPrefix(h.vkey, h.origin+"+") {
			t.Fatalf("host %d's note key %s", i, h.vkey)
		}
		lw.AddLog(h.origin, h.vkey)
		witnessPolicy(t, w, base, "  witnesses:\n"+witnessEntry("fleet", lw.VKey, lw.URL))
		r := w.ok(0, "audit", "witness")
		h.n = int64(3 + i)
		if strings.TrimSpace(r.stdout) != fmt.Sprintf("witness fleet: cosigned %d records", h.n) {
			t.Fatalf("host %d: %s", i, r)
		}
		w.ok(0, "audit", "verify")
		tiles := filepath.Join(t.TempDir(), "tiles")
		w.ok(0, "audit", "export", "--tiles", tiles)
		srv := httptest.NewServer(http.FileServer(http.Dir(tiles)))
		t.Cleanup(srv.Close)
		h.url = srv.URL
		hosts = append(hosts, h)
	}

	// The central check: only the enrolled keys and the URLs.
	ctx := context.Background()
	for _, h := range hosts {
		lv, err := note.NewVerifier(h.vkey)
		must(t, err)
		tf, err := torchwood.NewTileFetcher(h.url)
		must(t, err)
		text, err := tf.ReadEndpoint(ctx, "checkpoint")
		must(t, err)
		nt, err := note.Open(text, note.VerifierList(lv, wv))
		if err != nil {
			t.Fatalf("%s: the published checkpoint: %v\n%s", h.origin, err, text)
		}
		signed := map[string]bool{}
		for _, s := range nt.Sigs {
			signed[s.Name] = true
		}
		if !signed[h.origin] || !signed[lw.Name] {
			t.Fatalf("%s: the checkpoint is signed by %v, want the log and the witness\n%s", h.origin, signed, text)
		}
		var ts time.Time
		for _, s := range nt.Sigs {
			if s.Name == lw.Name {
				t0, err := torchwood.CosignatureTimestamp(s)
				must(t, err)
				ts = time.Unix(int64(t0), 0)
			}
		}
		if ts.Before(begun) || ts.After(time.Now()) {
			t.Errorf("%s: the cosignature's time is %v, not within the test's run (%v to now)", h.origin, ts, begun)
		}
		cp, err := torchwood.ParseCheckpoint(nt.Text)
		must(t, err)
		if cp.Origin != h.origin || cp.N != h.n {
			t.Fatalf("%s: checkpoint %s %d", h.origin, cp.Origin, cp.N)
		}
		c, err := torchwood.NewClient(tf)
		must(t, err)
		var got int64
		for i, e := range c.Entries(ctx, cp.Tree, 0) {
			var st audit.Statement
			if i != got || json.Unmarshal(e, &st) != nil || !strings.HasPrefix(st.Subject[0].Name, strings.Split(h.origin, "/")[1]) {
				t.Fatalf("%s: entry %d: %s", h.origin, i, e)
			}
			got++
		}
		must(t, c.Err())
		if got != h.n {
			t.Fatalf("%s: %d entries of %d", h.origin, got, h.n)
		}
		e, proof, err := c.Entry(ctx, cp.Tree, h.n-1)
		must(t, err)
		must(t, tlog.CheckRecord(proof, cp.N, cp.Hash, h.n-1, tlog.RecordHash(e)))
	}
	// Another host's key does not open a host's checkpoint: the central
	// check tells the logs apart.
	tf, _ := torchwood.NewTileFetcher(hosts[0].url)
	text, _ := tf.ReadEndpoint(ctx, "checkpoint")
	other, _ := note.NewVerifier(hosts[1].vkey)
	if _, err := note.Open(text, note.VerifierList(other)); err == nil {
		t.Fatal("host 1's checkpoint opened with host 2's key")
	}
}
