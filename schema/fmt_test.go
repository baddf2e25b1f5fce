package schema

import (
	"testing"

	"cuelang.org/go/cue/format"
)

// TestCUEFormatted keeps descriptor.cue in cue fmt's layout.
func TestCUEFormatted(t *testing.T) {
	b, err := format.Source([]byte(descriptorCUE))
	if err != nil {
		t.Fatal(err)
	}
	if string(b) != descriptorCUE {
		t.Errorf("descriptor.cue is not formatted as cue fmt would; want:\n%s", b)
	}
}
