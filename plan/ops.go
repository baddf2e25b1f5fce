package plan

// Operations carried out by act (docs/descriptor.md, docs/sandbox.md). [RunOps] carries out a
// descriptor's file operations through a [sandbox.System]: into a layer
// for a plan, and the same code on any other System. The rules:
//
//   - Every path an operation touches lies inside scope.filesystem.paths
//     (recursive: the subtree; not recursive: the path and its direct
//     children) after symlinks are resolved component by component through
//     the System, at most 40 of them per path. A path that resolves outside
//     the scope through a symlink is path.symlink-outside-scope. Scope paths
//     are not resolved themselves: a scope path that is, or lies below, a
//     symlink resolves outside itself, and is refused (fail closed).
//   - Operations act on the resolved path. FILE_READ, FILE_WRITE and
//     CONFIG_CHANGE follow a symlink that is the last component (they read
//     and write its target); FILE_DELETE, FILE_MOVE and DIRECTORY_DELETE
//     act on the link itself, never its target.
//   - Globs (FILE_DELETE) are expanded by listing, through the System, only
//     the directories the pattern can reach: the longest literal prefix is
//     resolved, then each element lists one directory; `**` walks below.
//     Expansion never descends through a symlink.
//   - Nothing is created implicitly: FILE_WRITE, FILE_MOVE and
//     DIRECTORY_CREATE without parents need the parent directory to exist.
//   - Modes: FILE_WRITE keeps an existing file's mode unless mode is given,
//     and creates with 0644; DIRECTORY_CREATE creates with mode, default
//     0755, and missing ancestors (parents: true) with 0755; CONFIG_CHANGE
//     keeps the file's mode. Modes are exact: the umask does not apply.
//     A read-only file is replaced all the same: its mode protects it from
//     accidents, and this write is declared and reviewed.
//   - DIRECTORY_CREATE of an existing directory succeeds with parents
//     (mkdir -p: nothing changes, the mode included) and fails without.
//   - Directories are deleted with their contents only when the scope is
//     recursive: DIRECTORY_DELETE of a non-empty directory, FILE_DELETE of
//     a directory named by a literal path (never by a glob), FILE_MOVE of a
//     non-empty directory.
//   - Every operation first checks all it needs, then changes the tree, so
//     that a refused operation changes nothing. A composite's steps run in
//     order against the same System and see each other's results; the
//     first step that fails ends the run. On a layer that is all or
//     nothing: the caller throws the layer away.
//
// An operation that cannot be carried out is an *[OpError] (or several,
// in [OpErrors]) with a stable rule id from [OpRules]; a filesystem failure
// that says nothing about the descriptor is an ordinary error.

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/act-project/act/descriptors"
	"github.com/act-project/act/diff"
	"github.com/act-project/act/internal/problem"
	"github.com/act-project/act/sandbox"
)

// ErrNotFileOperation is returned (wrapped) by [RunOps] for an action type
// act does not carry out as a file operation: COMMAND_EXECUTION,
// PACKAGE_INSTALL, PACKAGE_REMOVE, NETWORK_REQUEST and UI_AUTOMATION.
var ErrNotFileOperation = errors.New("not a file operation")

// MaxReadContent is how much of a file FILE_READ keeps in its
// [ReadResult]; the size and digest always cover the whole file.
const MaxReadContent = 1 << 20

// maxConfigSize bounds the file CONFIG_CHANGE edits.
const maxConfigSize = 16 << 20

// maxSymlinks bounds the symlinks followed to resolve one path, as Linux's
// MAXSYMLINKS does.
const maxSymlinks = 40

// OpsResult is what carrying out the operations produced besides the
// changes to the tree, which the diff finds.
type OpsResult struct {
	// Read holds what each FILE_READ read, in step order.
	Read []ReadResult `json:"read,omitempty"`
	// Notes are things worth a warning that are not failures: a glob that
	// matched nothing, a directory that already existed, a key to unset
	// that was not there.
	Notes []Note `json:"notes,omitempty"`
	// Fetched holds each NETWORK_REQUEST performed.
	Fetched []FetchResult `json:"fetched,omitempty"`
	// Commands holds each command run in the sandbox, verification
	// included.
	Commands []CommandResult `json:"commands,omitempty"`
}

// A ReadResult is the file a FILE_READ read.
type ReadResult struct {
	// Field is the descriptor field path of the operation's path.
	Field []string `json:"field"`
	// Path is the path as the descriptor names it; Resolved is the file
	// read, after symlinks (equal to Path when there were none).
	Path     string `json:"path"`
	Resolved string `json:"resolved"`
	Mode     string `json:"mode"` // 4-digit octal
	Size     int64  `json:"size"`
	SHA256   string `json:"sha256"`
	// Content is the file's first MaxReadContent bytes; Truncated says
	// whether there was more. It is never saved with the plan (a file
	// read may hold secrets): apply reads the file again, checked against
	// SHA256.
	Content   []byte `json:"-"`
	Truncated bool   `json:"truncated"`
}

// A Note is an observation about an operation that succeeded. Rule is one
// of the warning ids of [OpRules], or [RuleVerificationWrote].
type Note struct {
	Rule  string   `json:"rule"`
	Field []string `json:"field"`
	Path  string   `json:"path"`
	Msg   string   `json:"message"`
}

// An OpError is an operation that cannot be carried out on the tree as it
// is (docs/exit-codes.md: exit 6). Rule is a stable id from [OpRules] (or
// path.outside-scope, the static rule's); Field is the descriptor field
// path of the value at fault, e.g. {"steps", "2", "operation", "from"};
// Path is the path concerned; Msg one plain sentence; Err the cause, if
// any.
type OpError struct {
	Rule  string
	Field []string
	Path  string
	Msg   string
	Err   error
}

func (e *OpError) Error() string {
	return e.Rule + ": " + problem.FieldPath(e.Field...) + ": " + e.Msg
}

// Unwrap returns the cause.
func (e *OpError) Unwrap() error { return e.Err }

// OpErrors are the failures of one operation that checks several paths
// (FILE_DELETE reports every entry it cannot delete). errors.As finds the
// first *OpError in it.
type OpErrors []*OpError

func (l OpErrors) Error() string {
	switch len(l) {
	case 0:
		return "no operation errors"
	case 1:
		return l[0].Error()
	}
	return fmt.Sprintf("%s (and %d more)", l[0].Error(), len(l)-1)
}

// Unwrap returns the errors.
func (l OpErrors) Unwrap() []error {
	out := make([]error, len(l))
	for i, e := range l {
		out[i] = e
	}
	return out
}

// OpRules returns every rule id RunOps reports, failures then warnings (the
// ids of [Note]), each by id. RunOps may also report path.outside-scope,
// which is in [descriptors.Rules], and the warning [RuleVerificationWrote],
// which is in [Rules].
func OpRules() []descriptors.Rule {
	out := make([]descriptors.Rule, len(opRules))
	copy(out, opRules)
	return out
}

var opRules = []descriptors.Rule{
	{ID: "op.command-failed", Summary: "a COMMAND_EXECUTION or package manager run exited with a non-zero status or was killed"},
	{ID: "op.command-not-started", Summary: "a command could not be started in the sandbox (e.g. the program does not exist)"},
	{ID: "op.cap-exceeded", Summary: "a command was stopped by a resources cap (wall clock, CPU, memory, disk, processes), named with its figure and mechanism"},
	{ID: RuleNetworkRefused, Summary: "act's egress proxy refused a command's connection to a host the host policy's network.allowed_hosts does not list (or an address it does not name): beside the command's failure, or a warning when it did not fail; or a command without the network failed with output that reads like a connection failing for lack of one, and is told how a command gets it"},
	{ID: "op.verification-failed", Summary: "a verification command exited with a non-zero status"},
	{ID: "op.network-host-not-allowed", Summary: "a NETWORK_REQUEST, or a redirect it was given, goes to a host the host policy's network.allowed_hosts does not list, or that resolves to a loopback, link-local, private or metadata address no entry names"},
	{ID: "op.network-failed", Summary: "a NETWORK_REQUEST could not be performed (connection, TLS, timeout)"},
	{ID: "op.network-status", Summary: "a NETWORK_REQUEST was answered with a status other than 2xx"},
	{ID: "op.network-too-large", Summary: "a NETWORK_REQUEST's response is larger than max_disk_mb"},
	{ID: "op.config-key-conflict", Summary: "a CONFIG_CHANGE key runs through a value that is not a map (a string, a number, a list, a YAML alias), or the file's top level is not a map"},
	{ID: "op.config-parse", Summary: "the file a CONFIG_CHANGE edits is not one valid JSON or YAML document (duplicate keys included)"},
	{ID: "op.config-too-large", Summary: "the file a CONFIG_CHANGE edits is larger than 16 MiB"},
	{ID: "op.create-only-exists", Summary: "a FILE_WRITE with create_only names a path that exists (a symlink included)"},
	{ID: "op.delete-directory", Summary: "a FILE_DELETE matches a directory: only a directory named by a literal path, with a recursive scope, is deleted; otherwise use DIRECTORY_DELETE"},
	{ID: "op.edit-ambiguous", Summary: "a FILE_WRITE edit's old occurs more than once in the file (the count is named) and replace_all is not set"},
	{ID: "op.edit-not-found", Summary: "a FILE_WRITE edit's old does not occur in the file as it is (after the edits before it, and in a composite after the steps before it)"},
	{ID: "op.edit-too-large", Summary: "the file a FILE_WRITE's edits change is larger than 16 MiB"},
	{ID: "op.invalid-content", Summary: "a FILE_WRITE has not exactly one of content, content_base64 and edits, or content_base64 is not base64"},
	{ID: "op.invalid-mode", Summary: "a mode is not a 4-digit octal number"},
	{ID: "op.move-into-itself", Summary: "a FILE_MOVE's to is its from, or lies inside it, once symlinks are resolved"},
	{ID: "op.not-a-directory", Summary: "a DIRECTORY_DELETE names a file or a symlink"},
	{ID: "op.not-a-file", Summary: "a FILE_READ, FILE_WRITE or CONFIG_CHANGE names something that is not a regular file (a device, a pipe, a socket)"},
	{ID: "op.not-empty", Summary: "a DIRECTORY_DELETE or FILE_MOVE of a non-empty directory, without scope.filesystem.recursive"},
	{ID: "op.parent-missing", Summary: "the directory a path goes in does not exist (only DIRECTORY_CREATE with parents creates directories)"},
	{ID: "op.parent-not-directory", Summary: "the parent of a path is not a directory"},
	{ID: "op.parent-outside-scope", Summary: "a DIRECTORY_CREATE with parents would create a missing ancestor outside the scope"},
	{ID: "op.path-missing", Summary: "the path a FILE_READ, FILE_DELETE, DIRECTORY_DELETE, CONFIG_CHANGE or a FILE_WRITE with edits names does not exist"},
	{ID: "op.permission-denied", Summary: "the filesystem refused the operation"},
	{ID: "op.pip-no-venv", Summary: "a PACKAGE_INSTALL or PACKAGE_REMOVE with manager pip, whose workdir holds no virtual environment (.venv or venv) to install into"},
	{ID: "op.source-missing", Summary: "a FILE_MOVE's from does not exist"},
	{ID: "op.target-exists", Summary: "a FILE_MOVE's to exists without overwrite, or a DIRECTORY_CREATE's path exists (without parents, or not as a directory)"},
	{ID: "op.target-is-directory", Summary: "a FILE_WRITE, or a FILE_MOVE with overwrite, names a directory"},
	{ID: "path.symlink-loop", Summary: "resolving a path follows more than 40 symlinks"},
	{ID: "path.symlink-outside-scope", Summary: "a path resolves outside scope.filesystem.paths through a symlink"},

	// Warnings (Note.Rule).
	{ID: "op.config-key-absent", Summary: "warning: a CONFIG_CHANGE unsets a key that is not in the file"},
	{ID: "op.directory-exists", Summary: "warning: a DIRECTORY_CREATE with parents found the directory already there"},
	{ID: "op.glob-no-match", Summary: "warning: a FILE_DELETE glob matched nothing"},
	{ID: "op.memory-per-process", Summary: "warning: no memory cgroup is writable, so the memory cap is RLIMIT_AS per process, not a total cap (docs/sandbox-process.md)"},
}

// RunOps carries out the operation of d, or the steps of a composite in
// order, through sys, inside d's scope. It returns an *OpError or OpErrors
// when an operation cannot be carried out, an error wrapping
// ErrNotFileOperation when d holds an action type that is not a file
// operation (before doing anything), and ctx's error when it is done.
func RunOps(ctx context.Context, d *descriptors.Descriptor, sys sandbox.System) (*OpsResult, error) {
	return RunOpsWith(ctx, d, sys, RunOptions{})
}

// RunOptions add what some operations need beyond the filesystem.
type RunOptions struct {
	// Fetch performs NETWORK_REQUEST; nil leaves it unsupported.
	Fetch Fetcher
	// Exec runs COMMAND_EXECUTION, PACKAGE_* and verification commands;
	// nil leaves them unsupported.
	Exec Commander
	// MaxBody bounds a response body (the descriptor's max_disk_mb).
	MaxBody int64
	// Ready, if not nil, is called before a network request (its error
	// stops the request and is RunOpsWith's); a Commander has its own.
	Ready func() error
	// UserHome is the password database's home of the user act runs as:
	// a package manager reads its configuration there (the sandbox's
	// copy, with placeholders for its secrets).
	UserHome string
}

// RunOpsWith is [RunOps] with options.
func RunOpsWith(ctx context.Context, d *descriptors.Descriptor, sys sandbox.System, opts RunOptions) (*OpsResult, error) {
	if err := checkFileOps(nil, d.ActionType, d.Steps, opts); err != nil {
		return nil, err
	}
	if d.Verification != nil && len(d.Verification.Commands) > 0 && opts.Exec == nil {
		return nil, fmt.Errorf("verification: %w", ErrNotFileOperation)
	}
	r := &runner{ctx: ctx, sys: sys, scope: newScope(d.Scope.Filesystem), res: new(OpsResult), fetch: opts.Fetch, maxBody: opts.MaxBody, exec: opts.Exec, ready: opts.Ready, home: opts.UserHome}
	var err error
	if d.ActionType == descriptors.MultiStepComposite {
		err = r.runSteps(nil, d.Steps)
	} else {
		err = r.run([]string{"operation"}, d.ActionType, d.Op)
	}
	if err != nil {
		return nil, err
	}
	// Verification verifies: each command runs over the planned result
	// in a throwaway layer, and what it writes is a warning, never part
	// of the plan (docs/sandbox.md, "Verification").
	if d.Verification != nil {
		for i, argv := range d.Verification.Commands {
			if err := r.verify([]string{"verification", "commands", strconv.Itoa(i)}, argv, d.Verification.Workdir, d.Verification.Env); err != nil {
				return nil, err
			}
		}
	}
	return r.res, nil
}

func checkFileOps(f []string, t descriptors.ActionType, steps []descriptors.Step, opts RunOptions) error {
	switch t {
	case descriptors.NetworkRequest:
		if opts.Fetch != nil {
			return nil
		}
	case descriptors.CommandExecution, descriptors.PackageInstall, descriptors.PackageRemove:
		if opts.Exec != nil {
			return nil
		}
	case descriptors.FileRead, descriptors.FileWrite, descriptors.FileDelete, descriptors.FileMove,
		descriptors.DirectoryCreate, descriptors.DirectoryDelete, descriptors.ConfigChange:
		return nil
	case descriptors.MultiStepComposite:
		for i, s := range steps {
			if err := checkFileOps(field(f, "steps", strconv.Itoa(i)), s.ActionType, s.Steps, opts); err != nil {
				return err
			}
		}
		return nil
	}
	return fmt.Errorf("%s: %s: %w", problem.FieldPath(field(f, "action_type")...), t, ErrNotFileOperation)
}

// runner carries out the operations of one descriptor.
type runner struct {
	ctx     context.Context
	sys     sandbox.System
	scope   scope
	res     *OpsResult
	fetch   Fetcher
	maxBody int64
	exec    Commander
	ready   func() error
	home    string
}

func (r *runner) runSteps(f []string, steps []descriptors.Step) error {
	for i, s := range steps {
		sf := field(f, "steps", strconv.Itoa(i))
		var err error
		if s.ActionType == descriptors.MultiStepComposite {
			err = r.runSteps(sf, s.Steps)
		} else {
			err = r.run(field(sf, "operation"), s.ActionType, s.Op)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// run carries out one operation; f is the field path of its operation
// object.
func (r *runner) run(f []string, t descriptors.ActionType, op descriptors.Operation) error {
	if err := r.ctx.Err(); err != nil {
		return err
	}
	if op == nil || op.Type() != t {
		return fmt.Errorf("%s: the %s operation was not decoded", problem.FieldPath(f...), t)
	}
	switch o := op.(type) {
	case descriptors.FileReadOp:
		return r.fileRead(f, o)
	case descriptors.FileWriteOp:
		return r.fileWrite(f, o)
	case descriptors.FileDeleteOp:
		return r.fileDelete(f, o)
	case descriptors.FileMoveOp:
		return r.fileMove(f, o)
	case descriptors.DirectoryCreateOp:
		return r.directoryCreate(f, o)
	case descriptors.DirectoryDeleteOp:
		return r.directoryDelete(f, o)
	case descriptors.ConfigChangeOp:
		return r.configChange(f, o)
	case descriptors.NetworkRequestOp:
		return r.networkRequest(f, o)
	case descriptors.CommandExecutionOp:
		return r.runCommand(f, "command", o.Argv, o.Workdir, o.Env, o.Stdin, o.ReportCwd)
	case descriptors.PackageOp:
		argv := packageArgv(t, o)
		if o.Manager == "pip" {
			py, err := r.venvPython(f, o.Workdir)
			if err != nil {
				return err
			}
			argv = append([]string{py, "-m"}, argv...)
		}
		return r.command(f, "package manager", argv, o.Workdir, packageEnv(o.Manager, r.home), "")
	}
	return fmt.Errorf("%s: %s: %w", problem.FieldPath(f...), t, ErrNotFileOperation)
}

// venvPython is the interpreter of the virtual environment pip works in:
// .venv or venv in the operation's workdir (the first scope path when it
// names none), as the layer has it, so an earlier step may have made it.
// Outside one, pip would write to the system's site-packages, which the
// sandbox keeps read-only: that is refused here, saying so.
func (r *runner) venvPython(f []string, workdir string) (string, error) {
	if workdir == "" && len(r.scope.paths) > 0 {
		workdir = r.scope.paths[0]
	} else if _, err := r.resolve(field(f, "workdir"), workdir, true); err != nil {
		return "", err
	}
	for _, v := range []string{".venv", "venv"} {
		py := filepath.Join(workdir, v, "bin", "python")
		if _, err := r.sys.Lstat(py); err == nil {
			return py, nil
		}
	}
	return "", opErr("op.pip-no-venv", field(f, "workdir"), workdir, nil,
		"pip installs into a virtual environment in the workdir, and %s has none (.venv or venv): create one first (python3 -m venv .venv)", workdir)
}

func (r *runner) note(rule string, f []string, p, format string, args ...any) {
	r.res.Notes = append(r.res.Notes, Note{Rule: rule, Field: f, Path: p, Msg: fmt.Sprintf(format, args...)})
}

func opErr(rule string, f []string, p string, cause error, format string, args ...any) *OpError {
	return &OpError{Rule: rule, Field: f, Path: p, Msg: fmt.Sprintf(format, args...), Err: cause}
}

// fsErr turns a failure of the System on path p into an OpError when the
// filesystem refused (permission), else into an ordinary error.
func fsErr(f []string, verb, p string, err error) error {
	if errors.Is(err, fs.ErrPermission) {
		return opErr("op.permission-denied", f, p, err, "cannot %s %q: permission denied", verb, p)
	}
	return fmt.Errorf("%s %s: %w", verb, p, err)
}

// field returns a new field path: prefix then elems.
func field(prefix []string, elems ...string) []string {
	out := make([]string, 0, len(prefix)+len(elems))
	return append(append(out, prefix...), elems...)
}

// modeBits are the bits a mode sets: permissions, setuid, setgid, sticky.
const modeBits = fs.ModePerm | fs.ModeSetuid | fs.ModeSetgid | fs.ModeSticky

// parseMode reads the mode s ("0644") of the operation on p; "" gives def
// and false.
func parseMode(f []string, p, s string, def fs.FileMode) (fs.FileMode, bool, error) {
	if s == "" {
		return def, false, nil
	}
	m, err := diff.ParseMode(s)
	if err != nil {
		return 0, false, opErr("op.invalid-mode", f, p, nil, "the mode %q is not a 4-digit octal number", s)
	}
	return m, true, nil
}

// A scope is scope.filesystem: the paths an operation may touch.
type scope struct {
	paths     []string // clean; plain paths or globs
	recursive bool
}

func newScope(fs descriptors.FilesystemScope) scope {
	s := scope{recursive: fs.Recursive}
	for _, p := range fs.Paths {
		if strings.HasPrefix(p, "/") {
			s.paths = append(s.paths, path.Clean(p))
		}
	}
	return s
}

// String lists the scope for messages.
func (s scope) String() string {
	how := "not recursive"
	if s.recursive {
		how = "recursive"
	}
	q := make([]string, len(s.paths))
	for i, p := range s.paths {
		q[i] = strconv.Quote(p)
	}
	return "[" + strings.Join(q, ", ") + "] (" + how + ")"
}
