package plan

import (
	"os"
	"path/filepath"
	"slices"

	"github.com/act-project/act/internal/pathglob"
)

// credentialStores are the places under a home directory where credentials
// usually live; the sandbox hides each (docs/sandbox-filesystem.md).
var credentialStores = []string{
	".ssh", ".aws", ".gnupg", ".netrc", ".git-credentials", ".config/gh", ".config/hub",
	".docker/config.json", ".kube", ".azure", ".config/gcloud", ".password-store",
	".local/share/keyrings", ".pypirc", ".npmrc", ".vault-token",
	".mozilla", ".config/google-chrome", ".config/chromium", ".config/BraveSoftware",
	".pgpass", ".config/git/credentials", ".my.cnf", ".config/rclone", ".cargo/credentials",
	".cargo/credentials.toml", ".terraform.d/credentials.tfrc.json", ".config/op", ".m2/settings.xml",
	".config/containers/auth.json", ".local/share/containers/auth.json",
}

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
