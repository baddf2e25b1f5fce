package plan

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"github.com/act-project/act/internal/credstore"
	"github.com/act-project/act/internal/pathglob"
	"github.com/act-project/act/internal/state"
	"github.com/act-project/act/sandbox/isolate"
)

// credentialStores are the places under a home directory where credentials
// usually live (credstore's one list); the sandbox hides each
// (docs/sandbox-filesystem.md).
var credentialStores = credstore.SecretRels()

// HidePaths returns what the sandbox hides from commands: act's state dir,
// the credential stores under each of homes (the user's, by $HOME and by
// the passwd database: an agent that sets HOME cannot move them out of
// view), the host's secrets (systemSecrets) when act runs as root, and extra
// (the policy's sandbox.hide_paths) — except, the state dir apart, what is
// inside a declared scope or holds one: a scope the descriptor names stays
// visible.
func HidePaths(stateDir string, homes, extra, scopes []string) []string {
	var out []string
	if filepath.IsAbs(stateDir) {
		out = append(out, filepath.Clean(stateDir)) // whatever the scopes: never the command's to read
	}
	add := func(p string) {
		if p == "" || !filepath.IsAbs(p) {
			return
		}
		p = filepath.Clean(p)
		for _, s := range scopes {
			root := pathglob.Prefix(filepath.Clean(s))
			if pathglob.Within(p, root) || pathglob.Within(root, p) {
				return
			}
		}
		if !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	for _, h := range homes {
		if h == "" || h == "/" {
			continue
		}
		for _, c := range credentialStores {
			add(filepath.Join(h, c))
		}
	}
	if os.Geteuid() == 0 {
		// Root's own secrets, by the one list risk grading uses too:
		// the shadow files and their backups, host keys, private keys.
		for _, s := range systemSecretPaths() {
			add(s)
		}
	}
	for _, e := range extra {
		add(e)
	}
	return out
}

// SystemReads are the system trees commands may open files in for
// reading, besides the scopes, the policy's sandbox.home_visible and the sandbox's own /tmp,
// /dev and /proc (isolate.Spec.Reads, enforced by Landlock): a host FIFO,
// socket or file elsewhere (/var/tmp, /srv, /mnt) gives them nothing.
var SystemReads = []string{
	"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/opt",
	"/var/lib", "/var/cache", "/nix", "/snap", "/sys",
}

// homeRoots are where the homes of every user are: masked in the sandbox.
var homeRoots = []string{"/home", "/root"}

// HomeView returns what the sandbox masks (the home roots, and realHome,
// the password database's home of the user act runs as, where it lies
// elsewhere) and what it shows below them read-only: visible (the
// policy's sandbox.home_visible, absolute) that lies below realHome, but a
// credential store, a tool's configuration (ConfigViews shows its copy
// instead) or what is, holds or lies in a path of hide that is no
// credential store. A directory that holds credential stores (a
// toolchain's) is shown: the stores in it are among hide, masked over it.
// The scopes show whatever the masks: their overlays are mounted on top.
// $HOME plays no part: an agent that sets it moves nothing into view.
func HomeView(realHome string, visible, hide []string) (mask, binds []string) {
	mask = slices.Clone(homeRoots)
	if !isHomeDir(realHome) {
		return mask, nil
	}
	realHome = filepath.Clean(realHome)
	if !pathglob.Within(realHome, "/home") && !pathglob.Within(realHome, "/root") {
		mask = append(mask, realHome)
	}
	homes := []string{realHome}
next:
	for _, p := range visible {
		p = filepath.Clean(p)
		if !filepath.IsAbs(p) || !pathglob.Within(p, realHome) || p == realHome || IsCredentialStore(p, homes) || isConfig(realHome, p) {
			continue
		}
		for _, h := range hide {
			if pathglob.Within(p, h) || pathglob.Within(h, p) && !IsCredentialStore(h, homes) {
				continue next
			}
		}
		binds = append(binds, p)
	}
	return mask, binds
}

// SandboxCaches are the caches a plan's commands get (the policy's
// sandbox.caches, docs/sandbox-filesystem.md "Caches"): the person's own,
// each shown at its path read-only under a throwaway upper layer. A path
// counts that lies below realHome (the password database's home), is
// neither a credential store nor a path of hide nor holds one, and is a
// directory reached from the home with no symbolic link on the way (a
// link planted there would show another directory in its place: the
// sandbox refuses it too, RESOLVE_NO_SYMLINKS). One that is not there is
// left out: the tool makes it in the throwaway home. A bind of binds that
// holds a cache or lies in one is dropped: the cache is shown instead.
func SandboxCaches(realHome string, caches, hide []string, binds []string) ([]isolate.Cache, []string) {
	if !isHomeDir(realHome) {
		return nil, binds
	}
	realHome = filepath.Clean(realHome)
	// The home's own path may go through links (/home on another disk):
	// the password database names it, not the agent.
	resolved, err := filepath.EvalSymlinks(realHome)
	if err != nil {
		return nil, binds
	}
	var out []isolate.Cache
next:
	for _, p := range caches {
		p = filepath.Clean(p)
		if !filepath.IsAbs(p) || !pathglob.Within(p, realHome) || p == realHome || IsCredentialStore(p, []string{realHome}) {
			continue
		}
		for _, h := range hide {
			if pathglob.Within(p, h) || pathglob.Within(h, p) {
				continue next
			}
		}
		rel, err := filepath.Rel(realHome, p)
		if err != nil {
			continue
		}
		dir := resolved
		for _, part := range strings.Split(rel, string(filepath.Separator)) {
			dir = filepath.Join(dir, part)
			fi, err := os.Lstat(dir)
			if err != nil || !fi.IsDir() {
				continue next
			}
		}
		out = append(out, isolate.Cache{Path: p, Dir: dir})
		binds = slices.DeleteFunc(binds, func(b string) bool { return pathglob.Within(b, p) || pathglob.Within(p, b) })
	}
	return out, binds
}

// writableHome is the home a plan's commands may write through a
// throwaway layer (isolate.Spec.Home, docs/sandbox-filesystem.md "The
// masked home"): realHome, the password database's, where it is a
// directory that mask covers; else "" (nobody's /nonexistent: none).
func writableHome(realHome string, mask []string) string {
	if !isHomeDir(realHome) {
		return ""
	}
	realHome = filepath.Clean(realHome)
	for _, m := range mask {
		if pathglob.Within(realHome, m) {
			return realHome
		}
	}
	return ""
}

// CachesDir is the state dir's caches/, made if missing, once checked to
// be act's own: a directory, not a symlink, of this user's
// (docs/sandbox-filesystem.md, "Caches"). Anything else is refused, not
// followed: a caches/ planted as a link into a real project would have
// the sandbox mount it read-write (its writes never diffed) and act gc
// --caches empty it.
func CachesDir(stateDir string) (string, error) {
	dir := state.Dir{Root: stateDir}.Caches()
	if err := ownDir(dir); err != nil {
		return "", fmt.Errorf("the sandbox's caches: %w", err)
	}
	return dir, nil
}

// ownDir makes the directory dir (mode 0700) if it is missing, and checks
// it is a directory of this user's: not a symlink (Lstat), not another
// user's.
func ownDir(dir string) error {
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return err
	}
	fi, err := os.Lstat(dir)
	if err != nil {
		return err
	}
	if fi.Mode().Type() != fs.ModeDir {
		return fmt.Errorf("%s is not a directory (%s): act's caches are its own directories, never followed", dir, fi.Mode().Type())
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && int(st.Uid) != os.Geteuid() {
		return fmt.Errorf("%s belongs to uid %d, not to uid %d act runs as: act's caches are never shared", dir, st.Uid, os.Geteuid())
	}
	return nil
}

// ScopeSecrets are the credential stores under homes (and, as root, the
// host's secrets) that scopes un-hide: a store that a scope holds or lies
// in. Commands see them, so such a plan is HIGH (docs/risk.md).
func ScopeSecrets(scopes, homes []string) []string {
	var stores []string
	for _, h := range homes {
		if h == "" || h == "/" || !filepath.IsAbs(h) {
			continue
		}
		for _, c := range credentialStores {
			stores = append(stores, filepath.Join(h, c))
		}
	}
	if os.Geteuid() == 0 {
		stores = append(stores, systemSecretPaths()...)
	}
	var out []string
	for _, st := range stores {
		for _, sc := range scopes {
			root := pathglob.Prefix(filepath.Clean(sc))
			if (pathglob.Within(st, root) || pathglob.Within(root, st)) && !slices.Contains(out, st) {
				out = append(out, st)
			}
		}
	}
	return out
}

// isHomeDir says whether home is a home the sandbox can show parts of: an
// absolute path other than /, of a directory that is there (nobody's
// /nonexistent is not).
func isHomeDir(home string) bool {
	if !filepath.IsAbs(home) || filepath.Clean(home) == "/" {
		return false
	}
	fi, err := os.Stat(home)
	return err == nil && fi.IsDir()
}
