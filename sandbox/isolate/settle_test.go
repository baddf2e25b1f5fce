package isolate

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// TestMain waits, before the test binary exits, for the sandboxes the
// tests ran to end (Settle): their cgroups are removed then.
func TestMain(m *testing.M) {
	code := m.Run()
	Settle()
	os.Exit(code)
}

// TestReportedWhole: a run with a disk cap returns once init has reported
// it whole (every other process killed and reaped, the layer copied out),
// with the CPU time and peak RSS init reported; Settle then finds init
// reaped and the run's cgroups removed. A run without the disk cap, whose
// init does not kill what is left, is waited for to the end.
func TestReportedWhole(t *testing.T) {
	requireIsolation(t)
	for _, diskMB := range []int64{4, 0} {
		t.Run(fmt.Sprintf("disk_mb=%d", diskMB), func(t *testing.T) {
			sc := newScope(t, t.TempDir(), map[string]string{"f": "x\n"})
			res := sh(t, "cd "+sc.Path+" && i=0; while [ $i -lt 50000 ]; do i=$((i+1)); done; echo done > f", []Scope{sc}, Limits{DiskMB: diskMB})
			mustExit(t, res, 0)
			if res.Usage.CPU <= 0 || res.Usage.MaxRSSKiB <= 0 {
				t.Errorf("usage %+v: want the command's CPU time and peak RSS", res.Usage)
			}
			if got := readFile(t, filepath.Join(sc.Upper, "f")); got != "done\n" {
				t.Errorf("the layer holds %q, want the command's write", got)
			}
			Settle()
			for ctl, d := range v1Dirs() {
				left, _ := filepath.Glob(filepath.Join(d, fmt.Sprintf("act-sandbox-%d-*", os.Getpid())))
				if len(left) > 0 {
					t.Errorf("%s: cgroups left after Settle: %v", ctl, left)
				}
			}
		})
	}
}

func TestReportedWholeMessages(t *testing.T) {
	for _, c := range []struct {
		lines []string
		want  bool
	}{
		{[]string{"D1 2 3 0", "R100 2000", "S0"}, true},
		{[]string{"S0"}, false},                         // no disk cap: processes may be left
		{[]string{"R100 2000"}, false},                  // no status
		{[]string{"CCopy failed", "R1 2", "S0"}, false}, // a failed copy-out
		{[]string{"Esetup", "R1 2", "S0"}, false},
		{nil, false},
	} {
		if got := reportedWhole(c.lines); got != c.want {
			t.Errorf("reportedWhole(%q) = %v, want %v", c.lines, got, c.want)
		}
	}
}
