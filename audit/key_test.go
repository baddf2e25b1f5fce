package audit

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"
)

// TestKeyBeforeFirstRecord: the key exists from the first use of the log
// directory, before any record, and the first record appended later is
// signed by that same key; an empty log verifies as 0 records and its
// checkpoint is the signed one of size 0, which the log then extends.
func TestKeyBeforeFirstRecord(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "audit")
	if err := EnsureKey(dir); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(filepath.Join(dir, KeyFile))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("key: %v %v", fi, err)
	}
	pinned, noteKey, err := Keys(dir)
	if err != nil {
		t.Fatal(err)
	}
	pub, err := ParsePublicKeyPEM(pinned)
	if err != nil {
		t.Fatal(err)
	}
	r := mustVerify(t, dir, VerifyOptions{PublicKey: pub})
	if r.Records != 0 || r.KeyID != KeyID(pub) {
		t.Errorf("verify of the empty log: %+v", r)
	}
	cp, err := CheckpointText(dir, VerifyOptions{})
	if err != nil {
		t.Fatal(err)
	}
	v, err := note.NewVerifier(noteKey)
	if err != nil {
		t.Fatal(err)
	}
	n, err := note.Open([]byte(cp), note.VerifierList(v))
	if err != nil || n.Text != HostOrigin()+"\n0\n47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=\n" {
		t.Fatalf("checkpoint of the empty log: %q %v", cp, err)
	}
	mustVerify(t, dir, VerifyOptions{Since: []byte(cp), PublicKey: pub})

	// Later, the first records: signed by the pinned key.
	l, err := Open(dir, HostOrigin())
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if _, err := l.Append(context.Background(), testEvent(i)); err != nil {
			t.Fatal(err)
		}
	}
	l.Close()
	r = mustVerify(t, dir, VerifyOptions{PublicKey: pub, Since: []byte(cp)})
	if r.Records != 3 || r.Since != 0 {
		t.Errorf("verify against the pinned key: %+v", r)
	}
	if again, noteKey2, _ := Keys(dir); !bytes.Equal(again, pinned) || noteKey2 != noteKey {
		t.Errorf("the key changed with the first record: %s %s", again, noteKey2)
	}
}

// TestSinceEmpty: a signed checkpoint of size 0 must carry the empty
// tree's hash, and an empty log does not extend a checkpoint of records.
func TestSinceEmpty(t *testing.T) {
	dir := fill(t, 2)
	b, _ := os.ReadFile(filepath.Join(dir, KeyFile))
	priv, err := parsePrivateKeyPEM(b)
	if err != nil {
		t.Fatal(err)
	}
	l := &Log{origin: testOrigin, priv: priv, pub: priv.Public().(ed25519.PublicKey)}
	if err := l.initNote(); err != nil {
		t.Fatal(err)
	}
	forged, err := l.sign(0, tlog.Hash{1})
	if err != nil {
		t.Fatal(err)
	}
	var p *Problem
	if _, err := Verify(dir, VerifyOptions{Since: []byte(forged)}); !errors.As(err, &p) || p.Kind != Altered {
		t.Errorf("a size-0 checkpoint of another hash: %v", err)
	}
	cp, err := CheckpointText(dir, VerifyOptions{})
	if err != nil {
		t.Fatal(err)
	}
	empty := filepath.Join(t.TempDir(), "audit")
	if err := os.MkdirAll(empty, 0o700); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{KeyFile, PublicKeyFile} {
		b, _ := os.ReadFile(filepath.Join(dir, f))
		os.WriteFile(filepath.Join(empty, f), b, 0o600)
	}
	if _, err := Verify(empty, VerifyOptions{Since: []byte(cp)}); !errors.As(err, &p) || p.Kind != Truncated {
		t.Errorf("an empty log against a checkpoint of 2 records: %v", err)
	}
}

// TestMakeKeyExclusive: makers racing without the lock still leave one
// key, the first linked, and no temporary file.
func TestMakeKeyExclusive(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, KeyFile)
	var wg sync.WaitGroup
	got := make([][]byte, 8)
	for i := range got {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := makeKey(path); err != nil {
				t.Error(err)
			}
			got[i], _ = os.ReadFile(path)
		}()
	}
	wg.Wait()
	for i := range got {
		if !bytes.Equal(got[i], got[0]) {
			t.Fatalf("a key was replaced: %d saw another", i)
		}
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Errorf("left in the directory: %v", ents)
	}
}

// TestEnsureKeyConcurrent: first uses at once, each as its own process
// would (EnsureKey, or Open and an append), agree on one key.
func TestEnsureKeyConcurrent(t *testing.T) {
	for round := range 20 {
		dir := filepath.Join(t.TempDir(), "audit")
		var wg sync.WaitGroup
		keys := make([][]byte, 8)
		errs := make([]error, 8)
		for i := range keys {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if i%2 == 0 {
					if errs[i] = EnsureKey(dir); errs[i] == nil {
						keys[i], _, errs[i] = Keys(dir)
					}
					return
				}
				if errs[i] = os.MkdirAll(dir, 0o700); errs[i] != nil {
					return
				}
				l, err := Open(dir, testOrigin)
				if err != nil {
					errs[i] = err
					return
				}
				defer l.Close()
				if _, errs[i] = l.Append(context.Background(), testEvent(i)); errs[i] == nil {
					keys[i], errs[i] = PublicKeyPEM(l.PublicKey())
				}
			}()
		}
		wg.Wait()
		for i := range keys {
			if errs[i] != nil {
				t.Fatalf("round %d, user %d: %v", round, i, errs[i])
			}
			if !bytes.Equal(keys[i], keys[0]) {
				t.Fatalf("round %d: two keys:\n%s\n%s", round, keys[0], keys[i])
			}
		}
		ents, _ := os.ReadDir(dir)
		for _, e := range ents {
			if e.Name()[0] == '.' {
				t.Errorf("round %d: left behind %s", round, e.Name())
			}
		}
		mustVerify(t, dir, VerifyOptions{})
	}
}

// TestEnsureKeyKeepsRecords: EnsureKey never makes a key for a log that
// holds records, and writes nothing where key.pub exists.
func TestEnsureKeyKeepsRecords(t *testing.T) {
	dir := fill(t, 2)
	os.Remove(filepath.Join(dir, KeyFile))
	os.Remove(filepath.Join(dir, PublicKeyFile))
	if err := EnsureKey(dir); !errors.Is(err, ErrKeyMissing) {
		t.Fatalf("EnsureKey over records: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, KeyFile)); err == nil {
		t.Fatal("a key was made over signed records")
	}
	// A copy of a log, its private key elsewhere: read-only use.
	ro := fill(t, 1)
	os.Remove(filepath.Join(ro, KeyFile))
	if err := os.Chmod(ro, 0o500); err != nil {
		t.Fatal(err)
	}
	defer os.Chmod(ro, 0o700)
	if err := EnsureKey(ro); err != nil {
		t.Fatalf("EnsureKey where key.pub exists: %v", err)
	}
	if _, err := os.Stat(filepath.Join(ro, KeyFile)); err == nil {
		t.Fatal("a key was made beside key.pub")
	}
}
