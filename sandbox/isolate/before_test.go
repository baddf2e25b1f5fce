package isolate

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestBefore: Run calls Spec.Before once init has what it mounts; the
// mounts are made meanwhile (the scope's overlay is in init's mount table
// while Before waits) and the command runs only after Before returned
// nil. Before's error is Run's, and the command never ran. The wall clock
// starts with the command: a Before longer than the cap hits nothing.
func TestBefore(t *testing.T) {
	requireIsolation(t)
	ctx := context.Background()
	for _, disk := range []int64{16, 0} {
		t.Run(fmt.Sprintf("disk-%d", disk), func(t *testing.T) {
			t.Run("mounts-meanwhile", func(t *testing.T) {
				sc := newScope(t, t.TempDir(), map[string]string{"a": "a\n"})
				w := Prestart(false)
				pid, _ := warmInit(t, w)
				calls := 0
				res, err := Run(ctx, Spec{Argv: []string{"sh", "-c", "echo ran > ran"}, Env: pathEnv, Workdir: sc.Path,
					Scopes: []Scope{sc}, Limits: Limits{WallMs: 1000, DiskMB: disk}, Warm: w,
					Before: func() error {
						calls++
						if err := mountedAs(pid, sc.Path, "overlay"); err != nil {
							return err
						}
						// Not a wait for anything: a Before longer than the
						// wall clock cap is the case under test (it must
						// not count), and a command not held back by it
						// would have written its file meanwhile. The cap
						// leaves a loaded machine time to run the command.
						time.Sleep(1500 * time.Millisecond)
						if _, err := os.Lstat(filepath.Join(sc.Upper, "ran")); err == nil {
							return errors.New("the command ran before Before returned")
						}
						return nil
					}})
				if err != nil {
					t.Fatal(err)
				}
				mustExit(t, res, 0)
				if res.CapHit != nil || calls != 1 || res.Usage.Wall >= 1500*time.Millisecond {
					t.Errorf("cap hit %v, Before called %d times, wall clock %v; want none, once and the command's own", res.CapHit, calls, res.Usage.Wall)
				}
				if got := readFile(t, filepath.Join(sc.Upper, "ran")); got != "ran\n" {
					t.Errorf("the command's file holds %q", got)
				}
			})
			t.Run("refused", func(t *testing.T) {
				sc := newScope(t, t.TempDir(), nil)
				w := Prestart(false)
				pid, _ := warmInit(t, w)
				refused := errors.New("refused by the caller")
				res, err := Run(ctx, Spec{Argv: []string{"sh", "-c", "echo ran > ran"}, Env: pathEnv, Workdir: sc.Path,
					Scopes: []Scope{sc}, Limits: Limits{WallMs: 20_000, DiskMB: disk}, Warm: w,
					Before: func() error { return refused }})
				if !errors.Is(err, refused) {
					t.Fatalf("Run: %v, %v; want Before's error", res, err)
				}
				reaped(t, pid)
				if _, err := os.Lstat(filepath.Join(sc.Upper, "ran")); err == nil {
					t.Error("the command ran although Before refused")
				}
			})
		})
	}
}

// mountedAs waits up to hangGuard (a liveness bound) for a filesystem
// of type fs on path in the mount table of process pid.
func mountedAs(pid int, path, fs string) error {
	var last []byte
	for deadline := time.Now().Add(hangGuard); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/mountinfo", pid))
		if err != nil {
			return err
		}
		last = b
		for _, line := range strings.Split(string(b), "\n") {
			f := strings.Fields(line)
			for i, x := range f {
				if x == "-" && i+1 < len(f) && len(f) > 4 && f[4] == path && f[i+1] == fs {
					return nil
				}
			}
		}
	}
	return fmt.Errorf("no %s on %s in the mount table of process %d:\n%s", fs, path, pid, last)
}

// TestLargeSpec: a spec of 1.6 MiB (an environment of 100 values of 16
// KiB) reaches the command whole: init grows its buffer as the spec
// comes, and keeps each value it stores apart from it.
func TestLargeSpec(t *testing.T) {
	requireIsolation(t)
	env := append([]string(nil), pathEnv...)
	for i := range 100 {
		env = append(env, fmt.Sprintf("V%d=%s", i, strings.Repeat(string(rune('a'+i%26)), 16<<10)))
	}
	res, err := Run(context.Background(), Spec{Argv: []string{"sh", "-c", `echo ${#V0} ${#V99} ${V99%"${V99#?}"}`}, Env: env,
		Limits: Limits{WallMs: 20_000, DiskMB: 16}, Warm: Prestart(false)})
	if err != nil {
		t.Fatal(err)
	}
	mustExit(t, res, 0)
	if got := string(res.Stdout); got != "16384 16384 v\n" {
		t.Errorf("the command saw %q of its environment", got)
	}
}
