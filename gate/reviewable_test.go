package gate

import (
	"bytes"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/act-project/act/descriptors"
	"github.com/act-project/act/diff"
)

// commitChanges makes a repository with a committed Makefile, and what a
// second commit changes in it (edit runs in a copy, as a dry run would):
// the change list against the real repository and a layer's upper
// directory holding the new content.
func commitChanges(t *testing.T, edit func(dir string)) (repo, upper string, changes []diff.Change) {
	t.Helper()
	needGit(t)
	root := t.TempDir()
	repo, upper = filepath.Join(root, "repo"), filepath.Join(root, "upper")
	os.MkdirAll(repo, 0o755)
	os.WriteFile(filepath.Join(repo, "Makefile"), []byte("test:\n\tgo test\n"), 0o644)
	os.WriteFile(filepath.Join(repo, ".gitignore"), []byte("build/\n"), 0o644)
	gitCmd(t, repo, "init", "-q")
	gitCmd(t, repo, "add", "-A")
	gitCmd(t, repo, "commit", "-q", "-m", "one")
	after := filepath.Join(root, "after")
	if out, err := exec.Command("cp", "-a", repo, after).CombinedOutput(); err != nil {
		t.Fatalf("cp: %v %s", err, out)
	}
	edit(after)
	err := filepath.WalkDir(after, func(p string, de fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(after, p)
		real := filepath.Join(repo, rel)
		fi, _ := de.Info()
		mode := fmt.Sprintf("%04o", fi.Mode().Perm())
		old, oerr := os.Lstat(real)
		c := diff.Change{Path: real, Kind: diff.Create, Type: diff.TypeFile, ModeAfter: &mode}
		if de.IsDir() {
			if oerr == nil {
				return nil
			}
			c.Type = diff.TypeDir
			changes = append(changes, c)
			return nil
		}
		data, _ := os.ReadFile(p)
		if oerr == nil {
			prev, _ := os.ReadFile(real)
			if bytes.Equal(prev, data) {
				return nil
			}
			c.Kind = diff.Modify
			m := fmt.Sprintf("%04o", old.Mode().Perm())
			c.ModeBefore = &m
		}
		sum := sha256.Sum256(data)
		s := hex.EncodeToString(sum[:])
		c.SHA256After = &s
		os.MkdirAll(filepath.Dir(filepath.Join(upper, real)), 0o755)
		os.WriteFile(filepath.Join(upper, real), data, 0o644)
		changes = append(changes, c)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return repo, upper, changes
}

func assessIn(repo, upper string, changes []diff.Change, typ descriptors.ActionType) Risk {
	d := &descriptors.Descriptor{ActionType: typ, RiskLevel: descriptors.RiskLow}
	return Assess(d, changes, RiskRules{Homes: descriptors.HomeRoots("/nonexistent/home"), UID: uint32(os.Geteuid()),
		InWorkspace: func(p string) bool { return within(p, repo) }, Workspaces: []string{repo}, Upper: upper})
}

// TestAssessCommit: what a commit writes is LOW — objects, the branch,
// its logs, the index — with the work tree change it commits; an index
// whose entry records other content than the file holds is HIGH, and an
// index act cannot read is not LOW.
func TestAssessCommit(t *testing.T) {
	repo, upper, changes := commitChanges(t, func(dir string) {
		os.WriteFile(filepath.Join(dir, "Makefile"), []byte("test:\n\tgo vet\n"), 0o644)
		gitCmd(t, dir, "commit", "-q", "-am", "two")
	})
	var index *diff.Change
	for i, c := range changes {
		if strings.HasSuffix(c.Path, "/.git/index") {
			index = &changes[i]
		}
	}
	if index == nil {
		t.Fatalf("no index among %d changes", len(changes))
	}
	if r := assessIn(repo, upper, changes, descriptors.FileWrite); r.Assessed != descriptors.RiskLow {
		t.Errorf("a commit: assessed %s, want LOW (%v)", r.Assessed, r.Reasons)
	}
	if r := assessIn(repo, "", changes, descriptors.FileWrite); r.Assessed == descriptors.RiskLow {
		t.Errorf("a commit whose index cannot be read: assessed LOW")
	}

	// The index records the Makefile as it was, its stat data as it is.
	data, _ := os.ReadFile(filepath.Join(upper, index.Path))
	before, _ := os.ReadFile(filepath.Join(repo, ".git/index"))
	oldIx, _ := parseIndex(before)
	newIx, err := parseIndex(data)
	if err != nil {
		t.Fatal(err)
	}
	at := bytes.Index(data, newIx.entries["Makefile"].oid)
	forged := bytes.Clone(data)
	copy(forged[at:], oldIx.entries["Makefile"].oid)
	sum := sha1.Sum(forged[:len(forged)-20])
	copy(forged[len(forged)-20:], sum[:])
	os.WriteFile(filepath.Join(upper, index.Path), forged, 0o644)
	s256 := sha256.Sum256(forged)
	h := hex.EncodeToString(s256[:])
	index.SHA256After = &h
	r := assessIn(repo, upper, changes, descriptors.FileWrite)
	if r.Assessed != descriptors.RiskHigh || !strings.Contains(strings.Join(r.Reasons, "\n"), "as content it does not hold") {
		t.Errorf("a forged index entry: assessed %s (%v), want HIGH", r.Assessed, r.Reasons)
	}
}

// TestAssessIgnored: in a git work tree, an ignored file is not LOW, an
// untracked one is.
func TestAssessIgnored(t *testing.T) {
	repo, upper, changes := commitChanges(t, func(dir string) {
		os.MkdirAll(filepath.Join(dir, "build"), 0o755)
		os.WriteFile(filepath.Join(dir, "build/out.js"), []byte("x\n"), 0o644)
	})
	if r := assessIn(repo, upper, changes, descriptors.FileWrite); r.Assessed != descriptors.RiskMedium || !strings.Contains(strings.Join(r.Reasons, "\n"), "which git ignores") {
		t.Errorf("an ignored file: assessed %s (%v), want MEDIUM", r.Assessed, r.Reasons)
	}
	repo, upper, changes = commitChanges(t, func(dir string) {
		os.WriteFile(filepath.Join(dir, "main.go"), []byte("package main\n"), 0o644)
	})
	if r := assessIn(repo, upper, changes, descriptors.FileWrite); r.Assessed != descriptors.RiskLow {
		t.Errorf("an untracked file: assessed %s (%v), want LOW", r.Assessed, r.Reasons)
	}
}
