package cmd

import (
	"bytes"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/act-project/act/descriptors"
	"github.com/act-project/act/internal/document"
	"github.com/act-project/act/internal/outcome"
	"github.com/act-project/act/internal/pathglob"
)

// newTypes are the action types act new writes, with the operation of
// each: the short form (docs/descriptor.md, "Short form") leaves the rest
// to act. $P is the path (a command's or a package manager's workdir),
// $FORMAT CONFIG_CHANGE's format (from $P's extension).
var newTypes = map[descriptors.ActionType]string{
	descriptors.FileWrite: `operation:
  path: $P            # the file to write; its directory must exist
  content: |          # the whole new content; or content_base64, or edits: [{old, new}]
    Hello.`,
	descriptors.FileRead: `operation:
  path: $P            # apply prints its content`,
	descriptors.FileDelete: `operation:
  paths: [$P]         # files or globs ("/abs/dir/*.log")`,
	descriptors.FileMove: `operation:
  from: $P
  to: $P.moved        # overwrite: true replaces an existing target`,
	descriptors.DirectoryCreate: `operation:
  path: $P            # parents: true makes missing parents too (declare them in effects)`,
	descriptors.DirectoryDelete: `operation:
  path: $P            # removed with everything in it`,
	descriptors.ConfigChange: `operation:
  path: $P            # a JSON or YAML file; keys keep their order and comments
  format: $FORMAT       # json or yaml
  set: {"server.port": 8080}   # dotted keys; unset: [keys] removes`,
	descriptors.CommandExecution: `operation:
  argv: [sh, -c, "echo hello > out.txt"]   # no shell unless you name one
  workdir: $P         # its scope: it may change anything below (the diff is reviewed)
                      # env: {} adds to what the command gets anyway: your PATH,
                      # and HOME, your real home as the sandbox shows it (read-only,
                      # only the scopes and what builds need)`,
	descriptors.PackageInstall: `operation:
  manager: npm        # npm, pip (into the workdir's .venv) or go
  packages: [left-pad@1.3.0]   # dev: true (or -D) for development dependencies
  workdir: $P         # needs the host policy to allow the sandbox network`,
	descriptors.PackageRemove: `operation:
  manager: npm        # npm, pip (into the workdir's .venv) or go
  packages: [left-pad]
  workdir: $P`,
	descriptors.NetworkRequest: `operation:
  method: GET         # GET or HEAD only
  url: https://example.com/   # its host must be on the policy's network.allowed_hosts
  save_to: $P         # optional: where the body goes`,
	descriptors.UIAutomation: `operation: {}       # any object: act always blocks UI_AUTOMATION (no UI actuator here)`,
	descriptors.MultiStepComposite: `steps:                 # run in order, all or nothing
  - action_type: DIRECTORY_CREATE
    operation: {path: $P}
  - action_type: FILE_WRITE
    operation: {path: $P/README.md, content: "Hello.\n"}`,
}

// workdirTypes are the action types whose path is a directory they run in.
var workdirTypes = []descriptors.ActionType{descriptors.CommandExecution, descriptors.PackageInstall, descriptors.PackageRemove}

func newNewCommand(env *Env) *cli.Command {
	var types []string
	for t := range newTypes {
		types = append(types, string(t))
	}
	slices.Sort(types)
	return &cli.Command{
		Name:      "new",
		Usage:     "print a short descriptor to start from",
		UsageText: "act new [--path PATH] [--scope DIR] TYPE",
		Description: `Prints a descriptor of action type TYPE in the short form: its type, its
   intent and its operation, with a fresh action_id and created_at (keep
   them: act plan then act apply of the file are then one action). act
   fills in the rest (scope, effects, resources, sandbox, rollback, audit)
   from the operation and the host policy; act validate --expand prints the
   whole descriptor. It validates as it is: edit the intent and the
   operation, then act validate it. With --json, the same descriptor as
   data.descriptor.

   TYPE is one of: ` + strings.Join(types, ", ") + `.

   --path is the file or directory the action works on (a command's or a
   package manager's: the directory it runs in, its scope); the default is
   one in the current directory. --scope writes a scope of its own.

EXAMPLES:
   act new FILE_WRITE --path ~/proj/NOTES.md > d.yaml && act validate d.yaml
   act new COMMAND_EXECUTION --path ~/proj > build.yaml

` + endsWith("success", 1, 2).note(2, "usage (an unknown TYPE)").help(),
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "path", Usage: "the file or directory it works on; a command's workdir (default: one in the current directory)"},
			&cli.StringFlag{Name: "scope", Usage: "write this directory as the scope (default: left to act, from the operation)"},
		},
		Action: func(c *cli.Context) error {
			if c.NArg() != 1 {
				return usagef("new takes exactly one action type (%s), got %d arguments", strings.Join(types, ", "), c.NArg())
			}
			typ := descriptors.ActionType(strings.ToUpper(c.Args().First()))
			op, ok := newTypes[typ]
			if !ok {
				return usagef("act new does not know action type %q; it knows %s", c.Args().First(), strings.Join(types, ", "))
			}
			scope, path, err := newPaths(c.String("scope"), c.String("path"), typ)
			if err != nil {
				return usagef("%v", err)
			}
			id, err := newUUID()
			if err != nil {
				return err
			}
			format := "json"
			if ext := strings.ToLower(filepath.Ext(path)); ext == ".yaml" || ext == ".yml" {
				format = "yaml"
			}
			scopeText := ""
			if scope != "" {
				scopeText = "scope:                 # written by --scope; left out, act scopes what the operation names\n" +
					"  filesystem: {paths: [" + scope + "], recursive: true}\n"
			}
			text := newTemplate
			for _, kv := range [][2]string{
				{"$OPERATION", op}, {"$SCOPE", scopeText}, {"$TYPE", string(typ)},
				{"$ID", id}, {"$NOW", env.Now().UTC().Format(time.RFC3339)}, {"$FORMAT", format},
			} {
				text = strings.ReplaceAll(text, kv[0], kv[1])
			}
			text = withPath(text, path)
			res := &result{ActionID: id, ActionType: string(typ)}
			if env.json {
				// The same descriptor as data, for a program: comments
				// are for a person.
				doc, probs := document.Parse("new.yaml", []byte(text))
				if probs != nil {
					return fmt.Errorf("act new made a descriptor it cannot read: %v", probs)
				}
				res.Data = map[string]any{"descriptor": orderedJSON(doc.Root)}
			}
			return env.finish(res, outcome.OK.Status, nil, func(w io.Writer, _ styles) { io.WriteString(w, text) })
		},
	}
}

// withPath puts path in text for $P, each line's trailing comment where
// the template has it or, where the path pushed into it, right of the
// code, and the comment lines that go on under it along.
func withPath(text, path string) string {
	lines := strings.Split(text, "\n")
	col := 0
	for i, l := range lines {
		at := strings.Index(l, " # ")
		l = strings.ReplaceAll(l, "$P", path)
		lines[i] = l
		code, comment, ok := strings.Cut(l, " # ")
		switch {
		case !ok:
			col = 0
		case strings.TrimSpace(code) == "":
			if col > 0 {
				lines[i] = strings.Repeat(" ", col) + "# " + comment
			}
		default:
			code = strings.TrimRight(code, " ")
			col = max(at+1, len(code)+2)
			lines[i] = code + strings.Repeat(" ", col-len(code)) + "# " + comment
		}
	}
	return strings.Join(lines, "\n")
}

// orderedJSON is n as JSON, its objects' keys in the document's order.
func orderedJSON(n *document.Node) json.RawMessage {
	var b bytes.Buffer
	var enc func(n *document.Node)
	enc = func(n *document.Node) {
		switch n.Kind {
		case document.Map:
			b.WriteByte('{')
			for i, k := range n.Keys {
				if i > 0 {
					b.WriteByte(',')
				}
				kb, _ := json.Marshal(k)
				b.Write(kb)
				b.WriteByte(':')
				enc(n.Values[i])
			}
			b.WriteByte('}')
		case document.List:
			b.WriteByte('[')
			for i, it := range n.Items {
				if i > 0 {
					b.WriteByte(',')
				}
				enc(it)
			}
			b.WriteByte(']')
		default:
			vb, _ := json.Marshal(n.Scalar)
			b.Write(vb)
		}
	}
	enc(n)
	return b.Bytes()
}

// newPaths resolves --scope and --path: the path defaults to a name in
// the current directory (for a command or a package manager, the
// directory itself: its workdir); the scope is written only where given,
// and the path must lie in it.
func newPaths(scope, path string, typ descriptors.ActionType) (string, string, error) {
	abs := func(p string) (string, error) {
		if p == "~" || strings.HasPrefix(p, "~/") {
			h, err := os.UserHomeDir()
			if err != nil {
				return "", err
			}
			p = filepath.Join(h, strings.TrimPrefix(p, "~"))
		}
		return filepath.Abs(p)
	}
	var err error
	if path != "" {
		if path, err = abs(path); err != nil {
			return "", "", err
		}
	}
	if scope != "" {
		if scope, err = abs(scope); err != nil {
			return "", "", err
		}
	}
	if path == "" {
		dir := scope
		if dir == "" {
			if dir, err = os.Getwd(); err != nil {
				return "", "", err
			}
		}
		name := map[descriptors.ActionType]string{
			descriptors.DirectoryCreate: "new-dir", descriptors.DirectoryDelete: "old-dir",
			descriptors.ConfigChange: "config.json", descriptors.MultiStepComposite: "new-dir",
			descriptors.NetworkRequest: "download.html",
		}[typ]
		if name == "" {
			name = "NOTES.md"
		}
		path = filepath.Join(dir, name)
		if slices.Contains(workdirTypes, typ) {
			path = dir
		}
	}
	if scope != "" && !pathglob.Within(path, scope) {
		return "", "", fmt.Errorf("--path %s is not inside --scope %s", path, scope)
	}
	return scope, path, nil
}

// newUUID returns a random (version 4) UUID.
func newUUID() (string, error) {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:]), nil
}

const newTemplate = `# A $TYPE in the short form, made by act new: act fills in what is
# left out (scope, effects, resources, sandbox, rollback, audit) from the
# operation and the host policy; act validate --expand prints the whole
# descriptor; docs/descriptor.md in act's repository describes every field.
# Keep action_id: act promotes an id once, so act plan then act apply of
# this file are one action. A created_at older than the plan expiry is
# refused.
action_id: $ID
created_at: "$NOW"
action_type: $TYPE
intent_summary: Say in one sentence what this does and why.
$SCOPE$OPERATION
`
