package hook

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/act-project/act/descriptors"
	"github.com/act-project/act/gate"
	"github.com/act-project/act/internal/problem"
	"github.com/act-project/act/internal/state"
	"github.com/act-project/act/policy"
)

func patchInput(t *testing.T, patch string) map[string]json.RawMessage {
	t.Helper()
	b, err := json.Marshal(patch)
	if err != nil {
		t.Fatal(err)
	}
	return map[string]json.RawMessage{"command": b}
}

func TestCodexPatchDescriptor(t *testing.T) {
	ws := t.TempDir()
	outside := t.TempDir()
	for name, content := range map[string]string{"keep.txt": "hello\nworld\n", "gone.txt": "bye\n"} {
		if err := os.WriteFile(filepath.Join(ws, name), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(outside, filepath.Join(ws, "link")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(ws, "keep.txt"), filepath.Join(ws, "alias.txt")); err != nil {
		t.Fatal(err)
	}
	caps := policy.ResourceCaps{}
	describe := func(patch string) (map[string]any, error) {
		built, err := codexPatchDescriptor(patchInput(t, patch), ws, ws, caps, nil)
		if err != nil {
			return nil, err
		}
		descriptors.StampBuilt(built, descriptors.Stamp{})
		data, err := json.Marshal(built)
		if err != nil {
			t.Fatal(err)
		}
		var d map[string]any
		if err := json.Unmarshal(data, &d); err != nil {
			t.Fatal(err)
		}
		return d, nil
	}

	// One file: the operation itself, with the whole new content.
	d, err := describe("*** Begin Patch\n*** Update File: keep.txt\n@@\n hello\n-world\n+there\n*** End Patch")
	if err != nil {
		t.Fatal(err)
	}
	op, _ := d["operation"].(map[string]any)
	if d["action_type"] != "FILE_WRITE" || op["content"] != "hello\nthere\n" || op["path"] != filepath.Join(ws, "keep.txt") {
		t.Errorf("update: got %v", d)
	}
	if sb, _ := d["sandbox"].(map[string]any); sb["required"] != false {
		t.Errorf("update: sandbox %v, want not required", sb)
	}

	// Several: a composite, directories first, deletes last and sandboxed.
	d, err = describe("*** Begin Patch\n*** Delete File: gone.txt\n*** Add File: a/b/new.txt\n+x\n*** End Patch")
	if err != nil {
		t.Fatal(err)
	}
	var types []string
	steps, _ := d["steps"].([]any)
	for _, s := range steps {
		types = append(types, s.(map[string]any)["action_type"].(string))
	}
	if d["action_type"] != "MULTI_STEP_COMPOSITE" || strings.Join(types, " ") != "DIRECTORY_CREATE DIRECTORY_CREATE FILE_WRITE FILE_DELETE" {
		t.Errorf("composite: got %v steps %v", d["action_type"], types)
	}
	if sb, _ := d["sandbox"].(map[string]any); sb["required"] != true {
		t.Errorf("composite with a delete: sandbox %v, want required", sb)
	}
	if !strings.Contains(d["intent_summary"].(string), "apply_patch: delete gone.txt, add a/b/new.txt") {
		t.Errorf("intent: %v", d["intent_summary"])
	}

	// Refused, with the reason the model reads.
	for patch, want := range map[string]string{
		"*** Begin Patch\n*** Add File: link/x.txt\n+x\n*** End Patch":                          "outside the workspace " + ws + " once symbolic links are followed",
		"*** Begin Patch\n*** Update File: alias.txt\n@@\n-hello\n+hi\n*** End Patch":           "is a symbolic link",
		"*** Begin Patch\n*** Update File: ../x.txt\n@@\n-x\n+y\n*** End Patch":                 "is outside the workspace",
		"*** Begin Patch\n*** Delete File: ../x.txt\n*** End Patch":                             "is outside the workspace",
		"*** Begin Patch\n*** Add File: ../x.txt\n+x\n*** Delete File: ../x.txt\n*** End Patch": "is outside the workspace",
		"*** Begin Patch\n*** Add File: a*.txt\n+x\n*** End Patch":                              "holds a glob character",
		"*** Begin Patch\n*** Update File: keep.txt\n@@\n-nope\n+x\n*** End Patch":              "these lines are not in the file",
		"not a patch": "the first line must be",
	} {
		_, err := describe(patch)
		var r *hookRefusal
		if !errors.As(err, &r) || !strings.HasPrefix(r.why, "act refused this apply_patch, nothing was changed: ") || !strings.Contains(r.why, want) {
			t.Errorf("%q: got %v, want a refusal containing %q", patch, err, want)
		}
	}
	// A file the patch only adds, outside the workspace: planned, its
	// whole content in the patch; where it lies is the gate's to grade.
	if d, err := describe("*** Begin Patch\n*** Add File: ../x.txt\n+x\n*** End Patch"); err != nil {
		t.Errorf("an added file outside the workspace: %v", err)
	} else if op, _ := d["operation"].(map[string]any); op["path"] != filepath.Join(filepath.Dir(ws), "x.txt") {
		t.Errorf("an added file outside the workspace: %v", d)
	}
	// What lies outside is not read for an added file, so no answer
	// tells the model whether it exists or what it is: a directory, a
	// link or a large file there is the gate's to find, as a new file is.
	outsideDir := filepath.Dir(ws)
	os.Mkdir(filepath.Join(outsideDir, "adir"), 0o755)
	os.Symlink("/etc/passwd", filepath.Join(outsideDir, "alink"))
	for _, name := range []string{"adir", "alink", "absent"} {
		if _, err := describe("*** Begin Patch\n*** Add File: ../" + name + "\n+x\n*** End Patch"); err != nil {
			t.Errorf("an added %s outside the workspace: %v, want it planned without a look at what is there", name, err)
		}
	}
	// No patch at all is bad input, not a refusal: the hook blocks.
	if _, err := codexPatchDescriptor(map[string]json.RawMessage{}, ws, ws, caps, nil); err == nil || errors.As(err, new(*hookRefusal)) {
		t.Errorf("no command: got %v, want an error", err)
	}
}

func TestPatchDir(t *testing.T) {
	ws := t.TempDir()
	if err := os.Mkdir(filepath.Join(ws, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	other := t.TempDir()
	link := filepath.Join(other, "to-sub")
	if err := os.Symlink(filepath.Join(ws, "sub"), link); err != nil {
		t.Fatal(err)
	}
	for cwd, want := range map[string]string{
		"":                       ws,
		filepath.Join(ws, "sub"): filepath.Join(ws, "sub"),
		link:                     filepath.Join(ws, "sub"),
		other:                    other,
	} {
		if got, err := patchDir(cwd, ws); err != nil || got != want {
			t.Errorf("patchDir(%q) = %q, %v; want %q", cwd, got, err, want)
		}
	}
	if _, err := patchDir("rel", ws); err == nil {
		t.Error("a relative cwd: want an error")
	}
}

func TestCodexDenyOnly(t *testing.T) {
	d := &hookDecision{PermissionDecision: "ask", PermissionDecisionReason: "act could not dry-run this Bash", UpdatedInput: map[string]json.RawMessage{"command": []byte(`"x"`)}}
	codexDenyOnly(d)
	if d.PermissionDecision != "deny" || d.UpdatedInput != nil || !strings.Contains(d.PermissionDecisionReason, "Codex cannot ask a person for act") {
		t.Errorf("got %+v", d)
	}
	d = &hookDecision{PermissionDecision: "deny", PermissionDecisionReason: "no"}
	codexDenyOnly(d)
	if d.PermissionDecisionReason != "no" {
		t.Errorf("a deny changed: %+v", d)
	}
}

// TestCodexPatchNoReadOutside: a patch naming a file beyond a symbolic
// link out of the workspace is refused before act reads it, so the
// refusal says nothing of what lies there — whether the file exists, or
// whether the patch's lines are in it.
func TestCodexPatchNoReadOutside(t *testing.T) {
	ws, outside := t.TempDir(), t.TempDir()
	if err := os.WriteFile(filepath.Join(outside, "secret.txt"), []byte("password=hunter2\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(ws, "link")); err != nil {
		t.Fatal(err)
	}
	for _, patch := range []string{
		"*** Begin Patch\n*** Update File: link/secret.txt\n@@\n-password=guess\n+x\n*** End Patch",
		"*** Begin Patch\n*** Update File: link/secret.txt\n@@\n-password=hunter2\n+x\n*** End Patch",
		"*** Begin Patch\n*** Delete File: link/absent.txt\n*** End Patch",
		"*** Begin Patch\n*** Delete File: link/secret.txt\n*** End Patch",
		"*** Begin Patch\n*** Add File: x.txt\n+x\n*** Update File: x.txt\n*** Move to: link/secret.txt\n@@\n-x\n+y\n*** End Patch",
	} {
		_, err := codexPatchDescriptor(patchInput(t, patch), ws, ws, policy.ResourceCaps{}, nil)
		var r *hookRefusal
		if !errors.As(err, &r) || !strings.Contains(r.why, "outside the workspace "+ws+" once symbolic links are followed") {
			t.Errorf("%q: got %v, want the refusal of a path outside the workspace", patch, err)
		}
	}
}

// TestCodexPatchReadBound: a patch naming many large files is refused
// before act has read more than maxPatchRead bytes: memory it ran out of
// would crash the hook, and Codex runs the call of a crashed hook.
func TestCodexPatchReadBound(t *testing.T) {
	ws := t.TempDir()
	patch := "*** Begin Patch\n"
	for i := range maxPatchRead/maxPatchFile + 1 {
		name := fmt.Sprintf("big%d.log", i)
		if err := os.WriteFile(filepath.Join(ws, name), nil, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Truncate(filepath.Join(ws, name), maxPatchFile); err != nil {
			t.Fatal(err)
		}
		patch += "*** Delete File: " + name + "\n"
	}
	_, err := codexPatchDescriptor(patchInput(t, patch+"*** End Patch"), ws, ws, policy.ResourceCaps{}, nil)
	var r *hookRefusal
	if !errors.As(err, &r) || !strings.Contains(r.why, fmt.Sprintf("the patch names files of more than %d bytes in all", maxPatchRead)) {
		t.Errorf("got %v, want a refusal of the patch's size", err)
	}
}

// TestCodexPatchSecondLine: were the hook's own path check to miss a
// symbolic link out of the workspace (one swapped in after it looked),
// act's plan of the descriptor it made still refuses it: the scope is
// each file's directory as named, and the plan checks every path once
// links are followed.
func TestCodexPatchSecondLine(t *testing.T) {
	home := t.TempDir()
	proj := filepath.Join(home, "proj")
	if err := os.MkdirAll(proj, 0o755); err != nil {
		t.Fatal(err)
	}
	pol, err := policy.Default(home)
	if err != nil {
		t.Fatal(err)
	}
	g := &gate.Gate{Home: state.Dir{Root: filepath.Join(t.TempDir(), ".act")}, Policy: pol, Now: time.Now, EnvHome: home, UserHome: home}
	ctx := context.Background()
	plan := func(d *descriptors.Descriptor) error {
		ck, err := g.CheckBuilt(ctx, d)
		if err != nil {
			return err
		}
		defer ck.Release()
		_, _, err = g.PlanChecked(ctx, ck, gate.PlanOptions{})
		return err
	}
	for name, patch := range map[string]string{
		"add":            "*** Begin Patch\n*** Add File: sub/x.txt\n+x\n*** End Patch",
		"add in new dir": "*** Begin Patch\n*** Add File: sub/new/x.txt\n+x\n*** End Patch",
		"update":         "*** Begin Patch\n*** Update File: sub/keep.txt\n@@\n-a\n+b\n*** End Patch",
		"delete":         "*** Begin Patch\n*** Update File: sub/keep.txt\n@@\n-a\n+b\n*** Delete File: sub/gone.txt\n*** End Patch",
	} {
		sub, outside := filepath.Join(proj, "sub"), t.TempDir()
		for _, dir := range []string{sub, outside} {
			if err := os.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			for _, file := range []string{"keep.txt", "gone.txt"} {
				if err := os.WriteFile(filepath.Join(dir, file), []byte("a\n"), 0o644); err != nil {
					t.Fatal(err)
				}
			}
		}
		d, err := codexPatchDescriptor(patchInput(t, patch), proj, proj, policy.ResourceCaps{}, nil)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if err := plan(d); err != nil {
			t.Fatalf("%s: before the swap: %v", name, err)
		}
		if err := os.RemoveAll(sub); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(outside, sub); err != nil {
			t.Fatal(err)
		}
		err = plan(d)
		var probs problem.List
		if !errors.As(err, &probs) || !slices.ContainsFunc(probs, func(p problem.Problem) bool { return p.Rule == "path.symlink-outside-scope" }) {
			t.Errorf("%s: plan after the swap: %v; want it refused, a path outside its scope", name, err)
		}
		if err := os.Remove(sub); err != nil {
			t.Fatal(err)
		}
	}
}
