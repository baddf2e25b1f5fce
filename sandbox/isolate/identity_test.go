package isolate

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestOwnIdentity: as root, the command runs as the sandbox's own
// identity. Root's files outside the scope — a 0600 file, the shadow
// file, root's home — are closed to it by kernel permission, with no path
// hidden (Spec.Hide is empty); root's 0600 file inside the scope is its
// own, and what it writes there lands in the layer owned by host uid 0,
// as if root had written it. Both with a disk cap (the layer seeded and
// copied out through an idmapped mount) and without (the overlay's upper
// dir itself idmapped).
func TestOwnIdentity(t *testing.T) {
	requireIsolation(t)
	if os.Geteuid() != 0 {
		t.Skip("the sandbox has an identity of its own only when act runs as root")
	}
	for _, disk := range []int64{0, 8} {
		t.Run(fmt.Sprintf("disk=%d", disk), func(t *testing.T) {
			base, err := os.MkdirTemp("/var/tmp", "act-identity-")
			if err != nil {
				t.Skipf("no writable /var/tmp: %v", err)
			}
			t.Cleanup(func() { RemoveWorkDir(base) })
			if err := os.Chmod(base, 0o755); err != nil {
				t.Fatal(err)
			}
			secret := filepath.Join(base, "secret")
			if err := os.WriteFile(secret, []byte("root's secret\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			s := newScope(t, base, map[string]string{"own": "mine\n"})
			if err := os.Chmod(filepath.Join(s.Path, "own"), 0o600); err != nil {
				t.Fatal(err)
			}
			script := fmt.Sprintf(`cat %[1]s; cat /etc/shadow; ls /root; cd %[2]s && cat own && echo more >> own && echo new > made && mkdir d && id -u`, secret, s.Path)
			res := sh(t, script, []Scope{s}, Limits{DiskMB: disk})
			out, errs := string(res.Stdout), string(res.Stderr)
			if strings.Contains(out, "root's secret") || strings.Contains(out, "root:") {
				t.Errorf("the command read root's files:\n%s", out)
			}
			for _, p := range []string{secret + ":", "/etc/shadow:", "'/root':"} {
				if !strings.Contains(errs, p+" Permission denied") {
					t.Errorf("no permission error for %s:\n%s", p, errs)
				}
			}
			if out != "mine\n0\n" {
				t.Errorf("stdout %q, want root's scope file and uid 0 inside", out)
			}
			mustExit(t, res, 0)
			for _, n := range []string{"own", "made", "d"} {
				fi, err := os.Lstat(filepath.Join(s.Upper, n))
				if err != nil {
					t.Fatal(err)
				}
				if st := fi.Sys().(*syscall.Stat_t); st.Uid != 0 || st.Gid != 0 {
					t.Errorf("layer %s owned by %d:%d on the host, want 0:0", n, st.Uid, st.Gid)
				}
			}
			if got := readFile(t, filepath.Join(s.Upper, "own")); got != "mine\nmore\n" {
				t.Errorf("layer own = %q", got)
			}
		})
	}
}
