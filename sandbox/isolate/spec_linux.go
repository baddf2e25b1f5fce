package isolate

import (
	"bytes"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// specParts is a spec serialized for the sandbox child, key NUL value NUL
// records, in its two parts (nsexec_spec.c's act_read_spec): what init
// mounts, and what it runs.
type specParts struct {
	mount, command []byte
}

// put appends the record k=v to b.
func put(b []byte, k, v string) []byte { return append(append(append(append(b, k...), 0), v...), 0) }

// endMounts is the record that ends the mount part.
const endMounts = "mounts\x001\x00"

// encode serializes spec for the sandbox child (nsexec_spec.c).
func encode(spec Spec, probe bool) (specParts, error) {
	var p specParts
	if len(spec.Argv) == 0 && !probe {
		return p, errors.New("sandbox: empty argv")
	}
	cmd := func(k, v string) { p.command = put(p.command, k, v) }
	mnt := func(k, v string) { p.mount = put(p.mount, k, v) }
	bad := func(what, v string) error {
		return fmt.Errorf("sandbox: %s %q: not an absolute clean path without NUL", what, v)
	}
	abs := func(q string) bool { return filepath.IsAbs(q) && filepath.Clean(q) == q && !strings.ContainsRune(q, 0) }
	for _, a := range spec.Argv {
		if strings.ContainsRune(a, 0) {
			return p, errors.New("sandbox: argv contains NUL")
		}
		cmd("arg", a)
	}
	for _, e := range spec.Env {
		if strings.ContainsRune(e, 0) || !strings.Contains(e, "=") {
			return p, fmt.Errorf("sandbox: bad environment entry %q", e)
		}
		cmd("env", e)
	}
	dir := spec.Workdir
	if dir == "" {
		dir = "/"
	}
	if !abs(dir) {
		return p, bad("workdir", dir)
	}
	cmd("dir", dir)
	mnt("host", "act-sandbox")
	for _, s := range spec.Scopes {
		// With a disk cap the work dirs are on the sandbox's tmpfs.
		work := s.Work != "" || spec.Limits.DiskMB <= 0
		for _, f := range []struct{ what, v string }{{"scope", s.Path}, {"upper dir", s.Upper}, {"work dir", s.Work}} {
			if !abs(f.v) && (f.what != "work dir" || work) {
				return p, bad(f.what, f.v)
			}
		}
		mnt("scope", s.Path)
		mnt("lower", s.Path)
		mnt("upper", s.Upper)
		if work {
			mnt("work", s.Work)
		}
		mnt("layer", layerRoot(s, spec.Limits.DiskMB > 0))
	}
	if len(spec.Mask) > 16 {
		return p, errors.New("sandbox: more than 16 home roots to mask")
	}
	for _, m := range spec.Mask {
		if !abs(m) || m == "/" {
			return p, bad("home root to mask", m)
		}
		mnt("mask", m)
	}
	for _, b := range spec.Binds {
		if !abs(b) || !underAny(b, spec.Mask) {
			return p, fmt.Errorf("sandbox: bind %q: not an absolute clean path below a masked home root", b)
		}
		mnt("bind", b)
	}
	if spec.Home != "" {
		if !abs(spec.Home) || (!underAny(spec.Home, spec.Mask) && !slices.Contains(spec.Mask, spec.Home)) {
			return p, fmt.Errorf("sandbox: home %q: not an absolute clean path at or below a masked home root", spec.Home)
		}
		mnt("home", spec.Home)
	}
	for _, c := range spec.Caches {
		if !abs(c.Path) || !underAny(c.Path, spec.Mask) || (c.Dir != "" && !abs(c.Dir)) || (c.Own != "" && !abs(c.Own)) ||
			(c.Out != "" && (!abs(c.Out) || c.Own == "")) || (c.Dir == "" && c.Own == "") {
			return p, fmt.Errorf("sandbox: cache %+v: not absolute clean paths, the first below a masked home root, with a directory to show", c)
		}
		mnt("cache", c.Path)
		for _, k := range [...]struct{ key, v string }{{"cachedir", c.Dir}, {"cacheown", c.Own}, {"cacheout", c.Out}} {
			if k.v != "" {
				mnt(k.key, k.v)
			}
		}
	}
	for _, r := range spec.Reads {
		if !abs(r) {
			return p, bad("path to read", r)
		}
		mnt("read", r)
	}
	if len(spec.Files) > MaxFiles {
		return p, fmt.Errorf("sandbox: more than %d generated files", MaxFiles)
	}
	for _, f := range spec.Files {
		inDev := filepath.Dir(f.Path) == "/dev"
		if !abs(f.Path) || !(underAny(f.Path, spec.Mask) || inDev) {
			return p, fmt.Errorf("sandbox: generated file %q: not an absolute clean path below a masked home root or in /dev", f.Path)
		}
		if len(f.Data) > MaxFileBytes || bytes.IndexByte(f.Data, 0) >= 0 {
			return p, fmt.Errorf("sandbox: generated file %q: larger than %d bytes, or holds a NUL byte", f.Path, MaxFileBytes)
		}
		mnt("file", f.Path)
		mnt("filedata", string(f.Data))
	}
	for _, h := range spec.Hide {
		if !abs(h) {
			return p, bad("path to hide", h)
		}
		mnt("hide", h)
	}
	if spec.AllowNetwork {
		mnt("net", "1")
	}
	if spec.Loopback {
		mnt("loopback", "1")
	}
	if spec.Proxy != nil {
		if spec.AllowNetwork {
			return p, errors.New("sandbox: an egress proxy needs the sandbox's own network namespace, not the host's")
		}
		mnt("proxy", strconv.Itoa(ProxyPort))
	}
	if spec.Discard {
		if spec.Limits.DiskMB <= 0 {
			return p, errors.New("sandbox: a run that discards its changes needs a disk cap: without one the layers are written in place")
		}
		mnt("discard", "1")
	}
	if probe {
		cmd("probe", "1")
	}
	return p, nil
}

// rlimits are the per-process limits the child sets on the command.
type rlimits struct {
	cpuS, nproc int64
	// as is RLIMIT_AS, in bytes: the memory cap per process where no
	// memory cgroup holds it (MemoryPerProcess).
	as int64
}

// add adds the limits to the command's part of the spec p, and the size of
// the disk cap's tmpfs (0: no tmpfs; the layers are written in place) to
// its mount part.
func (r rlimits) add(p specParts, diskBytes int64) specParts {
	num := func(b []byte, k string, v int64) []byte {
		if v > 0 {
			b = put(b, k, strconv.FormatInt(v, 10))
		}
		return b
	}
	p.command = num(p.command, "cpu_s", r.cpuS)
	p.command = num(p.command, "nproc", r.nproc)
	p.command = num(p.command, "as", r.as)
	p.mount = num(p.mount, "disk", diskBytes)
	return p
}

// underAny says whether p lies strictly below one of dirs.
func underAny(p string, dirs []string) bool {
	for _, d := range dirs {
		if strings.HasPrefix(p, d+"/") {
			return true
		}
	}
	return false
}
