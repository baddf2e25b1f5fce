package descriptors

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// canonical is what a plan keeps of a descriptor: its JSON with sorted
// keys, and the sha256 of that.
func canonical(t *testing.T, d *Descriptor) ([]byte, string) {
	t.Helper()
	b, err := json.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatal(err)
	}
	if b, err = json.Marshal(v); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(b)
	return b, hex.EncodeToString(sum[:])
}

// TestLoadSaved proves that a saved descriptor decodes, without the schema,
// to what Load gave for the original, for every example; and that bytes
// that do not match the recorded digest are refused.
func TestLoadSaved(t *testing.T) {
	files, err := filepath.Glob("../examples/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no examples: %v", err)
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		want, _, probs := Load(f, data)
		if probs != nil {
			t.Fatalf("%s: %v", f, probs)
		}
		saved, digest := canonical(t, want)
		got, err := LoadSaved(saved, digest)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if diff := cmp.Diff(want, got, cmp.Exporter(func(reflect.Type) bool { return true })); diff != "" {
			t.Errorf("%s: LoadSaved differs from Load (-want +got):\n%s", f, diff)
		}

		tampered := []byte(strings.Replace(string(saved), `"risk_level":"`, `"risk_level":"X`, 1))
		if _, err := LoadSaved(tampered, digest); err == nil || !strings.Contains(err.Error(), "does not match its digest") {
			t.Errorf("%s: tampered bytes: got %v, want a digest mismatch", f, err)
		}
	}
}
