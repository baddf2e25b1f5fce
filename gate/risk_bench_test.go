package gate

import (
	"fmt"
	"os"
	"testing"

	"github.com/act-project/act/descriptors"
	"github.com/act-project/act/diff"
)

// BenchmarkAssess grades a plan of 10,000 written files, as a package
// manager's install makes: the cost is per change and per home the rules
// know.
func BenchmarkAssess(b *testing.B) {
	mode := "0644"
	changes := make([]diff.Change, 10000)
	for i := range changes {
		changes[i] = diff.Change{Path: fmt.Sprintf("/home/u/proj/node_modules/p%d/index.js", i), Kind: diff.Create, Type: diff.TypeFile, ModeAfter: &mode}
	}
	d := &descriptors.Descriptor{ActionType: descriptors.FileWrite, RiskLevel: descriptors.RiskLow}
	rules := RiskRules{Homes: descriptors.HomeRoots("/home/u"), UID: uint32(os.Geteuid()),
		InWorkspace: func(string) bool { return true }, PathDirs: []string{"/usr/local/bin", "/usr/bin", "/bin"}}
	for b.Loop() {
		Assess(d, changes, rules)
	}
}
