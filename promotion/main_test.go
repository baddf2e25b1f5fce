// Package promotion tests act's promotion and rollback as a program, the
// way a person meets them: kill -9 at every crash point of apply and
// rollback (the crash matrices), random trees rolled back with nothing
// lost, each operation round-tripped, concurrent promotions, an
// interrupt, a terminal, and the witnesses of the audit log. Its tests
// only; a package of its own so that its share of the suite runs beside
// the root package's rather than inside its time.
package promotion

import (
	"os"
	"testing"

	"github.com/act-project/act/internal/clitest"
)

func TestMain(m *testing.M) {
	os.Exit(clitest.Main(m, "../testdata/testcli", raceEnabled))
}

// raceEnabled is whether this test binary was built with -race
// (race_test.go).
var raceEnabled bool
