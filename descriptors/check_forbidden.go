package descriptors

// Forbidden patterns (docs/rules.md):
//
//   - host access: a scope that takes in a host system directory itself
//     ("/", "/etc", "/usr", "/boot", "/proc", "/sys", "/dev" and the other
//     top-level system directories; paths below them are left to the
//     policy's allowed roots), or a command that asks for privileges or
//     talks to the host's service managers (check_command.go);
//   - act's state dir: a scope inside it, on it, or taking it in;
//   - a home directory's root: $HOME, the user's passwd home, /root or any
//     /home/NAME itself (a directory below one is fine);
//   - a credential store: a scope of a descriptor that runs anything in
//     the sandbox (a command, a package manager, a verification command)
//     that is, holds or lies in a credential store under a home the rules
//     know (~/.ssh, ~/.config as a whole, ~/.npmrc, …) or a host secret
//     (credstore's one list): the sandbox shows a scope as it is, so the
//     command would read them (docs/sandbox-filesystem.md);
//   - background execution (check_command.go);
//   - persistence outside scope: creating or modifying a file that makes
//     something run later, outside the action and its scope — shell
//     start-up files, desktop autostart entries, systemd units, cron and at
//     jobs, SSH login files, the dynamic loader's preload list, sudo rules.
//     A path outside the declared scope is already path.outside-scope; this
//     rule is about paths inside it whose effect reaches beyond it.
//
// A scope "takes in" a directory when the directory is one of the paths the
// scope covers: the scope path itself, its direct children when it is not
// recursive, its whole subtree when it is.

import (
	"strings"

	"slices"

	"github.com/act-project/act/internal/credstore"
	"github.com/act-project/act/internal/pathglob"
)

// hostDirs are the host system directories no scope may take in.
var hostDirs = []string{
	"/", "/etc", "/usr", "/boot", "/proc", "/sys", "/dev",
	"/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/run", "/var",
}

// homeRoots returns the home directory roots no scope may take in.
func (c *checker) homeRoots() []string { return HomeRoots(c.opts.Home, c.opts.UserHome) }

// HomeRoots lists every home the static rules know: the given ones
// ($HOME and the password database's, each when it is a clean absolute
// path other than "/"), then /root and /home/*. The rules and act's risk
// grading (docs/risk.md) check the same homes, so that no home — nor a
// $HOME pointed elsewhere — escapes either.
func HomeRoots(homes ...string) []string {
	roots := []string{}
	for _, h := range homes {
		if h != "" && h != "/" && CheckPath(h) == nil && !pathglob.HasMeta(h) && !slices.Contains(roots, h) {
			roots = append(roots, h)
		}
	}
	for _, h := range []string{"/root", "/home/*"} {
		if !slices.Contains(roots, h) {
			roots = append(roots, h)
		}
	}
	return roots
}

// takesIn reports whether the scope path s covers some path target may
// match.
func takesIn(s string, recursive bool, target string) bool {
	for _, cov := range scopeCovers(s, recursive) {
		if pathglob.Overlaps(cov, target) {
			return true
		}
	}
	return false
}

func (c *checker) checkForbiddenScope(path []string, s string, recursive bool) {
	literal := !pathglob.HasMeta(s)
	for _, h := range hostDirs {
		if !takesIn(s, recursive, h) {
			continue
		}
		if s == h {
			c.add("forbidden.host-access", path, "the scope path %q is a host system directory", s)
		} else {
			c.add("forbidden.host-access", path,
				"the scope path %q takes in the host system directory %q", s, h)
		}
		break
	}
	if sd := c.opts.StateDir; sd != "" && CheckPath(sd) == nil {
		switch {
		case s == sd:
			c.add("forbidden.state-dir", path, "the scope path %q is act's state directory", s)
		case literal && pathglob.Contains(pathglob.Join(sd, "**"), s):
			c.add("forbidden.state-dir", path,
				"the scope path %q lies inside act's state directory %q", s, sd)
		case takesIn(s, recursive, pathglob.Join(sd, "**")):
			c.add("forbidden.state-dir", path,
				"the scope path %q takes in act's state directory %q", s, sd)
		}
	}
	for _, h := range c.homeRoots() {
		if !takesIn(s, recursive, h) {
			continue
		}
		if literal && pathglob.Match(h, s) {
			c.add("forbidden.home-root", path,
				"the scope path %q is a home directory itself; scope a directory below it", s)
		} else {
			c.add("forbidden.home-root", path,
				"the scope path %q takes in the home directory %q; scope a directory below it",
				s, strings.Replace(h, "*", "NAME", 1))
		}
		return // a whole home: that says it
	}
	c.checkCredentialScope(path, s)
}

// checkCredentialScope refuses the scope path s of a descriptor that runs
// something in the sandbox when it takes in a credential store: the
// sandbox shows the scope as it is, and the command's output would carry
// the keys before anyone is asked (docs/sandbox-filesystem.md).
func (c *checker) checkCredentialScope(path []string, s string) {
	if !runsInSandbox(c.d) {
		return
	}
	stores := credstore.ScopeTakesIn(s, c.homeRoots())
	if len(stores) == 0 {
		return
	}
	what := strings.Replace(stores[0], "/home/*/", "/home/NAME/", 1)
	if len(stores) > 1 {
		what += ", among others"
	}
	c.add("forbidden.credential-store", path,
		"the scope path %q takes in the credential store %s, which a command in the sandbox would read: scope the directory the command works in, without it", s, what)
}

// runsInSandbox reports whether d runs anything in the sandbox: a
// command, a package manager, a verification command.
func runsInSandbox(d *Descriptor) bool {
	if d.Verification != nil && len(d.Verification.Commands) > 0 {
		return true
	}
	n := node{typ: d.ActionType, steps: d.Steps}
	return usesType(n, CommandExecution) || usesType(n, PackageInstall) || usesType(n, PackageRemove)
}

// persistence lists the places where a created or modified file makes
// something run later, by kind. Entries starting with "~/" are relative to
// every home root.
var persistence = []struct {
	kind  string
	paths []string
}{
	{"a shell start-up file", []string{
		"~/.profile", "~/.bashrc", "~/.bash_profile", "~/.bash_login", "~/.bash_logout",
		"~/.bashrc.d/**", "~/.zshrc", "~/.zshenv", "~/.zprofile", "~/.zlogin", "~/.zlogout",
		"~/.kshrc", "~/.mkshrc", "~/.cshrc", "~/.tcshrc", "~/.login", "~/.logout",
		"~/.config/fish/config.fish", "~/.config/fish/conf.d/**",
		"~/.pam_environment", "~/.config/environment.d/**",
		"/etc/profile", "/etc/profile.d/**", "/etc/bash.bashrc", "/etc/bashrc",
		"/etc/zsh/**", "/etc/environment",
	}},
	{"a session start-up file", []string{
		"~/.xprofile", "~/.xinitrc", "~/.xsession", "~/.xsessionrc",
		"~/.config/autostart/**", "~/.config/plasma-workspace/env/**",
		"~/.config/plasma-workspace/shutdown/**", "/etc/xdg/autostart/**",
	}},
	{"a systemd unit", []string{
		"~/.config/systemd/**", "~/.local/share/systemd/**",
		"/etc/systemd/**", "/lib/systemd/**", "/usr/lib/systemd/**", "/run/systemd/**",
		"/etc/init.d/**", "/etc/rc.local", "/etc/rc*.d/**",
	}},
	{"a cron or at job", []string{
		"/etc/crontab", "/etc/cron.*/**", "/etc/anacrontab", "/var/spool/cron/**",
		"/var/spool/at/**", "/var/spool/anacron/**",
	}},
	{"an SSH login file", []string{
		"~/.ssh/authorized_keys", "~/.ssh/authorized_keys2", "~/.ssh/rc", "~/.ssh/environment",
		"/etc/ssh/**",
	}},
	{"a dynamic loader setting", []string{
		"/etc/ld.so.preload", "/etc/ld.so.conf", "/etc/ld.so.conf.d/**",
	}},
	{"a sudo rule", []string{"/etc/sudoers", "/etc/sudoers.d/**"}},
}

// A persistencePattern is one entry of persistence with its home expanded.
type persistencePattern struct {
	kind, pattern, prefix string
}

// persistencePatterns returns the persistence patterns for this host, with
// their literal prefixes, computed once.
func (c *checker) persistencePatterns() []persistencePattern {
	if c.persist != nil {
		return c.persist
	}
	homes := c.homeRoots()
	for _, k := range persistence {
		for _, q := range k.paths {
			if rest, ok := strings.CutPrefix(q, "~/"); ok {
				for _, h := range homes {
					p := pathglob.Join(h, rest)
					c.persist = append(c.persist, persistencePattern{k.kind, p, literalPrefix(p)})
				}
				continue
			}
			c.persist = append(c.persist, persistencePattern{k.kind, q, literalPrefix(q)})
		}
	}
	return c.persist
}

// literalPrefix returns the part of a pattern before its first wildcard,
// without a trailing slash: every path the pattern matches starts with it.
func literalPrefix(p string) string {
	if i := strings.IndexAny(p, "*?"); i >= 0 {
		p = p[:i]
	}
	return strings.TrimSuffix(p, "/")
}

// persistenceKind returns the kind of persistence location p (a path or a
// glob of files created or modified) may touch, or "".
func (c *checker) persistenceKind(p string) string {
	pre := literalPrefix(p)
	for _, q := range c.persistencePatterns() {
		// Cheap filter first: the literal prefixes must agree.
		if !strings.HasPrefix(pre, q.prefix) && !strings.HasPrefix(q.prefix, pre) {
			continue
		}
		if pathglob.Overlaps(p, q.pattern) {
			return q.kind
		}
	}
	return ""
}
