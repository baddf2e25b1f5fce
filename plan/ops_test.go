package plan

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/act-project/act/descriptors"
	"github.com/act-project/act/sandbox"
)

// baseTree is the tree every operation case starts from: the scope s holds
// each prior state a target can be in; out lies outside the scope.
var baseTree = tree{
	"s":          dir("0755"),
	"s/f":        file("old", "0644"),   // a file
	"s/x":        file("x", "0600"),     // a file of another mode
	"s/ro":       file("ro", "0444"),    // a read-only file
	"s/d":        dir("0755"),           // a directory
	"s/d/g":      file("g", "0644"),     //
	"s/e":        dir("0700"),           // an empty directory
	"s/lf":       link("f"),             // a symlink in scope, to a file
	"s/ld":       link("$ROOT/s/d"),     // a symlink in scope, to a directory
	"s/lo":       link("../out/secret"), // a symlink out of scope, to a file
	"s/lod":      link("$ROOT/out"),     // a symlink out of scope, to a directory
	"s/dangling": link("nope"),          // a symlink to nothing
	"out":        dir("0755"),
	"out/secret": file("secret", "0644"),
}

var gone *entry // a deleted path in a want tree

func TestFileWrite(t *testing.T) {
	w := descriptors.FileWrite
	runOpCases(t, baseTree, []opCase{
		{name: "absent", recursive: true,
			d:    op(w, `{"path": "$S/new", "content": "hi"}`),
			want: tree{"s/new": file("hi", "0644")}},
		{name: "absent-mode", recursive: true,
			d:    op(w, `{"path": "$S/new", "content": "hi", "mode": "0777"}`),
			want: tree{"s/new": file("hi", "0777")}},
		{name: "absent-base64",
			d:    op(w, `{"path": "$S/new", "content_base64": "AAFoaQ=="}`),
			want: tree{"s/new": file("\x00\x01hi", "0644")}},
		{name: "absent-create-only",
			d:    op(w, `{"path": "$S/new", "content": "", "create_only": true}`),
			want: tree{"s/new": file("", "0644")}},
		{name: "file",
			d:    op(w, `{"path": "$S/f", "content": "new"}`),
			want: tree{"s/f": file("new", "0644")}},
		{name: "file-create-only",
			d:       op(w, `{"path": "$S/f", "content": "new", "create_only": true}`),
			wantErr: []ruleAt{{"op.create-only-exists", "operation.path"}}},
		{name: "other-mode-kept",
			d:    op(w, `{"path": "$S/x", "content": "new"}`),
			want: tree{"s/x": file("new", "0600")}},
		{name: "other-mode-set",
			d:    op(w, `{"path": "$S/x", "content": "new", "mode": "0640"}`),
			want: tree{"s/x": file("new", "0640")}},
		{name: "read-only",
			d:    op(w, `{"path": "$S/ro", "content": "new"}`),
			want: tree{"s/ro": file("new", "0444")}},
		{name: "dir",
			d:       op(w, `{"path": "$S/d", "content": "new"}`),
			wantErr: []ruleAt{{"op.target-is-directory", "operation.path"}}},
		{name: "symlink-in-scope",
			d:    op(w, `{"path": "$S/lf", "content": "new"}`),
			want: tree{"s/f": file("new", "0644")}},
		{name: "symlink-in-scope-create-only",
			d:       op(w, `{"path": "$S/lf", "content": "new", "create_only": true}`),
			wantErr: []ruleAt{{"op.create-only-exists", "operation.path"}}},
		{name: "symlink-out-of-scope",
			d:       op(w, `{"path": "$S/lo", "content": "new"}`),
			wantErr: []ruleAt{{"path.symlink-outside-scope", "operation.path"}}},
		{name: "through-symlink-out-of-scope", recursive: true,
			d:       op(w, `{"path": "$S/lod/secret", "content": "new"}`),
			wantErr: []ruleAt{{"path.symlink-outside-scope", "operation.path"}}},
		{name: "through-symlink-in-scope", recursive: true,
			d:    op(w, `{"path": "$S/ld/new", "content": "new"}`),
			want: tree{"s/d/new": file("new", "0644")}},
		{name: "dangling-symlink",
			d:    op(w, `{"path": "$S/dangling", "content": "new"}`),
			want: tree{"s/nope": file("new", "0644")}},
		{name: "dangling-symlink-create-only",
			d:       op(w, `{"path": "$S/dangling", "content": "new", "create_only": true}`),
			wantErr: []ruleAt{{"op.create-only-exists", "operation.path"}}},
		{name: "parent-missing", recursive: true,
			d:       op(w, `{"path": "$S/missing/new", "content": "new"}`),
			wantErr: []ruleAt{{"op.parent-missing", "operation.path"}}},
		{name: "parent-file", recursive: true,
			d:       op(w, `{"path": "$S/f/new", "content": "new"}`),
			wantErr: []ruleAt{{"op.parent-not-directory", "operation.path"}}},
		{name: "grandchild-not-recursive",
			d:       op(w, `{"path": "$S/d/new", "content": "new"}`),
			wantErr: []ruleAt{{"path.outside-scope", "operation.path"}}},
		{name: "bad-base64",
			d:       op(w, `{"path": "$S/new", "content_base64": "!!"}`),
			wantErr: []ruleAt{{"op.invalid-content", "operation.content_base64"}}},
		{name: "symlink-loop",
			extra:   tree{"s/l1": link("l2"), "s/l2": link("l1")},
			d:       op(w, `{"path": "$S/l1", "content": "new"}`),
			wantErr: []ruleAt{{"path.symlink-loop", "operation.path"}}},
		{name: "symlink-chain-out-and-back",
			extra: tree{"s/back": link("$ROOT/out/toS"), "out/toS": link("$ROOT/s/f")},
			d:     op(w, `{"path": "$S/back", "content": "new"}`),
			want:  tree{"s/f": file("new", "0644")}},
		{name: "scope-is-a-symlink",
			extra:   tree{"s2": link("s")},
			scope:   []string{"s2"},
			d:       op(w, `{"path": "$ROOT/s2/f", "content": "new"}`),
			wantErr: []ruleAt{{"path.symlink-outside-scope", "operation.path"}}},
	})
}

func TestFileDelete(t *testing.T) {
	del := descriptors.FileDelete
	logs := tree{"s/a.log": file("a", "0644"), "s/b.log": file("b", "0600"), "s/d/c.log": file("c", "0644")}
	runOpCases(t, baseTree, []opCase{
		{name: "file",
			d:    op(del, `{"paths": ["$S/f"]}`),
			want: tree{"s/f": gone}},
		{name: "read-only",
			d:    op(del, `{"paths": ["$S/ro"]}`),
			want: tree{"s/ro": gone}},
		{name: "absent",
			d:       op(del, `{"paths": ["$S/nope"]}`),
			wantErr: []ruleAt{{"op.path-missing", "operation.paths.0"}}},
		{name: "every-failure-reported-nothing-deleted",
			d: op(del, `{"paths": ["$S/f", "$S/nope", "$S/d", "$S/lo"]}`),
			wantErr: []ruleAt{
				{"op.path-missing", "operation.paths.1"},
				{"op.delete-directory", "operation.paths.2"},
			}},
		{name: "symlink-in-scope",
			d:    op(del, `{"paths": ["$S/lf"]}`),
			want: tree{"s/lf": gone}},
		{name: "symlink-out-of-scope-deletes-the-link",
			d:    op(del, `{"paths": ["$S/lo", "$S/lod", "$S/dangling"]}`),
			want: tree{"s/lo": gone, "s/lod": gone, "s/dangling": gone}},
		{name: "through-symlink-in-scope", recursive: true,
			d:    op(del, `{"paths": ["$S/ld/g"]}`),
			want: tree{"s/d/g": gone}},
		{name: "through-symlink-out-of-scope", recursive: true,
			d:       op(del, `{"paths": ["$S/lod/secret"]}`),
			wantErr: []ruleAt{{"path.symlink-outside-scope", "operation.paths.0"}}},
		{name: "dir-recursive", recursive: true,
			d:    op(del, `{"paths": ["$S/d", "$S/d/g"]}`),
			want: tree{"s/d": gone}},
		{name: "dir-not-recursive",
			d:       op(del, `{"paths": ["$S/e"]}`),
			wantErr: []ruleAt{{"op.delete-directory", "operation.paths.0"}}},
		{name: "glob", extra: logs,
			d:    op(del, `{"paths": ["$S/*.log"]}`),
			want: tree{"s/a.log": gone, "s/b.log": gone}},
		{name: "glob-no-match",
			d:         op(del, `{"paths": ["$S/*.log", "$S/f"]}`),
			want:      tree{"s/f": gone},
			wantNotes: []ruleAt{{"op.glob-no-match", "operation.paths.0"}}},
		{name: "glob-matches-dirs",
			d: op(del, `{"paths": ["$S/?"]}`),
			wantErr: []ruleAt{
				{"op.delete-directory", "operation.paths.0"},
				{"op.delete-directory", "operation.paths.0"},
			}},
		{name: "glob-symlinks", recursive: true,
			d:    op(del, `{"paths": ["$S/l*"]}`),
			want: tree{"s/lf": gone, "s/ld": gone, "s/lo": gone, "s/lod": gone}},
		{name: "glob-double-star", recursive: true,
			extra: tree{
				"s/a.log": file("a", "0644"), "s/d/c.log": file("c", "0644"),
				"s/d/deep/e.log": file("e", "0644"), "s/d/deep": dir("0755"),
				"out/o.log": file("o", "0644"),
			},
			d:    op(del, `{"paths": ["$S/**/*.log"]}`),
			want: tree{"s/a.log": gone, "s/d/c.log": gone, "s/d/deep/e.log": gone}},
		{name: "glob-through-symlink-in-scope", recursive: true, extra: logs,
			d:    op(del, `{"paths": ["$S/ld/*.log"]}`),
			want: tree{"s/d/c.log": gone}},
		{name: "glob-through-symlink-out-of-scope", recursive: true,
			d:       op(del, `{"paths": ["$S/lod/*"]}`),
			wantErr: []ruleAt{{"path.symlink-outside-scope", "operation.paths.0"}}},
		{name: "glob-overlapping-literal", recursive: true, extra: logs,
			d:    op(del, `{"paths": ["$S/d", "$S/d/*.log", "$S/a.log"]}`),
			want: tree{"s/d": gone, "s/a.log": gone}},
	})
}

func TestFileMove(t *testing.T) {
	mv := descriptors.FileMove
	runOpCases(t, baseTree, []opCase{
		{name: "file-to-absent",
			d:    op(mv, `{"from": "$S/x", "to": "$S/new"}`),
			want: tree{"s/x": gone, "s/new": file("x", "0600")}},
		{name: "read-only",
			d:    op(mv, `{"from": "$S/ro", "to": "$S/new"}`),
			want: tree{"s/ro": gone, "s/new": file("ro", "0444")}},
		{name: "from-absent",
			d:       op(mv, `{"from": "$S/nope", "to": "$S/new"}`),
			wantErr: []ruleAt{{"op.source-missing", "operation.from"}}},
		{name: "to-file",
			d:       op(mv, `{"from": "$S/f", "to": "$S/x"}`),
			wantErr: []ruleAt{{"op.target-exists", "operation.to"}}},
		{name: "to-file-overwrite",
			d:    op(mv, `{"from": "$S/f", "to": "$S/x", "overwrite": true}`),
			want: tree{"s/f": gone, "s/x": file("old", "0644")}},
		{name: "to-read-only-overwrite",
			d:    op(mv, `{"from": "$S/f", "to": "$S/ro", "overwrite": true}`),
			want: tree{"s/f": gone, "s/ro": file("old", "0644")}},
		{name: "to-dir-overwrite",
			d:       op(mv, `{"from": "$S/f", "to": "$S/e", "overwrite": true}`),
			wantErr: []ruleAt{{"op.target-is-directory", "operation.to"}}},
		{name: "to-dangling-symlink-overwrite",
			d:    op(mv, `{"from": "$S/f", "to": "$S/dangling", "overwrite": true}`),
			want: tree{"s/f": gone, "s/dangling": file("old", "0644")}},
		{name: "symlink-out-of-scope-moves-the-link",
			d:    op(mv, `{"from": "$S/lo", "to": "$S/moved"}`),
			want: tree{"s/lo": gone, "s/moved": link("../out/secret")}},
		{name: "dir-recursive", recursive: true,
			d:    op(mv, `{"from": "$S/d", "to": "$S/d2"}`),
			want: tree{"s/d": gone, "s/d2": dir("0755"), "s/d2/g": file("g", "0644")}},
		{name: "dir-not-recursive",
			d:       op(mv, `{"from": "$S/d", "to": "$S/d2"}`),
			wantErr: []ruleAt{{"op.not-empty", "operation.from"}}},
		{name: "empty-dir-not-recursive",
			d:    op(mv, `{"from": "$S/e", "to": "$S/e2"}`),
			want: tree{"s/e": gone, "s/e2": dir("0700")}},
		{name: "dir-over-file-overwrite", recursive: true,
			d:    op(mv, `{"from": "$S/e", "to": "$S/f", "overwrite": true}`),
			want: tree{"s/e": gone, "s/f": dir("0700")}},
		{name: "to-parent-missing", recursive: true,
			d:       op(mv, `{"from": "$S/f", "to": "$S/missing/f"}`),
			wantErr: []ruleAt{{"op.parent-missing", "operation.to"}}},
		{name: "into-itself-through-symlink", recursive: true,
			d:       op(mv, `{"from": "$S/d", "to": "$S/ld/sub"}`),
			wantErr: []ruleAt{{"op.move-into-itself", "operation.to"}}},
		{name: "to-through-symlink-out-of-scope", recursive: true,
			d:       op(mv, `{"from": "$S/f", "to": "$S/lod/f"}`),
			wantErr: []ruleAt{{"path.symlink-outside-scope", "operation.to"}}},
		{name: "to-through-symlink-in-scope", recursive: true,
			d:    op(mv, `{"from": "$S/f", "to": "$S/ld/f"}`),
			want: tree{"s/f": gone, "s/d/f": file("old", "0644")}},
	})
}

func TestDirectoryCreate(t *testing.T) {
	mk := descriptors.DirectoryCreate
	runOpCases(t, baseTree, []opCase{
		{name: "absent",
			d:    op(mk, `{"path": "$S/n"}`),
			want: tree{"s/n": dir("0755")}},
		{name: "absent-mode",
			d:    op(mk, `{"path": "$S/n", "mode": "0777"}`),
			want: tree{"s/n": dir("0777")}},
		{name: "dir",
			d:       op(mk, `{"path": "$S/d"}`),
			wantErr: []ruleAt{{"op.target-exists", "operation.path"}}},
		{name: "dir-parents",
			d:         op(mk, `{"path": "$S/e", "parents": true, "mode": "0755"}`),
			wantNotes: []ruleAt{{"op.directory-exists", "operation.path"}}},
		{name: "file",
			d:       op(mk, `{"path": "$S/f", "parents": true}`),
			wantErr: []ruleAt{{"op.target-exists", "operation.path"}}},
		{name: "symlink-to-dir-parents",
			d:         op(mk, `{"path": "$S/ld", "parents": true}`),
			wantNotes: []ruleAt{{"op.directory-exists", "operation.path"}}},
		{name: "symlink-to-dir",
			d:       op(mk, `{"path": "$S/ld"}`),
			wantErr: []ruleAt{{"op.target-exists", "operation.path"}}},
		{name: "symlink-out-of-scope",
			d:       op(mk, `{"path": "$S/lod", "parents": true}`),
			wantErr: []ruleAt{{"path.symlink-outside-scope", "operation.path"}}},
		{name: "dangling-symlink",
			d:       op(mk, `{"path": "$S/dangling"}`),
			wantErr: []ruleAt{{"op.target-exists", "operation.path"}}},
		{name: "parent-missing", recursive: true,
			d:       op(mk, `{"path": "$S/a/b"}`),
			wantErr: []ruleAt{{"op.parent-missing", "operation.path"}}},
		{name: "parents", recursive: true,
			d:    op(mk, `{"path": "$S/a/b/c", "parents": true, "mode": "0700"}`),
			want: tree{"s/a": dir("0755"), "s/a/b": dir("0755"), "s/a/b/c": dir("0700")}},
		{name: "parents-through-symlink-in-scope", recursive: true,
			d:    op(mk, `{"path": "$S/ld/a/b", "parents": true}`),
			want: tree{"s/d/a": dir("0755"), "s/d/a/b": dir("0755")}},
		{name: "parents-outside-scope", recursive: true,
			scope:   []string{"s/a/b"},
			d:       op(mk, `{"path": "$S/a/b", "parents": true}`),
			wantErr: []ruleAt{{"op.parent-outside-scope", "operation.path"}}},
		{name: "parents-scope-root", recursive: true,
			scope: []string{"s/a"},
			d:     op(mk, `{"path": "$S/a/b", "parents": true}`),
			want:  tree{"s/a": dir("0755"), "s/a/b": dir("0755")}},
		{name: "parent-file", recursive: true,
			d:       op(mk, `{"path": "$S/f/n", "parents": true}`),
			wantErr: []ruleAt{{"op.parent-not-directory", "operation.path"}}},
		{name: "grandchild-not-recursive",
			d:       op(mk, `{"path": "$S/a/b", "parents": true}`),
			wantErr: []ruleAt{{"path.outside-scope", "operation.path"}}},
	})
}

func TestDirectoryDelete(t *testing.T) {
	rm := descriptors.DirectoryDelete
	runOpCases(t, baseTree, []opCase{
		{name: "empty",
			d:    op(rm, `{"path": "$S/e"}`),
			want: tree{"s/e": gone}},
		{name: "non-empty-recursive", recursive: true,
			d:    op(rm, `{"path": "$S/d"}`),
			want: tree{"s/d": gone}},
		{name: "non-empty",
			d:       op(rm, `{"path": "$S/d"}`),
			wantErr: []ruleAt{{"op.not-empty", "operation.path"}}},
		{name: "absent",
			d:       op(rm, `{"path": "$S/nope"}`),
			wantErr: []ruleAt{{"op.path-missing", "operation.path"}}},
		{name: "file",
			d:       op(rm, `{"path": "$S/f"}`),
			wantErr: []ruleAt{{"op.not-a-directory", "operation.path"}}},
		{name: "symlink-to-dir",
			d:       op(rm, `{"path": "$S/ld"}`),
			wantErr: []ruleAt{{"op.not-a-directory", "operation.path"}}},
		{name: "symlink-out-of-scope", recursive: true,
			d:       op(rm, `{"path": "$S/lod"}`),
			wantErr: []ruleAt{{"op.not-a-directory", "operation.path"}}},
		{name: "through-symlink-in-scope", recursive: true,
			extra: tree{"s/d/sub": dir("0755")},
			d:     op(rm, `{"path": "$S/ld/sub"}`),
			want:  tree{"s/d/sub": gone}},
		{name: "read-only-contents", recursive: true,
			extra: tree{"s/d/sub": dir("0755"), "s/d/sub/r": file("r", "0400")},
			d:     op(rm, `{"path": "$S/d"}`),
			want:  tree{"s/d": gone}},
		{name: "scope-root",
			scope: []string{"s/e"},
			d:     op(rm, `{"path": "$S/e"}`),
			want:  tree{"s/e": gone}},
	})
}

func TestFileRead(t *testing.T) {
	rd := descriptors.FileRead
	big := strings.Repeat("0123456789", MaxReadContent/10+1)
	sum := func(s string) string { h := sha256.Sum256([]byte(s)); return hex.EncodeToString(h[:]) }
	runOpCases(t, baseTree, []opCase{
		{name: "file",
			d: op(rd, `{"path": "$S/x"}`),
			check: func(t *testing.T, root string, res *OpsResult) {
				want := []ReadResult{{
					Field: []string{"operation", "path"}, Path: root + "/s/x", Resolved: root + "/s/x",
					Mode: "0600", Size: 1, SHA256: sum("x"), Content: []byte("x"),
				}}
				if d := cmp.Diff(want, res.Read); d != "" {
					t.Errorf("Read mismatch (-want +got):\n%s", d)
				}
			}},
		{name: "symlink-in-scope",
			d: op(rd, `{"path": "$S/lf"}`),
			check: func(t *testing.T, root string, res *OpsResult) {
				if got := res.Read[0].Resolved; got != root+"/s/f" {
					t.Errorf("Resolved = %q, want %q", got, root+"/s/f")
				}
			}},
		{name: "large", extra: tree{"s/big": file(big, "0644")},
			d: op(rd, `{"path": "$S/big"}`),
			check: func(t *testing.T, root string, res *OpsResult) {
				r := res.Read[0]
				if r.Size != int64(len(big)) || r.SHA256 != sum(big) || !r.Truncated ||
					string(r.Content) != big[:MaxReadContent] {
					t.Errorf("Read = size %d, sha256 %s, truncated %v, %d bytes of content; want the whole file's size and digest, and its first %d bytes",
						r.Size, r.SHA256, r.Truncated, len(r.Content), MaxReadContent)
				}
			}},
		{name: "absent",
			d:       op(rd, `{"path": "$S/nope"}`),
			wantErr: []ruleAt{{"op.path-missing", "operation.path"}}},
		{name: "dir",
			d:       op(rd, `{"path": "$S/d"}`),
			wantErr: []ruleAt{{"op.not-a-file", "operation.path"}}},
		{name: "symlink-out-of-scope",
			d:       op(rd, `{"path": "$S/lo"}`),
			wantErr: []ruleAt{{"path.symlink-outside-scope", "operation.path"}}},
	})
}

func TestConfigChange(t *testing.T) {
	cc := descriptors.ConfigChange
	configs := tree{
		"s/c.json":   file("{\n    \"b\": 1,\n    \"a\": {\"x\": 1}\n}\n", "0600"),
		"s/c.yaml":   file("# settings\nb: 1 # one\n\na:\n  x: 1\n", "0444"),
		"s/bad.json": file("{\"a\": }\n", "0644"),
		"s/lc":       link("c.json"),
	}
	runOpCases(t, baseTree, []opCase{
		{name: "json", extra: configs,
			d:    op(cc, `{"path": "$S/c.json", "format": "json", "set": {"a.y": "z", "b": 2}}`),
			want: tree{"s/c.json": file("{\n    \"b\": 2,\n    \"a\": {\n        \"x\": 1,\n        \"y\": \"z\"\n    }\n}\n", "0600")}},
		{name: "yaml-read-only", extra: configs,
			d:    op(cc, `{"path": "$S/c.yaml", "format": "yaml", "set": {"b": 2}, "unset": ["a.x"]}`),
			want: tree{"s/c.yaml": file("# settings\nb: 2 # one\n\na: {}\n", "0444")}},
		{name: "symlink-in-scope", extra: configs,
			d:    op(cc, `{"path": "$S/lc", "format": "json", "set": {"b": 3}}`),
			want: tree{"s/c.json": file("{\n    \"b\": 3,\n    \"a\": {\"x\": 1}\n}\n", "0600")}},
		{name: "unset-absent", extra: configs,
			d:         op(cc, `{"path": "$S/c.json", "format": "json", "unset": ["zz"]}`),
			wantNotes: []ruleAt{{"op.config-key-absent", "operation.unset.0"}}},
		{name: "absent",
			d:       op(cc, `{"path": "$S/c.json", "format": "json", "set": {"a": 1}}`),
			wantErr: []ruleAt{{"op.path-missing", "operation.path"}}},
		{name: "dir",
			d:       op(cc, `{"path": "$S/d", "format": "json", "set": {"a": 1}}`),
			wantErr: []ruleAt{{"op.not-a-file", "operation.path"}}},
		{name: "parse", extra: configs,
			d:       op(cc, `{"path": "$S/bad.json", "format": "json", "set": {"a": 1}}`),
			wantErr: []ruleAt{{"op.config-parse", "operation.path"}}},
		{name: "key-conflict", extra: configs,
			d:       op(cc, `{"path": "$S/c.json", "format": "json", "set": {"b.c": 1}}`),
			wantErr: []ruleAt{{"op.config-key-conflict", "operation.set.b.c"}}},
		{name: "symlink-out-of-scope",
			d:       op(cc, `{"path": "$S/lo", "format": "json", "set": {"a": 1}}`),
			wantErr: []ruleAt{{"path.symlink-outside-scope", "operation.path"}}},
	})
}

func TestComposite(t *testing.T) {
	runOpCases(t, baseTree, []opCase{
		{name: "steps-see-each-other", recursive: true,
			extra: tree{"s/a.tmp": file("t", "0644"), "s/b.tmp": file("t", "0644")},
			d: composite(
				op(descriptors.DirectoryCreate, `{"path": "$S/rel"}`),
				op(descriptors.FileWrite, `{"path": "$S/rel/VERSION", "content": "1.4.0\n", "create_only": true}`),
				op(descriptors.FileMove, `{"from": "$S/f", "to": "$S/rel/app"}`),
				op(descriptors.FileDelete, `{"paths": ["$S/*.tmp"]}`),
				op(descriptors.FileWrite, `{"path": "$S/rel/c.json", "content": "{}"}`),
				op(descriptors.ConfigChange, `{"path": "$S/rel/c.json", "format": "json", "set": {"v": "1.4.0"}}`),
				op(descriptors.FileRead, `{"path": "$S/rel/c.json"}`),
			),
			want: tree{
				"s/rel": dir("0755"), "s/rel/VERSION": file("1.4.0\n", "0644"),
				"s/f": gone, "s/rel/app": file("old", "0644"),
				"s/a.tmp": gone, "s/b.tmp": gone,
				"s/rel/c.json": file(`{"v":"1.4.0"}`, "0644"),
			},
			check: func(t *testing.T, root string, res *OpsResult) {
				if len(res.Read) != 1 || string(res.Read[0].Content) != `{"v":"1.4.0"}` {
					t.Errorf("Read = %+v, want the edited c.json", res.Read)
				}
			}},
		{name: "delete-what-a-step-created",
			d: composite(
				op(descriptors.FileWrite, `{"path": "$S/n", "content": "n"}`),
				op(descriptors.FileMove, `{"from": "$S/n", "to": "$S/m"}`),
				op(descriptors.FileDelete, `{"paths": ["$S/m"]}`),
			)},
		{name: "stops-at-first-failure", recursive: true,
			d: composite(
				op(descriptors.FileWrite, `{"path": "$S/n", "content": "n"}`),
				op(descriptors.FileWrite, `{"path": "$S/n", "content": "again", "create_only": true}`),
				op(descriptors.FileDelete, `{"paths": ["$S/nope"]}`),
			),
			wantErr: []ruleAt{{"op.create-only-exists", "steps.1.operation.path"}}},
		{name: "nested", recursive: true,
			d: composite(
				op(descriptors.DirectoryCreate, `{"path": "$S/n"}`),
				composite(
					op(descriptors.FileWrite, `{"path": "$S/n/a", "content": "a"}`),
					op(descriptors.FileMove, `{"from": "$S/nope", "to": "$S/n/b"}`),
				),
			),
			wantErr: []ruleAt{{"op.source-missing", "steps.1.steps.1.operation.from"}}},
	})
}

func TestNotFileOperation(t *testing.T) {
	for _, d := range []*descriptors.Descriptor{
		op(descriptors.CommandExecution, `{"argv": ["true"], "workdir": "$S"}`),
		op(descriptors.UIAutomation, `{}`),
		composite(
			op(descriptors.FileWrite, `{"path": "$S/n", "content": "n"}`),
			op(descriptors.NetworkRequest, `{"method": "GET", "url": "https://example.com/"}`),
		),
	} {
		t.Run(string(d.ActionType), func(t *testing.T) {
			root := t.TempDir()
			mktree(t, root, baseTree)
			d := instantiate(t, d, root)
			d.Scope.Filesystem.Paths = []string{root + "/s"}
			_, err := RunOps(context.Background(), d, sandbox.RealSystem{})
			if !errors.Is(err, ErrNotFileOperation) {
				t.Fatalf("RunOps() = %v, want ErrNotFileOperation", err)
			}
			if d := cmp.Diff(baseTree, snapshot(t, sandbox.RealSystem{}, root)); d != "" {
				t.Errorf("the tree changed (-want +got):\n%s", d)
			}
		})
	}
}

func TestCanceled(t *testing.T) {
	root := t.TempDir()
	mktree(t, root, baseTree)
	d := instantiate(t, op(descriptors.FileDelete, `{"paths": ["$S/f"]}`), root)
	d.Scope.Filesystem.Paths = []string{root + "/s"}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := RunOps(ctx, d, sandbox.RealSystem{}); !errors.Is(err, context.Canceled) {
		t.Fatalf("RunOps() = %v, want context.Canceled", err)
	}
}

func TestOpRules(t *testing.T) {
	static := map[string]bool{}
	for _, r := range descriptors.Rules() {
		static[r.ID] = true
	}
	seen := map[string]bool{}
	for _, r := range OpRules() {
		if static[r.ID] {
			t.Errorf("rule %s is also a static rule of descriptors", r.ID)
		}
		if seen[r.ID] {
			t.Errorf("rule %s listed twice", r.ID)
		}
		seen[r.ID] = true
		if r.Summary == "" {
			t.Errorf("rule %s has no summary", r.ID)
		}
		if !strings.HasPrefix(r.ID, "op.") && !strings.HasPrefix(r.ID, "path.") {
			t.Errorf("rule %s: want an op. or path. id", r.ID)
		}
	}
	// Every rule id the code reports is listed (or is a static rule).
	for _, id := range reportedRules(t) {
		if !seen[id] && id != "path.outside-scope" {
			t.Errorf("rule %s is reported but not in OpRules", id)
		}
	}
}
