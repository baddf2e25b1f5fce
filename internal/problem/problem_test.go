package problem

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestFieldPathRoundTrip(t *testing.T) {
	for _, tt := range []struct {
		elems []string
		want  string
	}{
		{[]string{"scope", "filesystem", "paths", "0"}, "scope.filesystem.paths[0]"},
		{[]string{"preconditions", "sha256", "/tmp/a b"}, `preconditions.sha256["/tmp/a b"]`},
		{[]string{"steps", "1", "steps", "0", "operation", "argv", "2"}, "steps[1].steps[0].operation.argv[2]"},
		{[]string{"operation", "set", "a.b]c"}, `operation.set["a.b]c"]`},
		{[]string{"max-runs"}, "max-runs"},
	} {
		got := FieldPath(tt.elems...)
		if got != tt.want {
			t.Errorf("FieldPath(%q) = %q, want %q", tt.elems, got, tt.want)
		}
		if diff := cmp.Diff(tt.elems, SplitFieldPath(got)); diff != "" {
			t.Errorf("SplitFieldPath(%q) mismatch (-want +got):\n%s", got, diff)
		}
	}
}

func TestErrorFormat(t *testing.T) {
	p := Problem{Rule: "scope.path-not-absolute", Field: "scope.filesystem.paths[0]", File: "d.yaml", Line: 3, Column: 7, Message: "the path \"tmp\" is not absolute"}
	want := `d.yaml:3:7: scope.path-not-absolute: scope.filesystem.paths[0]: the path "tmp" is not absolute`
	if got := p.Error(); got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
}
