package plan

// Attack cases of issue 12 for what a plan may promote: a setuid copy of a
// shell, file capabilities, and what a command could leave in the layer
// for promotion. docs/sandbox-promotion.md says what stops each.

import (
	"errors"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

func init() {
	attackCases = append(attackCases,
		attackCase{
			// no_new_privs and nosuid hold in the sandbox only: a setuid
			// copy of a shell, promoted by a LOW action as root, would be
			// setuid root on the host.
			name:   "setuid-shell",
			script: `cp /bin/sh "$S/sh" && chmod 4755 "$S/sh"`,
			create: []string{"sh"},
			want:   RuleSpecialMode, msg: "setuid",
		},
		attackCase{
			name:   "setgid-file",
			script: `echo x > "$S/g" && chmod 2755 "$S/g"`,
			create: []string{"g"},
			want:   RuleSpecialMode, msg: "setgid",
		},
		attackCase{
			// A file capability in the sandbox (as its root) is a
			// security.* xattr copy-out does not carry: the layer, and so
			// what apply promotes, has none.
			name:    "file-capability",
			script:  `cp /bin/true "$S/t" && { setcap cap_net_raw+ep "$S/t" 2>/dev/null || true; }`,
			create:  []string{"t"},
			want:    "planned",
			changes: []string{"create t"},
			check:   noCapability("t"),
		},
	)
}

// noCapability checks that the plan's layer copy of rel carries no
// security.capability xattr.
func noCapability(rel string) func(t *testing.T, w *attackWorld, p *Plan) {
	return func(t *testing.T, w *attackWorld, p *Plan) {
		if p == nil {
			return
		}
		name := UpperDir(w.stateDir, p.ID) + filepath.Join(w.s, rel)
		buf := make([]byte, 64)
		_, err := unix.Lgetxattr(name, "security.capability", buf)
		if !errors.Is(err, unix.ENODATA) {
			t.Errorf("the layer's %s has a security.capability xattr (or the check failed): %v", rel, err)
		}
	}
}
