package rollback

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"hash/crc32"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// equate treats nil and empty slices alike.
var equate = cmpopts.EquateEmpty()

// changes returns n deterministic planned changes.
func changes(n int) []Op {
	cs := make([]Op, n)
	for i := range cs {
		cs[i] = Op{Kind: OpPut, Path: fmt.Sprintf("/home/u/p/f%04d", i), Src: fmt.Sprintf("/s/plans/p/layer/home/u/p/f%04d", i), Change: i}
	}
	return cs
}

// sample is the record sequence of a promotion of n steps, each logged as
// started then done, and committed.
func sample(n int) []Record {
	recs := []Record{Begin{ActionID: "act-1", PlanID: "0123456789abcdef", Steps: changes(n)}}
	for i := range n {
		recs = append(recs, Step{N: i}, Step{N: i, Done: true})
	}
	return append(recs, Commit{})
}

// encode is the file a Writer makes of recs, and each record's end offset.
func encode(t testing.TB, recs []Record) ([]byte, []int) {
	buf := bytes.Clone(magic)
	var ends []int
	for _, r := range recs {
		var err error
		if buf, err = appendRecord(buf, r); err != nil {
			t.Fatal(err)
		}
		ends = append(ends, len(buf))
	}
	return buf, ends
}

func stateOf(recs []Record) State {
	if len(recs) == 0 {
		return Empty
	}
	switch recs[len(recs)-1].(type) {
	case Commit:
		return Committed
	case Revert:
		return Reverted
	}
	return Started
}

func TestWriterRead(t *testing.T) {
	path := filepath.Join(t.TempDir(), "j")
	want := sample(3)
	w, err := Create(path, want[0].(Begin))
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Append(want[1]); err != nil { // one record, durable
		t.Fatal(err)
	}
	if err := w.Write(want[2:5]...); err != nil { // a batch, not yet durable
		t.Fatal(err)
	}
	if err := w.Sync(); err != nil {
		t.Fatal(err)
	}
	if err := w.Append(want[5:]...); err != nil {
		t.Fatal(err)
	}
	if w.State() != Committed {
		t.Errorf("State() = %v, want committed", w.State())
	}
	if err := w.Append(Step{N: 0, Done: true}); err == nil {
		t.Error("Append after Commit succeeded")
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	got, st, err := Read(path)
	if err != nil || st != Committed {
		t.Fatalf("Read: state %v, err %v; want committed, nil", st, err)
	}
	if d := cmp.Diff(want, got, equate); d != "" {
		t.Errorf("Read() mismatch (-want +got):\n%s", d)
	}
	file, _ := encode(t, want)
	if b, _ := os.ReadFile(path); !bytes.Equal(b, file) {
		t.Error("the file differs from the encoding of its records")
	}
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o600 {
		t.Errorf("journal mode %v, want 0600", fi.Mode().Perm())
	}
	if _, err := Create(path, Begin{}); err == nil {
		t.Error("Create over an existing journal succeeded")
	}
	if _, err := os.Stat(path); err != nil {
		t.Errorf("a failed Create removed the existing journal: %v", err)
	}
}

// TestReadEveryPrefix cuts a journal at every byte: Read returns the
// records that were whole, no error exactly at record boundaries and
// ErrTorn elsewhere.
func TestReadEveryPrefix(t *testing.T) {
	recs := sample(2)
	file, ends := encode(t, recs)
	whole := 0
	for k := 0; k <= len(file); k++ {
		for whole < len(ends) && ends[whole] <= k {
			whole++
		}
		got, st, err := decode(file[:k])
		if d := cmp.Diff(recs[:whole], got, equate); d != "" {
			t.Fatalf("cut at %d: records mismatch (-want +got):\n%s", k, d)
		}
		if st != stateOf(recs[:whole]) {
			t.Fatalf("cut at %d: state %v, want %v", k, st, stateOf(recs[:whole]))
		}
		atBoundary := k >= len(magic) && (whole == 0 && k == len(magic) || whole > 0 && ends[whole-1] == k)
		switch {
		case atBoundary && err != nil:
			t.Fatalf("cut at %d, a record boundary: %v", k, err)
		case !atBoundary && !errors.Is(err, ErrTorn):
			t.Fatalf("cut at %d, inside a record: err %v, want ErrTorn", k, err)
		}
	}
}

// TestReadGarbled flips each byte of a journal in turn: the result is
// always an error, with a prefix of the records, and never Committed.
func TestReadGarbled(t *testing.T) {
	recs := sample(1)
	file, ends := encode(t, recs)
	for i := range file {
		g := bytes.Clone(file)
		g[i] ^= 0x5a
		got, st, err := decode(g)
		if err == nil {
			t.Fatalf("byte %d flipped: no error", i)
		}
		var de *DecodeError
		if !errors.As(err, &de) {
			t.Fatalf("byte %d flipped: %T, want *DecodeError", i, err)
		}
		if i < len(magic) && !errors.Is(err, ErrCorrupt) {
			t.Errorf("byte %d of the header flipped: %v, want ErrCorrupt", i, err)
		}
		if d := cmp.Diff(recs[:len(got)], got, equate); d != "" {
			t.Fatalf("byte %d flipped: not a prefix (-want +got):\n%s", i, d)
		}
		if len(got) > 0 && int(de.Offset) != ends[len(got)-1] || de.Ignored != int64(len(g))-de.Offset {
			t.Fatalf("byte %d flipped: %+v after %d records", i, de, len(got))
		}
		if st == Committed {
			t.Fatalf("byte %d flipped: state committed", i)
		}
	}
}

// TestRecordOrder: records in an order act never writes are refused by
// the Writer and reported as ErrCorrupt by Read, with the records before.
func TestRecordOrder(t *testing.T) {
	begin := Begin{ActionID: "a", Steps: changes(2)}
	for _, tc := range []struct {
		name string
		recs []Record
	}{
		{"step before begin", []Record{Step{N: 0}}},
		{"commit before begin", []Record{Commit{}}},
		{"second begin", []Record{begin, begin}},
		{"step out of range", []Record{begin, Step{N: 2}}},
		{"negative step", []Record{begin, Step{N: -1}}},
		{"step after commit", []Record{begin, Commit{}, Step{N: 0}}},
		{"revert after commit", []Record{begin, Commit{}, Revert{}}},
		{"commit after revert", []Record{begin, Revert{Reason: "x"}, Commit{}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			file, _ := encode(t, tc.recs)
			got, _, err := decode(file)
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("decode: %v, want ErrCorrupt", err)
			}
			if d := cmp.Diff(tc.recs[:len(tc.recs)-1], got, equate); d != "" {
				t.Errorf("records before the bad one mismatch (-want +got):\n%s", d)
			}
			if _, ok := tc.recs[0].(Begin); !ok {
				return // a Writer always starts with Begin
			}
			w, err := Create(filepath.Join(t.TempDir(), "j"), begin)
			if err != nil {
				t.Fatal(err)
			}
			defer w.Close()
			if err := w.Write(tc.recs[1:]...); err == nil {
				t.Fatal("Write accepted the records")
			}
		})
	}
	for name, data := range map[string][]byte{
		"not a journal": []byte("hello, world\n"),
		"other version": append([]byte("ACTJNL\x00\x02"), 0),
		"unknown kind":  frame(9, []byte("{}")),
		"bad json":      frame(byte(KindBegin), []byte("{")),
	} {
		if _, _, err := decode(data); !errors.Is(err, ErrCorrupt) {
			t.Errorf("%s: %v, want ErrCorrupt", name, err)
		}
	}
}

// frame is a header and one record of kind k with payload p, checksum right.
func frame(k byte, p []byte) []byte {
	buf := bytes.Clone(magic)
	buf = append(buf, 0, 0, 0, 0, 0, 0, 0, 0, k)
	buf = append(buf, p...)
	body := buf[len(magic)+frameHeader:]
	putLE(buf[len(magic):], uint32(len(body)))
	putLE(buf[len(magic)+4:], crcOf(buf[len(magic):len(magic)+4], body))
	return buf
}

func putLE(b []byte, v uint32) {
	b[0], b[1], b[2], b[3] = byte(v), byte(v>>8), byte(v>>16), byte(v>>24)
}

// TestOpenCutsTornTail: recovery opens a journal that ends in half a
// record, the torn part is cut off, and what it appends reads back clean.
func TestOpenCutsTornTail(t *testing.T) {
	path := filepath.Join(t.TempDir(), "j")
	recs := sample(2)
	file, ends := encode(t, recs[:4])
	torn := file[:ends[2]+5] // Begin, Step 0, Step 0 done, 5 bytes of Step 1
	if err := os.WriteFile(path, torn, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, st, err := Read(path); !errors.Is(err, ErrTorn) || st != Started {
		t.Fatalf("Read torn: %v, %v; want ErrTorn, started", st, err)
	}
	w, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Write(Step{N: 5}); err == nil {
		t.Error("Open's Writer accepted a step that was never planned")
	}
	if err := w.Append(Revert{Reason: "crash"}); err != nil {
		t.Fatal(err)
	}
	w.Close()
	got, st, err := Read(path)
	if err != nil || st != Reverted {
		t.Fatalf("Read after Open+Revert: %v, %v; want reverted, nil", st, err)
	}
	want := append(recs[:3:3], Revert{Reason: "crash"})
	if d := cmp.Diff(want, got, equate); d != "" {
		t.Errorf("records mismatch (-want +got):\n%s", d)
	}

	for name, data := range map[string][]byte{
		"corrupt":     []byte("not a journal"),
		"no begin":    magic[:5],
		"header only": magic,
	} {
		p := filepath.Join(t.TempDir(), "j")
		os.WriteFile(p, data, 0o600)
		if _, err := Open(p); err == nil {
			t.Errorf("Open %s journal succeeded", name)
		}
		if b, _ := os.ReadFile(p); !bytes.Equal(b, data) {
			t.Errorf("Open %s journal changed it", name)
		}
	}
}

// FuzzJournalDecode: decoding never panics; any prefix of the input
// decodes to a prefix of the input's records; a journal reads as committed
// only if it ends with Commit; and a clean decode re-encodes to records
// that decode the same. Seeds: testdata/fuzz/FuzzJournalDecode.
func FuzzJournalDecode(f *testing.F) {
	file, _ := encode(f, sample(2))
	f.Add(file, uint16(len(file)-3))
	f.Fuzz(func(t *testing.T, data []byte, cut uint16) {
		recs, st, err := decode(data)
		if err != nil {
			var de *DecodeError
			if !errors.As(err, &de) || de.Offset < 0 || de.Offset > int64(len(data)) || de.Ignored != int64(len(data))-de.Offset {
				t.Fatalf("error %v (%T) does not say where decoding stopped", err, err)
			}
		}
		if st != stateOf(recs) {
			t.Fatalf("state %v for records ending %v", st, recs)
		}
		k := int(cut) % (len(data) + 1)
		pre, _, _ := decode(data[:k])
		if len(pre) > len(recs) || !cmp.Equal(recs[:len(pre)], pre, equate) {
			t.Fatalf("prefix of %d bytes decodes to %d records, not a prefix of the %d records", k, len(pre), len(recs))
		}
		if err == nil {
			again, _ := encode(t, recs)
			back, st2, err := decode(again)
			if err != nil || st2 != st || !cmp.Equal(recs, back, equate) {
				t.Fatalf("re-encoded records decode to %v, %v, %v", back, st2, err)
			}
		}
	})
}

// helperEnv selects the role a re-executed test binary plays; see
// TestHelperProcess.
const helperEnv = "ACT_ROLLBACK_TEST_HELPER"

// TestHelperProcess is not a test: re-executed with helperEnv set to
// "write PATH N", it writes the journal sample(N) as a promotion would:
// Create, print "created", then a Step record at a time (every tenth made
// durable), Commit, and print "done".
func TestHelperProcess(t *testing.T) {
	args := strings.Fields(os.Getenv(helperEnv))
	if len(args) != 3 || args[0] != "write" {
		t.Skip("helper process only")
	}
	n, _ := strconv.Atoi(args[2])
	recs := sample(n)
	w, err := Create(args[1], recs[0].(Begin))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	fmt.Println("created")
	for i, r := range recs[1:] {
		if i%10 == 9 {
			err = w.Append(r)
		} else {
			err = w.Write(r)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
	}
	fmt.Println("done")
	os.Exit(0)
}

// TestKillWriter kills a journal writer with SIGKILL at random instants —
// mostly while it appends, sometimes while it starts or creates the file:
// every time, Read returns a clean prefix of what the writer meant to
// write, in the state that prefix reaches, and at worst ErrTorn.
func TestKillWriter(t *testing.T) {
	const steps, runs = 150, 25
	want := sample(steps)
	// start runs a writer; with waitCreated, it returns once the writer
	// has created its journal.
	start := func(path string, waitCreated bool) (*exec.Cmd, *bufio.Reader) {
		cmd := exec.Command(os.Args[0], "-test.run=^TestHelperProcess$")
		cmd.Env = append(os.Environ(), fmt.Sprintf("%s=write %s %d", helperEnv, path, steps))
		cmd.Stderr = os.Stderr
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		r := bufio.NewReader(out)
		if waitCreated {
			expect(t, r, "created")
		}
		return cmd, r
	}
	// Uninterrupted runs measure how long a writer starts and appends: the
	// fastest of three, as the first run of a binary can be much slower.
	startup, appending := time.Hour, time.Hour
	for range 3 {
		t0 := time.Now()
		cmd, out := start(filepath.Join(t.TempDir(), "j"), true)
		t1 := time.Now()
		expect(t, out, "done") // not Wait: a -race binary sleeps 1 s at exit
		startup, appending = min(startup, t1.Sub(t0)), min(appending, time.Since(t1))
		if err := cmd.Wait(); err != nil {
			t.Fatalf("writer: %v", err)
		}
	}

	// The seed picks the kill instants; replaying it replays them (the
	// writer's own pace still varies).
	seed := testSeed(t)
	rng := rand.New(rand.NewPCG(seed, 1))
	partial := 0
	for i := range runs {
		path := filepath.Join(t.TempDir(), "j")
		early := i%5 == 0 // kill while starting or creating the journal
		cmd, _ := start(path, !early)
		delay := time.Duration(rng.Int64N(int64(appending)))
		if early {
			delay = time.Duration(rng.Int64N(int64(startup)))
		}
		// The wait is what is tested: the kill lands at a random instant
		// of the writer's work, not after any event it reports.
		time.Sleep(delay)
		cmd.Process.Signal(syscall.SIGKILL)
		cmd.Wait()
		got, st, err := Read(path)
		if errors.Is(err, os.ErrNotExist) {
			continue // killed before Create: no journal, nothing promised
		}
		if err != nil && !errors.Is(err, ErrTorn) {
			t.Fatalf("run %d, killed after %v: %v", i, delay, err)
		}
		if len(got) > len(want) || !cmp.Equal(want[:len(got)], got, equate) {
			t.Fatalf("run %d, killed after %v: %d records, not a prefix of the %d written", i, delay, len(got), len(want))
		}
		if st != stateOf(got) {
			t.Fatalf("run %d: state %v after %d records", i, st, len(got))
		}
		if len(got) > 1 && len(got) < len(want) {
			partial++
		}
	}
	t.Logf("%d of %d writers killed part-way (start-up %v, appending %v)", partial, runs, startup, appending)
	if partial == 0 {
		t.Errorf("no writer was killed part-way: the test proved nothing")
	}
}

// testSeed is the seed of a randomized test: ACT_TEST_SEED when set (to
// replay a run), else the clock. It is logged either way, so a failure can
// be replayed.
func testSeed(t *testing.T) uint64 {
	t.Helper()
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("ACT_TEST_SEED"); s != "" {
		var err error
		if seed, err = strconv.ParseUint(s, 10, 64); err != nil {
			t.Fatalf("ACT_TEST_SEED=%q: not a seed (a decimal number below 2^64)", s)
		}
	}
	t.Logf("seed %d (ACT_TEST_SEED=%d replays it)", seed, seed)
	return seed
}

// expect reads a line from a writer and fails unless it is want.
func expect(t *testing.T, r *bufio.Reader, want string) {
	t.Helper()
	if line, err := r.ReadString('\n'); line != want+"\n" {
		t.Fatalf("writer said %q, %v; want %q", line, err, want)
	}
}

func crcOf(length, body []byte) uint32 {
	return crc32.Update(crc32.Checksum(length, castagnoli()), castagnoli(), body)
}
