package gate

import (
	"path/filepath"
	"strings"
)

// RunsCodeLater reports whether a change to path plants something that
// runs code later, outside any review: a shell's start-up file, a Python
// .pth file, git hooks and config, ~/.local/bin, ~/.ssh, autostart,
// systemd and cron units. why names the kind. home is the user's home
// directory ("" if unknown).
func RunsCodeLater(path, home string) (why string, ok bool) {
	base := filepath.Base(path)
	rel := ""
	if home != "" && strings.HasPrefix(path, home+"/") {
		rel = strings.TrimPrefix(path, home+"/")
	}
	switch {
	case strings.HasSuffix(base, ".pth") && strings.Contains(path, "-packages/"):
		return "a Python .pth file runs at every interpreter start", true
	case strings.Contains(path, "/.git/hooks/") || strings.HasSuffix(path, "/.git/config") || base == ".gitconfig":
		return "git runs hooks and config commands", true
	case rel != "" && (base == ".bashrc" || base == ".profile" || base == ".bash_profile" || base == ".bash_login" || base == ".zshrc" || base == ".zprofile" || base == ".zshenv"):
		return "a shell start-up file", true
	case strings.HasPrefix(rel, ".local/bin/"), strings.HasPrefix(rel, ".ssh/"), strings.HasPrefix(rel, ".config/autostart/"), strings.HasPrefix(rel, ".config/systemd/"):
		return "a file of the user's own start-up or login", true
	case strings.HasPrefix(path, "/etc/cron") || strings.HasPrefix(path, "/etc/systemd/") || strings.HasPrefix(path, "/var/spool/cron/"):
		return "a system service or cron unit", true
	}
	return "", false
}
