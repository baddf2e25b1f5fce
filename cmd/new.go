package cmd

import (
	"crypto/rand"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/act-project/act/descriptors"
	"github.com/act-project/act/internal/pathglob"
)

// newTypes are the action types act new writes, with the operation of
// each and, where act cannot derive them from it (commands, packages, UI),
// the effects; $S is the scope, $P the path, $FORMAT CONFIG_CHANGE's
// format (from $P's extension).
var newTypes = map[descriptors.ActionType]struct {
	risk, effects, operation string
	sandbox, network, ui     bool
}{
	descriptors.FileWrite: {risk: "LOW", operation: `operation:
  path: $P            # the file to write; its directory must exist
  content: |          # the whole new content; or content_base64, or edits: [{old, new}]
    Hello.
  mode: "0644"        # quoted: an octal string
  create_only: false  # true: refuse if the file exists`},
	descriptors.FileRead: {risk: "LOW", operation: `operation:
  path: $P            # apply prints its content`},
	descriptors.FileDelete: {risk: "MEDIUM", sandbox: true, operation: `operation:
  paths: [$P]         # files or globs ("$S/*.log")`},
	descriptors.FileMove: {risk: "LOW", operation: `operation:
  from: $P
  to: $P.moved
  overwrite: false    # true: replace an existing target`},
	descriptors.DirectoryCreate: {risk: "LOW", operation: `operation:
  path: $P
  parents: false      # true: make missing parents too (declare them: effects.filesystem.create)
  mode: "0755"`},
	descriptors.DirectoryDelete: {risk: "MEDIUM", sandbox: true, operation: `operation:
  path: $P            # removed with everything in it`},
	descriptors.ConfigChange: {risk: "LOW", operation: `operation:
  path: $P            # a JSON or YAML file; keys keep their order and comments
  format: $FORMAT       # json or yaml
  set: {"server.port": 8080}   # dotted keys
  unset: []`},
	descriptors.CommandExecution: {risk: "MEDIUM", sandbox: true, effects: `effects:               # every change the command makes must be declared here
  filesystem:
    create: [$P]
    modify: []
    delete: []
  network: false
  system_state_change: false`, operation: `operation:
  argv: [sh, -c, "echo hello > $P"]   # no shell unless you name one
  workdir: $S
  env: {}             # added to what the command gets anyway: your PATH, and
                      # HOME, your real home as the sandbox shows it (read-only,
                      # only the scopes and what builds need)`},
	descriptors.PackageInstall: {risk: "MEDIUM", sandbox: true, network: true, effects: `effects:               # what the package manager changes in the workdir
  filesystem:
    create: ["$S/**"]
    modify: ["$S/**"]
    delete: []
  network: true
  system_state_change: false`, operation: `operation:
  manager: npm        # npm, pip (into the workdir's .venv) or go
  packages: [left-pad@1.3.0]
  workdir: $S         # needs the host policy to allow the sandbox network`},
	descriptors.PackageRemove: {risk: "MEDIUM", sandbox: true, network: true, effects: `effects:               # what the package manager changes in the workdir
  filesystem:
    create: ["$S/**"]
    modify: ["$S/**"]
    delete: ["$S/**"]
  network: true
  system_state_change: false`, operation: `operation:
  manager: npm        # npm, pip (into the workdir's .venv) or go
  packages: [left-pad]
  workdir: $S`},
	descriptors.NetworkRequest: {risk: "LOW", network: true, operation: `operation:
  method: GET         # GET or HEAD only
  url: https://example.com/   # its host must be on the policy's network.allowed_hosts
  headers: {}
  save_to: $P         # optional: where the body goes`},
	descriptors.UIAutomation: {risk: "HIGH", sandbox: true, ui: true, effects: `effects:
  filesystem: {create: [], modify: [], delete: []}
  network: false
  system_state_change: false`, operation: `operation: {}       # any object: act always blocks UI_AUTOMATION (no UI actuator here)`},
	descriptors.MultiStepComposite: {risk: "LOW", operation: `steps:                 # run in order, all or nothing; each inherits scope,
                       # resources, sandbox and rollback
  - action_type: DIRECTORY_CREATE
    operation: {path: $P}
  - action_type: FILE_WRITE
    operation: {path: $P/README.md, content: "Hello.\n"}`},
}

func newNewCommand(env *Env) *cli.Command {
	var types []string
	for t := range newTypes {
		types = append(types, string(t))
	}
	slices.Sort(types)
	return &cli.Command{
		Name:      "new",
		Usage:     "print a complete, valid descriptor to start from",
		UsageText: "act new [--scope DIR] [--path PATH] TYPE",
		Description: `Prints a descriptor of action type TYPE with a fresh action_id and
   created_at, every field filled in and explained in a comment. It validates
   as it is; edit the operation and effects, then act validate it.

   TYPE is one of: ` + strings.Join(types, ", ") + `.

EXAMPLES:
   act new FILE_WRITE --path ~/proj/NOTES.md > d.yaml && act validate d.yaml
   act new COMMAND_EXECUTION --scope ~/proj > build.yaml

` + endsWith("success", 1, 2).note(2, "usage (an unknown TYPE)").help(),
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "scope", Usage: "the directory the action may touch (default: the current directory)"},
			&cli.StringFlag{Name: "path", Usage: "the file or directory it works on (default: one in the scope)"},
		},
		Action: func(c *cli.Context) error {
			if c.NArg() != 1 {
				return usagef("new takes exactly one action type (%s), got %d arguments", strings.Join(types, ", "), c.NArg())
			}
			typ := descriptors.ActionType(strings.ToUpper(c.Args().First()))
			t, ok := newTypes[typ]
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
			effects := t.effects
			if effects == "" {
				effects = "# effects: left out, act derives them from the operation (act validate --expand shows them)"
			}
			text := newTemplate
			for _, kv := range [][2]string{
				{"$OPERATION", t.operation}, {"$EFFECTS", effects}, {"$TYPE", string(typ)}, {"$RISK", t.risk},
				{"$SANDBOX", strconv.FormatBool(t.sandbox)}, {"$NETWORK", strconv.FormatBool(t.network)}, {"$UI", strconv.FormatBool(t.ui)},
				{"$ID", id}, {"$NOW", env.Now().UTC().Format(time.RFC3339)}, {"$FORMAT", format},
			} {
				text = strings.ReplaceAll(text, kv[0], kv[1])
			}
			text = strings.ReplaceAll(strings.ReplaceAll(text, "$P", path), "$S", scope)
			_, err = fmt.Fprint(env.Stdio.Out, text)
			return err
		},
	}
}

// newPaths resolves --scope and --path: the scope defaults to the path's
// directory or the current directory, the path to a name in the scope.
func newPaths(scope, path string, typ descriptors.ActionType) (string, string, error) {
	abs := func(p string) (string, error) {
		if strings.HasPrefix(p, "~/") {
			h, err := os.UserHomeDir()
			if err != nil {
				return "", err
			}
			p = filepath.Join(h, p[2:])
		}
		return filepath.Abs(p)
	}
	var err error
	if path != "" {
		if path, err = abs(path); err != nil {
			return "", "", err
		}
	}
	switch {
	case scope != "":
		scope, err = abs(scope)
	case path != "":
		scope = filepath.Dir(path)
	default:
		scope, err = os.Getwd()
	}
	if err != nil {
		return "", "", err
	}
	if path == "" {
		name := map[descriptors.ActionType]string{
			descriptors.DirectoryCreate: "new-dir", descriptors.DirectoryDelete: "old-dir",
			descriptors.ConfigChange: "config.json", descriptors.CommandExecution: "out.txt",
			descriptors.MultiStepComposite: "new-dir", descriptors.NetworkRequest: "download.html",
		}[typ]
		if name == "" {
			name = "NOTES.md"
		}
		path = filepath.Join(scope, name)
	}
	if !pathglob.Within(path, scope) {
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

const newTemplate = `# A descriptor made by act new, in the short form: act fills in what is
# left out (act validate --expand prints the whole descriptor). Edit the
# operation, then run act validate on it. docs/descriptor.md in act's
# repository describes every field.
action_id: $ID      # keep it: act promotes an id once, and plan then apply
created_at: "$NOW"  # of this file are then the same action; too old is refused
intent_summary: Say in one sentence what this does and why.
action_type: $TYPE
risk_level: $RISK      # your grading; act grades the plan too and uses the stricter
scope:
  filesystem:
    paths: [$S]     # everything the action may touch lies under these
    recursive: true
  network:
    required: $NETWORK
  ui:
    required: $UI
resources:             # hard caps: a run past one is stopped and rejected (a test suite fits)
  max_cpu_ms: 300000
  max_memory_mb: 2048
  max_disk_mb: 1024
  max_duration_ms: 300000
preconditions:         # checked on the real machine before anything runs
  paths_exist: []
  network_available: false
  user_idle: false
$EFFECTS
sandbox:
  required: $SANDBOX
  allow_network: $NETWORK
  max_runs: 1          # how often the sandbox may run this id's commands
rollback:
  supported: true
  rollback_scope: declared_effects_only
confirmation:
  required: false      # true: always ask a person (say why in reason)
  reason: ""
  cooldown_on_repeat: false
audit:
  log: true
  log_level: SUMMARY   # SUMMARY, DETAILED or FORENSIC
  retain_days: 30
$OPERATION
`
