package agentsetup

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/act-project/act/internal/atomicfile"
	"github.com/act-project/act/internal/outcome"
)

// InstallOptions are what [Install] writes.
type InstallOptions struct {
	Places
	Agent Agent
	// Project is the project whose settings file gets the hook, absolute
	// and resolved; "" for the user's settings file.
	Project string
	// Workspace is the hook's --workspace: absolute and resolved.
	Workspace string
	// Act is the absolute path of act.
	Act string
	// Globals are act's global flags the hook keeps (--home DIR, --policy
	// FILE).
	Globals []string
	// Timeout is act hook's --timeout; the agent's timeout for the hook
	// is longer by a margin.
	Timeout time.Duration
	// Record, if not nil, is the user policy that gets Workspace once the
	// agent's settings are written; nil: the policy makes it a workspace
	// already, or none of the user's can.
	Record *WorkspaceRecord
}

// A Written file is one install changed.
type Written struct {
	File    string `json:"file"`
	Created bool   `json:"created"`
	// Unchanged: the file held act's hook as install writes it already,
	// and was left as it was.
	Unchanged bool     `json:"unchanged"`
	Changes   []string `json:"changes"`
	// Policy: the file is the user policy, which records the workspace
	// (InstallOptions.Record).
	Policy bool `json:"policy,omitempty"`
}

// InstallResult is what [Install] did.
type InstallResult struct {
	Agent Agent `json:"agent"`
	// Command is the hook's command line, Timeout the agent's timeout for
	// it in seconds.
	Command string    `json:"command"`
	Timeout int64     `json:"timeout_seconds"`
	Written []Written `json:"written"`
	// Check is the set-up as act hook check reads it afterwards.
	Check *Report `json:"check"`
}

// A RefusedError is an install refused: the findings no rewrite of act's
// own entries puts right. Nothing was written.
type RefusedError struct {
	Agent    Agent
	Findings []Finding
}

func (e *RefusedError) Error() string {
	return fmt.Sprintf("act hook install %s refused, nothing written: %s", e.Agent, findingsText(e.Findings))
}

// findingsText is fs on one line.
func findingsText(fs []Finding) string {
	var b strings.Builder
	for _, f := range fs {
		if f.Severity == Warning {
			continue
		}
		if b.Len() > 0 {
			b.WriteString("; ")
		}
		if f.File != "" {
			b.WriteString(f.File + ": ")
		}
		b.WriteString(f.Message)
	}
	return b.String()
}

// Outcome is [outcome.HookUnsafe].
func (e *RefusedError) Outcome() outcome.Outcome { return outcome.HookUnsafe }

// Install writes act's hook into the agent's settings: see the package
// documentation.
func Install(o InstallOptions) (*InstallResult, error) {
	if !filepath.IsAbs(o.Act) || !filepath.IsAbs(o.Workspace) || (o.Project != "" && !filepath.IsAbs(o.Project)) {
		return nil, fmt.Errorf("install needs absolute paths: act %q, workspace %q, project %q", o.Act, o.Workspace, o.Project)
	}
	if o.Timeout <= 0 {
		return nil, fmt.Errorf("--timeout must be positive, got %s", o.Timeout)
	}
	res := &InstallResult{Agent: o.Agent, Written: []Written{},
		Command: commandLine(o.Act, o.Globals, o.Agent, o.Workspace, o.Timeout), Timeout: hookSeconds(o.Timeout)}
	var err error
	switch o.Agent {
	case ClaudeCode:
		err = installClaude(o, res)
	case Codex:
		err = installCodex(o, res)
	default:
		return nil, fmt.Errorf("unknown agent %q: act hook install takes claude-code or codex", o.Agent)
	}
	if err != nil {
		return nil, err
	}
	if o.Record != nil {
		w, err := recordWorkspace(o.Record, o.Workspace)
		if err != nil {
			return res, err
		}
		res.Written = append(res.Written, w)
	}
	res.Check, err = Check(CheckOptions{Places: o.Places, Agent: o.Agent, Project: o.Project, ActTimeout: o.Timeout})
	if err != nil {
		return res, err
	}
	if res.Check.Failing() {
		return res, outcome.New(outcome.HookUnsafe, fmt.Errorf("act hook install %s wrote %s, but the set-up is still not safe: %s",
			o.Agent, writtenFiles(res), findingsText(res.Check.Findings)))
	}
	return res, nil
}

func writtenFiles(r *InstallResult) string {
	var fs []string
	for _, w := range r.Written {
		fs = append(fs, w.File)
	}
	return strings.Join(fs, " and ")
}

// refuse is the error of an install whose set-up has findings outside
// what install rewrites (targets: files it rewrites act's entries in).
func refuse(agent Agent, r *Report, targets []string) error {
	var bad []Finding
	for _, f := range r.Findings {
		if f.Severity == Warning {
			continue
		}
		if f.repair && (f.File == "" || slices.Contains(targets, f.File)) {
			continue
		}
		bad = append(bad, f)
	}
	if len(bad) == 0 {
		return nil
	}
	return &RefusedError{Agent: agent, Findings: bad}
}

// elsewhere refuses act's hooks in files install does not rewrite: a
// second act hook would decide each call again, with its own workspace.
func elsewhere(agent Agent, hs []handler, targets []string) error {
	var bad []Finding
	for _, h := range hs {
		if h.act != nil && !slices.Contains(targets, h.file) {
			bad = append(bad, Finding{Severity: Broken, File: h.file,
				Message: fmt.Sprintf("act's %s hook %q is set here too: a second one would decide each call again; remove it, or install where it is", h.event, h.command())})
		}
	}
	if len(bad) == 0 {
		return nil
	}
	return &RefusedError{Agent: agent, Findings: dedupe(bad)}
}

// writeFile writes data to path atomically: a file that exists keeps its
// mode (and a symbolic link its target: the file it leads to is
// replaced); a new one gets mode perm, in directories made dirPerm.
func writeFile(path string, data []byte, exists bool, mode, perm, dirPerm fs.FileMode) error {
	if real, err := filepath.EvalSymlinks(path); err == nil {
		path = real
	}
	if !exists {
		mode = perm
		if err := os.MkdirAll(filepath.Dir(path), dirPerm); err != nil {
			return err
		}
	}
	return atomicfile.WriteFile(path, data, mode)
}

// isAct reports whether a handler's fields are act's hook.
func isAct(fields map[string]any) bool {
	if fields["type"] != "command" {
		return false
	}
	s, _ := fields["command"].(string)
	_, ok := parseActCommand(s)
	return ok
}

// A regroup is what cutting act's handlers out of one event's list of
// matcher groups does, and where act's new group goes.
type regroup struct {
	// keep lists, for each group, the indices of its handlers kept; nil
	// for a group cut whole (all its handlers were act's).
	keep [][]int
	// moved maps a kept handler's old (group, index) to its new one,
	// act's new group counted in when insert.
	moved map[[2]int][2]int
	// at is the index of act's new group: where the first group cut
	// whole was, else after the last.
	at     int
	cut    int // the handlers cut
	insert bool
}

// regroupOf works out a regroup of groups, each a list of handlers'
// fields.
func regroupOf(groups [][]map[string]any, insert bool) *regroup {
	g := &regroup{moved: map[[2]int][2]int{}, at: -1, insert: insert}
	n := 0
	var newIndex [][2]int // per kept handler: its old (group, index)
	var newGroup []int
	for gi, hs := range groups {
		var keep []int
		for hi, h := range hs {
			if isAct(h) {
				g.cut++
			} else {
				keep = append(keep, hi)
			}
		}
		if len(keep) == 0 && len(hs) > 0 {
			g.keep = append(g.keep, nil)
			if g.at < 0 {
				g.at = n
			}
			continue
		}
		if keep == nil {
			keep = []int{}
		}
		g.keep = append(g.keep, keep)
		for _, hi := range keep {
			newIndex = append(newIndex, [2]int{gi, hi})
			newGroup = append(newGroup, n)
		}
		n++
	}
	if g.at < 0 {
		g.at = n
	}
	// The new positions: act's group at g.at pushes the later ones down.
	count := map[int]int{}
	for i, old := range newIndex {
		ng := newGroup[i]
		if insert && ng >= g.at {
			ng++
		}
		g.moved[old] = [2]int{ng, count[newGroup[i]]}
		count[newGroup[i]]++
	}
	return g
}

// handlerFields lists, for each matcher group of an event's list, its
// handlers' fields.
func handlerFields(list any) [][]map[string]any {
	groups, _ := list.([]any)
	out := make([][]map[string]any, len(groups))
	for i, g := range groups {
		gm, _ := g.(map[string]any)
		hs, _ := gm["hooks"].([]any)
		for _, h := range hs {
			hm, _ := h.(map[string]any)
			out[i] = append(out[i], hm)
		}
	}
	return out
}

// eventList is doc's hooks.EVENT.
func eventList(doc map[string]any, event string) any {
	h, _ := doc["hooks"].(map[string]any)
	return h[event]
}

// describe is a handler change, as install reports it.
func describe(event string, g *regroup, command string) []string {
	var out []string
	if g.cut > 0 {
		out = append(out, fmt.Sprintf("%s: replaced act's earlier entry (%d cut)", event, g.cut))
	}
	if g.insert {
		out = append(out, fmt.Sprintf("%s: %s", event, command))
	}
	return out
}
