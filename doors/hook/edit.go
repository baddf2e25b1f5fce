package hook

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"syscall"

	"github.com/act-project/act/descriptors"
	"github.com/act-project/act/internal/claudeedit"
	"github.com/act-project/act/internal/pathglob"
	"github.com/act-project/act/policy"
	"github.com/act-project/act/review"
)

// maxEditFile is the largest file act reads to make a Claude Code Edit
// of it (the limit of a FILE_WRITE's edits).
const maxEditFile = 16 << 20

// hookEditDescriptor is the descriptor of an Edit or MultiEdit of path:
// inside the workspace ws, the file's whole new content as Claude Code's
// own Edit makes it (claudeedit: its quote and line-ending
// normalisation, its line endings kept), with a sha256 precondition on
// the file act read, so that a file changed since is refused rather than
// overwritten; a new file (an empty old_string) is written as a Write
// is. Elsewhere — outside the workspace, or through a symbolic link —
// the exact-match edits, which the policy and the plan judge as any
// FILE_WRITE's (docs/agents.md, "Edit as Claude Code makes it"). An edit
// Claude Code's Edit would refuse is a hookRefusal with its message. The
// scope is the file's directory, or the file itself where that is a home
// (homes: descriptors.FileScope).
func hookEditDescriptor(tool, path string, edits []descriptors.Edit, ws string, caps policy.ResourceCaps, homes []string) (*descriptors.Descriptor, error) {
	intent := review.Intent(tool + " " + path)
	scope, _ := descriptors.FileScope(path, homes)
	exact := func() (*descriptors.Descriptor, error) {
		op := descriptors.FileWriteOp{Path: path, Edits: edits}
		return descriptors.Built(intent, op, nil, descriptors.FilesystemScope{Paths: []string{scope}}, hookFileResources(0, caps), false), nil
	}
	if ws == "" || pathglob.HasMeta(path) || !realWithin(path, ws) {
		return exact()
	}
	refuse := func(why string) error {
		return &hookRefusal{fmt.Sprintf("act refused this %s, nothing was changed: %s", tool, why)}
	}
	var ce []claudeedit.Edit
	for _, e := range edits {
		ce = append(ce, claudeedit.Edit{Old: e.Old, New: e.New, ReplaceAll: e.ReplaceAll})
	}
	fi, err := os.Lstat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		content, err := claudeedit.Apply(nil, false, ce)
		if err != nil {
			return nil, refuse(err.Error())
		}
		return hookWriteDescriptor(intent, path, string(content), caps, homes), nil
	case err != nil:
		return nil, refuse(err.Error())
	case !fi.Mode().IsRegular():
		return exact() // a link, a directory…: the plan says what it is
	case fi.Size() > maxEditFile:
		return nil, refuse(fmt.Sprintf("%s is larger than the %d bytes act edits", path, maxEditFile))
	}
	data, err := readRegular(path, maxEditFile)
	if err != nil {
		return nil, refuse(err.Error())
	}
	content, err := claudeedit.Apply(data, true, ce)
	if err != nil {
		return nil, refuse(err.Error())
	}
	s := string(content)
	sum := sha256.Sum256(data)
	d := descriptors.Built(intent, descriptors.FileWriteOp{Path: path, Content: &s}, nil,
		descriptors.FilesystemScope{Paths: []string{scope}}, hookFileResources(len(s), caps), false)
	d.Preconditions.SHA256 = map[string]string{path: hex.EncodeToString(sum[:])}
	d.Effects.Filesystem = descriptors.FilesystemEffects{Create: []string{}, Modify: []string{path}, Delete: []string{}}
	return d, nil
}

// readRegular reads the regular file at path, at most max bytes,
// through no symbolic link at its end.
func readRegular(path string, max int64) ([]byte, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil {
		return nil, err
	} else if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file", path)
	}
	data, err := io.ReadAll(io.LimitReader(f, max+1))
	if err == nil && int64(len(data)) > max {
		err = fmt.Errorf("%s is larger than the %d bytes act edits", path, max)
	}
	return data, err
}
