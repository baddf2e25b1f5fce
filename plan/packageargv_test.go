package plan

import (
	"slices"
	"testing"

	"github.com/act-project/act/descriptors"
)

// TestPackageArgvDev: development dependencies, asked with dev: true or
// the manager's own flag among the packages (npm -D or --save-dev, go
// -tool), become the manager's flag, once, before the packages.
func TestPackageArgvDev(t *testing.T) {
	for _, tc := range []struct {
		t    descriptors.ActionType
		op   descriptors.PackageOp
		want []string
	}{
		{descriptors.PackageInstall, descriptors.PackageOp{Manager: "npm", Packages: []string{"-D", "kleur"}}, []string{"npm", "install", "--no-audit", "--no-fund", "--save-dev", "kleur"}},
		{descriptors.PackageInstall, descriptors.PackageOp{Manager: "npm", Packages: []string{"kleur", "--save-dev"}}, []string{"npm", "install", "--no-audit", "--no-fund", "--save-dev", "kleur"}},
		{descriptors.PackageInstall, descriptors.PackageOp{Manager: "npm", Packages: []string{"kleur"}, Dev: true}, []string{"npm", "install", "--no-audit", "--no-fund", "--save-dev", "kleur"}},
		{descriptors.PackageInstall, descriptors.PackageOp{Manager: "npm", Packages: []string{"kleur"}}, []string{"npm", "install", "--no-audit", "--no-fund", "kleur"}},
		{descriptors.PackageRemove, descriptors.PackageOp{Manager: "npm", Packages: []string{"-D", "kleur"}}, []string{"npm", "uninstall", "kleur"}},
		{descriptors.PackageInstall, descriptors.PackageOp{Manager: "go", Packages: []string{"-tool", "golang.org/x/tools/cmd/stringer"}}, []string{"go", "get", "-tool", "golang.org/x/tools/cmd/stringer"}},
		{descriptors.PackageRemove, descriptors.PackageOp{Manager: "go", Packages: []string{"golang.org/x/tools/cmd/stringer"}, Dev: true}, []string{"go", "get", "-tool", "golang.org/x/tools/cmd/stringer@none"}},
	} {
		if got := packageArgv(tc.t, tc.op); !slices.Equal(got, tc.want) {
			t.Errorf("%s %+v: %q, want %q", tc.t, tc.op, got, tc.want)
		}
	}
}
