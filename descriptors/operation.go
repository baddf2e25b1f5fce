package descriptors

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// An Operation is the typed "operation" object of one action type.
type Operation interface {
	// Type is the action type this operation belongs to.
	Type() ActionType
}

// FileReadOp reads one file.
type FileReadOp struct {
	Path string `json:"path"`
}

// FileWriteOp creates or replaces one file. Exactly one of Content,
// ContentBase64 and Edits is set.
type FileWriteOp struct {
	Path          string  `json:"path"`
	Content       *string `json:"content,omitempty"`
	ContentBase64 *string `json:"content_base64,omitempty"`
	// Edits are exact-match replacements in the file as it is, in order.
	Edits      []Edit `json:"edits,omitempty"`
	Mode       string `json:"mode,omitempty"`
	CreateOnly bool   `json:"create_only,omitempty"`
}

// An Edit replaces Old, which must occur exactly once in the file (each
// occurrence, with ReplaceAll), by New.
type Edit struct {
	Old        string `json:"old"`
	New        string `json:"new"`
	ReplaceAll bool   `json:"replace_all,omitempty"`
}

// FileDeleteOp deletes files by absolute path or glob.
type FileDeleteOp struct {
	Paths []string `json:"paths"`
}

// FileMoveOp renames From to To.
type FileMoveOp struct {
	From      string `json:"from"`
	To        string `json:"to"`
	Overwrite bool   `json:"overwrite,omitempty"`
}

// DirectoryCreateOp creates a directory.
type DirectoryCreateOp struct {
	Path    string `json:"path"`
	Parents bool   `json:"parents,omitempty"`
	Mode    string `json:"mode,omitempty"`
}

// DirectoryDeleteOp deletes a directory (and its contents only when the
// scope is recursive).
type DirectoryDeleteOp struct {
	Path string `json:"path"`
}

// CommandExecutionOp runs argv (no implicit shell) in the sandbox.
type CommandExecutionOp struct {
	Argv    []string          `json:"argv"`
	Workdir string            `json:"workdir"`
	Env     map[string]string `json:"env,omitempty"`
	Stdin   string            `json:"stdin,omitempty"`
	// ReportCwd, for a shell script (argv [sh, -c, SCRIPT]), records the
	// directory the script ended in (the plan's command cwd), as an
	// agent's persistent shell keeps it: docs/descriptor.md.
	ReportCwd bool `json:"report_cwd,omitempty"`
}

// PackageOp installs or removes packages with a package manager run as a
// command in the sandbox.
type PackageOp struct {
	Manager  string   `json:"manager"`
	Packages []string `json:"packages"`
	Workdir  string   `json:"workdir"`
	// Dev: development dependencies (npm's devDependencies, a go.mod
	// tool directive); pip has none.
	Dev bool `json:"dev,omitempty"`

	actionType ActionType
}

// devFlags are the flags a manager's own command line takes for a
// development dependency, which a package list may hold as Dev does.
var devFlags = map[string][]string{"npm": {"-D", "--save-dev"}, "go": {"-tool"}}

// Split is the operation's packages without the manager's dev flags, and
// whether it is about development dependencies (Dev, or such a flag).
func (o PackageOp) Split() (pkgs []string, dev bool) {
	dev = o.Dev
	for _, p := range o.Packages {
		if slices.Contains(devFlags[o.Manager], p) {
			dev = true
			continue
		}
		pkgs = append(pkgs, p)
	}
	return pkgs, dev
}

// NetworkRequestOp is a GET or HEAD performed by act itself.
type NetworkRequestOp struct {
	Method  string            `json:"method"`
	URL     string            `json:"url"`
	Headers map[string]string `json:"headers,omitempty"`
	SaveTo  string            `json:"save_to,omitempty"`
}

// ConfigChangeOp sets and unsets dotted keys in a JSON or YAML file.
type ConfigChangeOp struct {
	Path   string         `json:"path"`
	Format string         `json:"format"`
	Set    map[string]any `json:"set,omitempty"`
	Unset  []string       `json:"unset,omitempty"`
}

// UIAutomationOp is accepted by the schema and always blocked by policy.
type UIAutomationOp map[string]any

// Type implements Operation.
func (FileReadOp) Type() ActionType { return FileRead }

// Type implements Operation.
func (FileWriteOp) Type() ActionType { return FileWrite }

// Type implements Operation.
func (FileDeleteOp) Type() ActionType { return FileDelete }

// Type implements Operation.
func (FileMoveOp) Type() ActionType { return FileMove }

// Type implements Operation.
func (DirectoryCreateOp) Type() ActionType { return DirectoryCreate }

// Type implements Operation.
func (DirectoryDeleteOp) Type() ActionType { return DirectoryDelete }

// Type implements Operation.
func (CommandExecutionOp) Type() ActionType { return CommandExecution }

// ShellScript says argv is [sh, -c, SCRIPT] (sh by any path).
func ShellScript(argv []string) bool {
	return len(argv) == 3 && (argv[0] == "sh" || strings.HasSuffix(argv[0], "/sh")) && argv[1] == "-c"
}

// Type implements Operation.
func (o PackageOp) Type() ActionType { return o.actionType }

// Type implements Operation.
func (NetworkRequestOp) Type() ActionType { return NetworkRequest }

// Type implements Operation.
func (ConfigChangeOp) Type() ActionType { return ConfigChange }

// Type implements Operation.
func (UIAutomationOp) Type() ActionType { return UIAutomation }

// DecodeOperation decodes raw into the operation type of t. Unknown fields
// are an error (the schema has already rejected them; this is a second line).
func DecodeOperation(t ActionType, raw json.RawMessage) (Operation, error) {
	var op Operation
	switch t {
	case FileRead:
		op = new(FileReadOp)
	case FileWrite:
		op = new(FileWriteOp)
	case FileDelete:
		op = new(FileDeleteOp)
	case FileMove:
		op = new(FileMoveOp)
	case DirectoryCreate:
		op = new(DirectoryCreateOp)
	case DirectoryDelete:
		op = new(DirectoryDeleteOp)
	case CommandExecution:
		op = new(CommandExecutionOp)
	case PackageInstall, PackageRemove:
		op = &PackageOp{actionType: t}
	case NetworkRequest:
		op = new(NetworkRequestOp)
	case ConfigChange:
		op = new(ConfigChangeOp)
	case UIAutomation:
		op = new(UIAutomationOp)
	case MultiStepComposite:
		return nil, nil
	default:
		return nil, fmt.Errorf("unknown action type %q", t)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(op); err != nil {
		return nil, fmt.Errorf("decode %s operation: %w", t, err)
	}
	// Return the value, not the pointer, so type switches read naturally.
	switch o := op.(type) {
	case *FileReadOp:
		return *o, nil
	case *FileWriteOp:
		return *o, nil
	case *FileDeleteOp:
		return *o, nil
	case *FileMoveOp:
		return *o, nil
	case *DirectoryCreateOp:
		return *o, nil
	case *DirectoryDeleteOp:
		return *o, nil
	case *CommandExecutionOp:
		return *o, nil
	case *PackageOp:
		return *o, nil
	case *NetworkRequestOp:
		return *o, nil
	case *ConfigChangeOp:
		return *o, nil
	case *UIAutomationOp:
		return *o, nil
	}
	return op, nil
}
