package audit

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

const testOrigin = "act.test/host/audit"

var t0 = time.Date(2026, 11, 22, 0, 0, 0, 0, time.UTC)

// testEvent is a DETAILED applied record with every kind of field.
func testEvent(i int) Event {
	return Event{
		Name: EventApplied, ActionID: fmt.Sprintf("a-%d", i), PlanID: fmt.Sprintf("p-%d", i),
		DescriptorSHA256: strings.Repeat("ab", 32), Status: "applied", ExitCode: 0,
		Reason: "applied", Rules: []string{"gate.ok"}, Risk: &Risk{Declared: "LOW", Assessed: "MEDIUM"},
		Policy:   &Policy{Mode: "confirm", Source: "/etc/act/policy.yaml"},
		Approval: &Approval{Via: "--confirm", UID: 1000, User: "alice"}, Via: "cli",
		Changes: &Changes{Created: 1, Files: []FileChange{{Path: "/tmp/x", Kind: "created", Type: "file", Mode: "0644", Size: 3,
			SHA256After: strings.Repeat("cd", 32)}}},
		Resources: &Resources{CPUMillis: 3, WallMillis: 5, MaxRSSKiB: 1024},
		Started:   t0, Finished: t0.Add(time.Second), UID: 1000, User: "alice", Host: "h", LogLevel: LevelDetailed,
		Output: "password=hunter2 and more",
	}
}

// fill makes a log of n records in a new directory.
func fill(t testing.TB, n int) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "audit")
	l, err := Open(dir, testOrigin)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	i := 0
	l.Now = func() time.Time { i++; return t0.Add(time.Duration(i) * time.Minute) }
	for j := 0; j < n; j++ {
		if _, err := l.Append(context.Background(), testEvent(j)); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func mustVerify(t testing.TB, dir string, opts VerifyOptions) Report {
	t.Helper()
	r, err := Verify(dir, opts)
	if err != nil || !r.OK {
		t.Fatalf("Verify: %v (%+v)", err, r)
	}
	return r
}

func TestAppendVerify(t *testing.T) {
	dir := fill(t, 5)
	r := mustVerify(t, dir, VerifyOptions{})
	if r.Records != 5 || !r.First.Equal(t0.Add(time.Minute)) || !r.Last.Equal(t0.Add(5*time.Minute)) {
		t.Errorf("report %+v", r)
	}
	fi, err := os.Stat(filepath.Join(dir, KeyFile))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("key mode: %v %v", fi.Mode(), err)
	}
	// Reopening continues the same log.
	l, err := Open(dir, "other.origin/ignored")
	if err != nil {
		t.Fatal(err)
	}
	if seq, err := l.Append(context.Background(), testEvent(5)); err != nil || seq != 5 {
		t.Fatalf("Append = %d, %v", seq, err)
	}
	l.Close()
	mustVerify(t, dir, VerifyOptions{})
}

// TestPrivacy: no captured output below FORENSIC, redacted at FORENSIC; no
// file list at SUMMARY.
func TestPrivacy(t *testing.T) {
	for _, level := range []string{LevelSummary, LevelDetailed, LevelForensic} {
		dir := filepath.Join(t.TempDir(), "audit")
		l, err := Open(dir, testOrigin)
		if err != nil {
			t.Fatal(err)
		}
		ev := testEvent(0)
		ev.LogLevel = level
		if _, err := l.Append(context.Background(), ev); err != nil {
			t.Fatal(err)
		}
		l.Close()
		s, err := Show(dir, 0, VerifyOptions{})
		if err != nil {
			t.Fatal(err)
		}
		p := s.Statement.Predicate
		if strings.Contains(p.Output, "hunter2") {
			t.Errorf("%s: secret recorded: %q", level, p.Output)
		}
		if (p.Output != "") != (level == LevelForensic) {
			t.Errorf("%s: output %q", level, p.Output)
		}
		if (len(p.Changes.Files) > 0) != (level != LevelSummary) || p.Changes.Created != 1 {
			t.Errorf("%s: changes %+v", level, p.Changes)
		}
	}
}

func readLines(t testing.TB, dir string) [][]byte {
	b, err := os.ReadFile(filepath.Join(dir, LogFile))
	if err != nil {
		t.Fatal(err)
	}
	return bytes.SplitAfter(b, []byte("\n"))[:bytes.Count(b, []byte("\n"))]
}

func writeLines(t testing.TB, dir string, lines [][]byte) {
	if err := os.WriteFile(filepath.Join(dir, LogFile), bytes.Join(lines, nil), 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestTamper: each kind of tampering is named, at the right record.
func TestTamper(t *testing.T) {
	for _, tc := range []struct {
		name string
		do   func(ls [][]byte) [][]byte
		seq  int64
		kind string
	}{
		{"delete-middle", func(ls [][]byte) [][]byte { return append(ls[:2:2], ls[3:]...) }, 2, Removed},
		{"delete-first", func(ls [][]byte) [][]byte { return ls[1:] }, 0, Removed},
		{"delete-last", func(ls [][]byte) [][]byte { return ls[:4] }, 4, Truncated},
		{"duplicate", func(ls [][]byte) [][]byte { return append(ls[:3:3], ls[2:]...) }, 3, Duplicated},
		{"swap", func(ls [][]byte) [][]byte { ls[1], ls[2] = ls[2], ls[1]; return ls }, 1, Reordered},
		{"alter-payload", func(ls [][]byte) [][]byte {
			ls[3] = bytes.Replace(ls[3], []byte(`"payload":"ey`), []byte(`"payload":"fy`), 1)
			return ls
		}, 3, BadSignature},
		{"alter-keyid", func(ls [][]byte) [][]byte {
			i := bytes.Index(ls[1], []byte(`"keyid":"`)) + 9
			ls[1][i] ^= 1
			return ls
		}, 1, UnknownKey},
		{"torn", func(ls [][]byte) [][]byte { ls[4] = ls[4][:len(ls[4])/2]; return ls }, 4, Truncated},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := fill(t, 5)
			writeLines(t, dir, tc.do(readLines(t, dir)))
			r, err := Verify(dir, VerifyOptions{})
			var p *Problem
			if !errors.As(err, &p) || r.OK {
				t.Fatalf("Verify = %+v, %v; want a problem", r, err)
			}
			if p.Seq != tc.seq || p.Kind != tc.kind {
				t.Errorf("problem %v; want record %d %s", p, tc.seq, tc.kind)
			}
		})
	}
}

// TestSince: a checkpoint saved before a rewrite by the key holder catches
// it; one saved before honest appends passes.
func TestSince(t *testing.T) {
	dir := fill(t, 4)
	saved, err := os.ReadFile(filepath.Join(dir, CheckpointFile))
	if err != nil {
		t.Fatal(err)
	}
	l, err := Open(dir, testOrigin)
	if err != nil {
		t.Fatal(err)
	}
	l.Append(context.Background(), testEvent(9))
	l.Close()
	if r := mustVerify(t, dir, VerifyOptions{Since: saved}); r.Since != 4 {
		t.Errorf("since = %d", r.Since)
	}
	// The key holder rewrites the log: drop record 2 and re-sign the rest.
	key, _ := os.ReadFile(filepath.Join(dir, KeyFile))
	dir2 := filepath.Join(t.TempDir(), "audit")
	os.MkdirAll(dir2, 0o700)
	os.WriteFile(filepath.Join(dir2, KeyFile), key, 0o600)
	l2, err := Open(dir2, testOrigin)
	if err != nil {
		t.Fatal(err)
	}
	for _, i := range []int{0, 1, 3, 9, 10} {
		l2.Append(context.Background(), testEvent(i))
	}
	l2.Close()
	mustVerify(t, dir2, VerifyOptions{})
	_, err = Verify(dir2, VerifyOptions{Since: saved})
	var p *Problem
	if !errors.As(err, &p) || p.Kind != Altered {
		t.Fatalf("rewrite not caught: %v", err)
	}
	// A log re-signed with another key: unknown key.
	dir3 := fill(t, 6)
	_, err = Verify(dir3, VerifyOptions{Since: saved})
	if !errors.As(err, &p) || p.Kind != UnknownKey {
		t.Fatalf("re-signed log: %v", err)
	}
}

func TestKey(t *testing.T) {
	dir := fill(t, 2)
	key := filepath.Join(dir, KeyFile)
	b, _ := os.ReadFile(key)
	os.Remove(key)
	if _, err := Open(dir, testOrigin); !errors.Is(err, ErrKeyMissing) {
		t.Fatalf("missing key: %v", err)
	}
	other := fill(t, 0)
	ob, _ := os.ReadFile(filepath.Join(other, KeyFile))
	os.WriteFile(key, ob, 0o600)
	if _, err := Open(dir, testOrigin); !errors.Is(err, ErrKeyChanged) {
		t.Fatalf("changed key: %v", err)
	}
	os.WriteFile(key, b, 0o600)
	mustVerify(t, dir, VerifyOptions{})
}

func TestTornRepair(t *testing.T) {
	dir := fill(t, 3)
	f, _ := os.OpenFile(filepath.Join(dir, LogFile), os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString(`{"payloadType":"application/vnd.in-toto+json","payl`)
	f.Close()
	if _, err := Verify(dir, VerifyOptions{}); err == nil {
		t.Fatal("torn line verified")
	}
	l, err := Open(dir, testOrigin)
	if err != nil {
		t.Fatal(err)
	}
	l.Close()
	r := mustVerify(t, dir, VerifyOptions{})
	s, err := Show(dir, 3, VerifyOptions{})
	if err != nil || r.Records != 4 || s.Statement.Predicate.Name != EventRecovered {
		t.Fatalf("repair not recorded: %+v %v", s, err)
	}
}

func TestPrune(t *testing.T) {
	dir := fill(t, 6)
	l, err := Open(dir, testOrigin)
	if err != nil {
		t.Fatal(err)
	}
	l.Now = func() time.Time { return t0.Add(time.Hour) }
	info, err := l.PruneBefore(context.Background(), t0.Add(3*time.Minute+time.Second))
	if err != nil || info.Count != 3 || info.Through != 2 {
		t.Fatalf("PruneBefore = %+v, %v", info, err)
	}
	l.Close()
	r := mustVerify(t, dir, VerifyOptions{})
	if r.Records != 7 || r.Pruned != 3 || !r.PrunedThrough.Equal(t0.Add(3*time.Minute)) {
		t.Errorf("report %+v", r)
	}
	if bytes.Contains(bytes.Join(readLines(t, dir)[:3], nil), []byte("payload")) {
		t.Error("pruned bodies kept")
	}
}

// TestConcurrentWriters: 16 writer processes append 20 records each;
// nothing is lost, duplicated or interleaved.
func TestConcurrentWriters(t *testing.T) {
	if testing.Short() {
		t.Skip("short")
	}
	dir := fill(t, 1)
	const procs, each = 16, 20
	var cmds []*exec.Cmd
	for i := 0; i < procs; i++ {
		c := exec.Command(os.Args[0], "-test.run=^TestHelperWriter$")
		c.Env = append(os.Environ(), "AUDIT_HELPER_DIR="+dir, "AUDIT_HELPER_N="+strconv.Itoa(each))
		c.Stderr = os.Stderr
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		cmds = append(cmds, c)
	}
	// Verify while they write: it reads the log and the checkpoint file
	// under a shared lock, so an append in between never looks like a
	// truncation.
	done := make(chan error, 1)
	go func() {
		for _, c := range cmds {
			if err := c.Wait(); err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	for verified := 0; ; verified++ {
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("verified %d times during the appends", verified)
			goto finished
		default:
		}
		mustVerify(t, dir, VerifyOptions{})
	}
finished:
	r := mustVerify(t, dir, VerifyOptions{})
	if r.Records != 1+procs*each {
		t.Fatalf("%d records, want %d", r.Records, 1+procs*each)
	}
}

// TestHelperWriter is the writer process of the multi-process tests.
func TestHelperWriter(t *testing.T) {
	dir := os.Getenv("AUDIT_HELPER_DIR")
	if dir == "" {
		t.Skip("helper process only")
	}
	n, _ := strconv.Atoi(os.Getenv("AUDIT_HELPER_N"))
	for i := 0; n <= 0 || i < n; i++ {
		l, err := Open(dir, testOrigin)
		if err != nil {
			t.Fatal(err)
		}
		for j := 0; j < 3 && (n <= 0 || i < n); j++ {
			// Every other record deferred (BatchOptions.Deferred), as a
			// decision that changed nothing is recorded.
			if _, err := l.AppendBatch(context.Background(), []Event{testEvent(i)}, &BatchOptions{Deferred: i%2 == 1}); err != nil {
				t.Fatal(err)
			}
			if j < 2 {
				i++
			}
		}
		l.Close()
	}
}

// TestKill: writers killed with SIGKILL at random times leave a log that
// the next Open repairs and Verify passes.
func TestKill(t *testing.T) {
	if testing.Short() {
		t.Skip("short")
	}
	dir := fill(t, 1)
	for round := 0; round < 8; round++ {
		var cmds []*exec.Cmd
		for i := 0; i < 3; i++ {
			c := exec.Command(os.Args[0], "-test.run=^TestHelperWriter$")
			c.Env = append(os.Environ(), "AUDIT_HELPER_DIR="+dir, "AUDIT_HELPER_N=0")
			if err := c.Start(); err != nil {
				t.Fatal(err)
			}
			cmds = append(cmds, c)
		}
		time.Sleep(time.Duration(20+round*17%60) * time.Millisecond)
		for _, c := range cmds {
			c.Process.Kill()
			c.Wait()
		}
		l, err := Open(dir, testOrigin)
		if err != nil {
			t.Fatalf("round %d: Open: %v", round, err)
		}
		l.Close()
		mustVerify(t, dir, VerifyOptions{})
	}
	r := mustVerify(t, dir, VerifyOptions{})
	t.Logf("%d records after 8 rounds of kills", r.Records)
}

// FuzzVerify: from a valid log, any byte flip, line deletion, duplication,
// swap or truncation makes Verify fail, and nothing panics.
func FuzzVerify(f *testing.F) {
	f.Add(uint8(0), uint16(100), uint8(1))
	f.Add(uint8(1), uint16(2), uint8(0))
	f.Add(uint8(2), uint16(1), uint8(0))
	f.Add(uint8(3), uint16(0), uint8(3))
	f.Add(uint8(4), uint16(900), uint8(0))
	f.Add(uint8(5), uint16(30), uint8(0x20))
	dir := fill(f, 4)
	logb, _ := os.ReadFile(filepath.Join(dir, LogFile))
	cpb, _ := os.ReadFile(filepath.Join(dir, CheckpointFile))
	f.Fuzz(func(t *testing.T, op uint8, pos uint16, x uint8) {
		lines := bytes.SplitAfter(bytes.Clone(logb), []byte("\n"))[:4]
		cp := bytes.Clone(cpb)
		k := int(pos) % 4
		switch op % 6 {
		case 0: // flip a byte of the log
			b := bytes.Join(lines, nil)
			if x == 0 {
				x = 1
			}
			b[int(pos)*7%len(b)] ^= x
			lines = [][]byte{b}
		case 1:
			lines = append(lines[:k:k], lines[k+1:]...)
		case 2:
			lines = append(lines[:k+1:k+1], lines[k:]...)
		case 3:
			j := (k + 1 + int(x)%3) % 4
			lines[k], lines[j] = lines[j], lines[k]
		case 4: // truncate
			b := bytes.Join(lines, nil)
			lines = [][]byte{b[:int(pos)%len(b)]}
		case 5: // flip a byte of the checkpoint file
			if x == 0 {
				x = 1
			}
			cp[int(pos)%len(cp)] ^= x
		}
		d := t.TempDir()
		for _, name := range []string{PublicKeyFile} {
			b, _ := os.ReadFile(filepath.Join(dir, name))
			os.WriteFile(filepath.Join(d, name), b, 0o644)
		}
		os.WriteFile(filepath.Join(d, LogFile), bytes.Join(lines, nil), 0o600)
		os.WriteFile(filepath.Join(d, CheckpointFile), cp, 0o600)
		r, err := Verify(d, VerifyOptions{})
		if err == nil || r.OK {
			t.Fatalf("op %d pos %d x %d: tampered log verified", op%6, pos, x)
		}
	})
}

// TestAppendBatchSyncFS: a batch is one write, made durable by syncfs,
// with consecutive sequence numbers.
func TestAppendBatchSyncFS(t *testing.T) {
	dir := fill(t, 2)
	l, err := Open(dir, testOrigin)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	seqs, err := l.AppendBatch(context.Background(), []Event{testEvent(7), testEvent(8), testEvent(9)}, &BatchOptions{SyncFS: true})
	if err != nil || len(seqs) != 3 || seqs[0] != 2 || seqs[2] != 4 {
		t.Fatalf("AppendBatch = %v, %v", seqs, err)
	}
	if r := mustVerify(t, dir, VerifyOptions{}); r.Records != 5 {
		t.Errorf("records %d", r.Records)
	}
	if _, err := l.Append(context.Background(), Event{Name: "bogus"}); err == nil {
		t.Error("unknown event recorded")
	}
	if o := HostOrigin(); strings.ContainsAny(o, " +") || !strings.HasSuffix(o, "/act/audit") {
		t.Errorf("HostOrigin() = %q", o)
	}
}
