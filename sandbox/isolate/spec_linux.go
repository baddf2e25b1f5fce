package isolate

import (
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
)

// encode serializes spec for nsexec.c: key NUL value NUL records.
func encode(spec Spec, probe bool) ([]byte, error) {
	if len(spec.Argv) == 0 && !probe {
		return nil, errors.New("sandbox: empty argv")
	}
	var b []byte
	put := func(k, v string) { b = append(append(append(append(b, k...), 0), v...), 0) }
	bad := func(what, v string) error {
		return fmt.Errorf("sandbox: %s %q: not an absolute clean path without NUL", what, v)
	}
	abs := func(p string) bool { return filepath.IsAbs(p) && filepath.Clean(p) == p && !strings.ContainsRune(p, 0) }
	for _, a := range spec.Argv {
		if strings.ContainsRune(a, 0) {
			return nil, errors.New("sandbox: argv contains NUL")
		}
		put("arg", a)
	}
	for _, e := range spec.Env {
		if strings.ContainsRune(e, 0) || !strings.Contains(e, "=") {
			return nil, fmt.Errorf("sandbox: bad environment entry %q", e)
		}
		put("env", e)
	}
	dir := spec.Workdir
	if dir == "" {
		dir = "/"
	}
	if !abs(dir) {
		return nil, bad("workdir", dir)
	}
	put("dir", dir)
	put("host", "act-sandbox")
	for _, s := range spec.Scopes {
		// With a disk cap the work dirs are on the sandbox's tmpfs.
		work := s.Work != "" || spec.Limits.DiskMB <= 0
		for _, p := range []struct{ what, v string }{{"scope", s.Path}, {"upper dir", s.Upper}, {"work dir", s.Work}} {
			if !abs(p.v) && (p.what != "work dir" || work) {
				return nil, bad(p.what, p.v)
			}
		}
		put("scope", s.Path)
		put("lower", s.Path)
		put("upper", s.Upper)
		if work {
			put("work", s.Work)
		}
	}
	for _, h := range spec.Hide {
		if !abs(h) {
			return nil, bad("path to hide", h)
		}
		put("hide", h)
	}
	if spec.AllowNetwork {
		put("net", "1")
	}
	if spec.Loopback {
		put("loopback", "1")
	}
	if probe {
		put("probe", "1")
	}
	return b, nil
}

// rlimits are the per-process limits the child sets on the command.
type rlimits struct {
	cpuS, nproc int64
}

// append adds the limits to the spec b, and the size of the disk cap's
// tmpfs (0: no tmpfs; the layers are written in place).
func (r rlimits) append(b []byte, diskBytes int64) []byte {
	put := func(k string, v int64) {
		if v > 0 {
			b = append(append(append(append(b, k...), 0), strconv.FormatInt(v, 10)...), 0)
		}
	}
	put("cpu_s", r.cpuS)
	put("nproc", r.nproc)
	put("disk", diskBytes)
	return b
}
