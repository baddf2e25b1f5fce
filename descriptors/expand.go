package descriptors

// The short form (docs/descriptor.md, "Short form"): a descriptor may leave
// out everything but its intent, its type and its operation — the fields
// that have one allowed value, created_at and action_id, the effects, and
// the scope, resources, preconditions, sandbox, rollback, confirmation and
// audit, which default from the operation and the host policy. [Expand]
// fills them in on the parsed document, before the schema sees it, so that
// every field the user wrote keeps its position in their file; a scope or
// effects act derived from the operation take the operation's position, and
// a field it took from the policy has none.

import (
	"bytes"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"time"

	"github.com/act-project/act/internal/document"
	"github.com/act-project/act/internal/pathglob"
	"github.com/act-project/act/internal/problem"
)

// A Stamp is what expansion fills in that a descriptor does not say
// itself: the time the intent was formed and a fresh action id.
type Stamp struct {
	// Now is created_at's time; zero means time.Now().
	Now time.Time
	// ActionID is the action_id given to a descriptor without one; empty
	// means a fresh UUID v4.
	ActionID string
	// CreatedAt, if set, is created_at as written (it wins over Now).
	CreatedAt string
	// Policy is what the host policy gives the fields left out.
	Policy Defaults
}

// Defaults are what a short descriptor's left-out fields take from the
// host: the policy's caps and retention, and the homes (a file directly in
// a home directory is scoped to itself, as no scope may take in a home).
type Defaults struct {
	// Caps are the policy's resource caps (0: none); the resources of a
	// short descriptor are its kind's defaults (DefaultResources) within
	// them.
	Caps Resources
	// RetainDays is the policy's audit retention (0: 30 days).
	RetainDays int64
	// Homes are $HOME and the password database's home, as CheckOptions
	// has them; /root and /home/* are always homes (HomeRoots).
	Homes []string
}

// DefaultsOf are the defaults that expand a short descriptor into d again:
// d's own resources (the defaults within caps that equal them) and
// retention, with homes. For a plan's file read back (its saved descriptor
// is d).
func DefaultsOf(d *Descriptor, homes ...string) Defaults {
	return Defaults{Caps: d.Resources, RetainDays: d.Audit.RetainDays, Homes: homes}
}

// The resources a short descriptor asks for (within the policy's caps):
// a command's fit a test suite, a file operation's a file of the largest
// size act edits, a request's a download.
var (
	commandResources = Resources{MaxCPUMs: 600000, MaxMemoryMB: 4096, MaxDiskMB: 1024, MaxDurationMs: 600000}
	fileResources    = Resources{MaxCPUMs: 10000, MaxMemoryMB: 256, MaxDiskMB: 64, MaxDurationMs: 30000}
	requestResources = Resources{MaxCPUMs: 30000, MaxMemoryMB: 512, MaxDiskMB: 1024, MaxDurationMs: 120000}
)

// Within is r with each resource lowered to the cap where c sets one (0:
// no cap).
func (r Resources) Within(c Resources) Resources {
	lower := func(a, b int64) int64 {
		if b > 0 && b < a {
			return b
		}
		return a
	}
	return Resources{
		MaxCPUMs:      lower(r.MaxCPUMs, c.MaxCPUMs),
		MaxMemoryMB:   lower(r.MaxMemoryMB, c.MaxMemoryMB),
		MaxDiskMB:     lower(r.MaxDiskMB, c.MaxDiskMB),
		MaxDurationMs: lower(r.MaxDurationMs, c.MaxDurationMs),
	}
}

// Single-valued fields and their one value: a short descriptor may leave
// them out.
var singleValued = []struct {
	path  []string
	value string
}{
	{[]string{"descriptor_version"}, "1.0"},
	{[]string{"created_by"}, "ai"},
}

// The order of the fields of each object act fills in, for a filled-in
// field to stand where the full form has it.
var (
	topOrder = []string{"descriptor_version", "action_id", "created_at", "created_by", "intent_summary",
		"action_type", "risk_level", "scope", "resources", "preconditions", "effects", "sandbox",
		"rollback", "confirmation", "audit", "verification", "operation", "steps"}
	stepOrder     = []string{"action_type", "intent_summary", "risk_level", "effects", "operation", "steps"}
	effectsFields = []string{"create", "modify", "delete"}
)

// Expand turns a short descriptor into the full one in place: it fills in
// the single-valued fields, action_id and created_at (from st), the
// effects of the operation (and of each step of a composite, the
// composite's own being the union of its steps') and the rest of the
// fields a descriptor may leave out (expandTail). It changes nothing that
// is there, and leaves what it cannot derive (a malformed operation) for
// the schema to report.
func Expand(doc *document.Document, st Stamp) {
	root := doc.Root
	if root == nil || root.Kind != document.Map {
		return
	}
	for _, f := range singleValued {
		setDefault(root, f.path[0], str(f.value), topOrder)
	}
	if _, _, ok := root.Get("action_id"); !ok {
		id := st.ActionID
		if id == "" {
			id = NewUUID()
		}
		setDefault(root, "action_id", str(id), topOrder)
	}
	if _, _, ok := root.Get("created_at"); !ok {
		at := st.CreatedAt
		if at == "" {
			now := st.Now
			if now.IsZero() {
				now = time.Now()
			}
			at = now.UTC().Format(time.RFC3339)
		}
		setDefault(root, "created_at", str(at), topOrder)
	}
	// The three network flags must agree: one the agent wrote sets the
	// others.
	var net *bool
	for _, f := range [][]string{{"scope", "network", "required"}, {"effects", "network"}, {"sandbox", "allow_network"}} {
		if v := get(root, f...); v != nil && v.Kind == document.Bool {
			b := v.Scalar == true
			net = &b
			break
		}
	}
	_, _, declared := root.Get("effects")
	expandEffects(root, topOrder)
	sh := expandTail(root, st.Policy, net)
	if nw := get(root, "effects", "network"); !declared && nw != nil && sh != nil {
		nw.Scalar = sh.net
	}
}

// expandEffects fills in n's effects if it leaves them out and they can be
// derived, and returns them (nil when there are none).
func expandEffects(n *document.Node, order []string) *document.Node {
	t, _, _ := n.Get("action_type")
	if t == nil || t.Kind != document.String {
		return nil
	}
	typ := ActionType(t.Scalar.(string))
	var derived *fileEffects
	if typ == MultiStepComposite {
		steps, _, _ := n.Get("steps")
		if steps != nil && steps.Kind == document.List {
			all := &fileEffects{}
			for _, s := range steps.Items {
				if s.Kind != document.Map {
					all = nil
					continue
				}
				e := expandEffects(s, stepOrder)
				if all != nil && !all.add(e) {
					all = nil
				}
			}
			derived = all
		}
	}
	if e, _, ok := n.Get("effects"); ok {
		return e
	}
	if typ != MultiStepComposite {
		op, _, _ := n.Get("operation")
		derived = operationEffects(typ, op)
	}
	if derived == nil {
		return nil
	}
	e := derived.node()
	place(e, opPos(n))
	setDefault(n, "effects", e, order)
	return e
}

// fileEffects are effects being derived.
type fileEffects struct {
	create, modify, delete []string
	network                bool
}

// add merges the effects node e into f; it reports false when e is not
// a well-formed effects object (then the union cannot be derived).
func (f *fileEffects) add(e *document.Node) bool {
	if e == nil || e.Kind != document.Map {
		return false
	}
	fs, _, _ := e.Get("filesystem")
	if fs == nil || fs.Kind != document.Map {
		return false
	}
	for i, dst := range []*[]string{&f.create, &f.modify, &f.delete} {
		l, _, _ := fs.Get(effectsFields[i])
		if l == nil || l.Kind != document.List {
			return false
		}
		for _, it := range l.Items {
			s, ok := it.Scalar.(string)
			if !ok {
				return false
			}
			if !slices.Contains(*dst, s) {
				*dst = append(*dst, s)
			}
		}
	}
	if nw, _, _ := e.Get("network"); nw != nil && nw.Scalar == true {
		f.network = true
	}
	return true
}

// operationEffects derives the effects of operation op of type t, a
// document node (OpEffects on its typed form), or nil where op does not
// decode as t's operation (the schema then says why).
func operationEffects(t ActionType, op *document.Node) *fileEffects {
	typed := typedOp(t, op)
	if typed == nil {
		return nil
	}
	return opEffects(typed)
}

// typedOp is the operation node op decoded as t's, or nil where it does
// not decode.
func typedOp(t ActionType, op *document.Node) Operation {
	if op == nil || op.Kind != document.Map || t == MultiStepComposite {
		return nil
	}
	b, err := json.Marshal(op.Value())
	if err != nil {
		return nil
	}
	typed, err := DecodeOperation(t, b)
	if err != nil {
		return nil
	}
	return typed
}

// opEffects derives the effects of an operation: what a file operation
// names, by the kind of change it makes to it. A path that may exist or
// not (FILE_WRITE's path, FILE_MOVE's to with overwrite, a
// NETWORK_REQUEST's save_to) is declared both created and modified: which
// one the plan finds depends on the tree, and validate does not look.
// FILE_WRITE with create_only only creates, with edits only modifies. A
// command or a package manager may create, modify and delete anything
// below its workdir (the review of its diff is what decides, as for act
// run's); UI_AUTOMATION changes no file.
func opEffects(op Operation) *fileEffects {
	f := &fileEffects{create: []string{}, modify: []string{}, delete: []string{}}
	switch o := op.(type) {
	case FileReadOp:
	case FileWriteOp:
		f.create, f.modify = []string{o.Path}, []string{o.Path}
		if o.CreateOnly {
			f.modify = []string{}
		} else if o.Edits != nil {
			f.create = []string{} // edits change a file that is there
		}
	case FileDeleteOp:
		f.delete = slices.Clone(o.Paths)
	case FileMoveOp:
		f.delete, f.create = []string{o.From}, []string{o.To}
		if o.Overwrite {
			f.modify = []string{o.To}
		}
	case DirectoryCreateOp:
		f.create = []string{o.Path}
	case DirectoryDeleteOp:
		f.delete = []string{o.Path}
	case ConfigChangeOp:
		f.modify = []string{o.Path}
	case NetworkRequestOp:
		f.network = true
		if o.SaveTo != "" {
			f.create, f.modify = []string{o.SaveTo}, []string{o.SaveTo}
		}
	case CommandExecutionOp:
		all := []string{pathglob.Join(o.Workdir, "**")}
		f.create, f.modify, f.delete = all, slices.Clone(all), slices.Clone(all)
	case PackageOp:
		all := []string{pathglob.Join(o.Workdir, "**")}
		f.create, f.modify, f.delete = all, slices.Clone(all), slices.Clone(all)
		f.network = true
	case UIAutomationOp:
	default:
		return nil
	}
	return f
}

// effects is f as typed effects.
func (f *fileEffects) effects() Effects {
	return Effects{Filesystem: FilesystemEffects{Create: f.create, Modify: f.modify, Delete: f.delete}, Network: f.network}
}

// addEffects merges typed effects e into f.
func (f *fileEffects) addEffects(e Effects) {
	for i, src := range [][]string{e.Filesystem.Create, e.Filesystem.Modify, e.Filesystem.Delete} {
		dst := []*[]string{&f.create, &f.modify, &f.delete}[i]
		for _, s := range src {
			if !slices.Contains(*dst, s) {
				*dst = append(*dst, s)
			}
		}
	}
	f.network = f.network || e.Network
}

// node is f as an effects object.
func (f *fileEffects) node() *document.Node {
	list := func(ps []string) *document.Node {
		n := &document.Node{Kind: document.List, Items: []*document.Node{}}
		for _, p := range ps {
			n.Items = append(n.Items, str(p))
		}
		return n
	}
	fs := mapNode()
	fs.Keys = []string{"create", "modify", "delete"}
	fs.Values = []*document.Node{list(f.create), list(f.modify), list(f.delete)}
	fs.KeyPos = make([]problem.Pos, 3)
	e := mapNode()
	e.Keys = []string{"filesystem", "network", "system_state_change"}
	e.Values = []*document.Node{fs, {Kind: document.Bool, Scalar: f.network}, {Kind: document.Bool, Scalar: false}}
	e.KeyPos = make([]problem.Pos, 3)
	return e
}

func mapNode() *document.Node { return &document.Node{Kind: document.Map} }

func str(s string) *document.Node { return &document.Node{Kind: document.String, Scalar: s} }

// setDefault sets key in the map m to v if m has no such key, placing it
// where order (the full form's order of m's fields) puts it: before the
// first key present that order lists after it.
func setDefault(m *document.Node, key string, v *document.Node, order []string) {
	if _, _, ok := m.Get(key); ok {
		return
	}
	at := len(m.Keys)
	if i := slices.Index(order, key); i >= 0 {
		for j, k := range m.Keys {
			if o := slices.Index(order, k); o > i {
				at = j
				break
			}
		}
	}
	m.Keys = slices.Insert(m.Keys, at, key)
	m.Values = slices.Insert(m.Values, at, v)
	m.KeyPos = slices.Insert(m.KeyPos, at, problem.Pos{})
}

// NewUUID returns a fresh random (version 4) UUID.
func NewUUID() string {
	var b [16]byte
	rand.Read(b[:]) // never fails (crypto/rand)
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:])
}

// expandTail fills in what a short descriptor root leaves out of the
// fields every descriptor has (docs/descriptor.md, "Short form"), from its
// operation and the policy's defaults p:
//
//   - risk_level LOW: act grades the plan and uses the stricter;
//   - scope.filesystem: what the operation names — a file operation's
//     path's directory (the path itself where that is a home directory or
//     /), not recursive; a deleted directory's, recursive; a glob's
//     literal directories, recursive; a command's or a package manager's
//     workdir, recursive; a composite's steps' together;
//   - scope.network.required and sandbox.allow_network (and derived
//     effects' network): net, the one of the three the agent wrote, else
//     true for a NETWORK_REQUEST and a package manager;
//     scope.ui.required: true for UI_AUTOMATION;
//   - resources: the kind's defaults within the policy's caps;
//   - preconditions none; a sandbox where the rules require one, run at
//     most once; rollback of the declared effects; no confirmation asked
//     by the agent (the policy decides); audit at SUMMARY, kept the
//     policy's retain_days.
//
// An object that is there is completed field by field, but for
// scope.filesystem and effects: those are the agent's whole claim or
// none, never widened. It returns what it found of the operations (nil
// for no action type).
func expandTail(root *document.Node, p Defaults, net *bool) *shape {
	t, _, _ := root.Get("action_type")
	if t == nil || t.Kind != document.String {
		return nil
	}
	sh := &shape{homes: HomeRoots(p.Homes...)}
	sh.walk(root, true)
	if v, _, _ := root.Get("verification"); v != nil {
		sh.command = true
		sh.sandbox = true
	}
	if net != nil {
		sh.net = *net
	}
	if r := get(root, "risk_level"); r != nil && (r.Scalar == string(RiskHigh) || r.Scalar == string(RiskCritical)) {
		sh.sandbox = true
	}
	res := fileResources
	switch {
	case sh.command:
		res = commandResources
	case sh.request:
		res = requestResources
	}
	retain := p.RetainDays
	if retain <= 0 {
		retain = 30
	}
	type scope struct {
		Filesystem *FilesystemScope `json:"filesystem,omitempty"`
		Network    Required         `json:"network"`
		UI         Required         `json:"ui"`
	}
	tail := struct {
		RiskLevel     RiskLevel     `json:"risk_level"`
		Scope         scope         `json:"scope"`
		Resources     Resources     `json:"resources"`
		Preconditions Preconditions `json:"preconditions"`
		Sandbox       Sandbox       `json:"sandbox"`
		Rollback      Rollback      `json:"rollback"`
		Confirmation  Confirmation  `json:"confirmation"`
		Audit         Audit         `json:"audit"`
	}{
		RiskLevel:     RiskLow,
		Scope:         scope{Network: Required{sh.net}, UI: Required{sh.ui}},
		Resources:     res.Within(p.Caps),
		Preconditions: Preconditions{PathsExist: []string{}},
		Sandbox:       Sandbox{Required: sh.sandbox, SandboxType: "container", AllowNetwork: sh.net, MaxRuns: 1},
		Rollback:      Rollback{Supported: true, RollbackType: "filesystem_snapshot", RollbackScope: "declared_effects_only"},
		Audit:         Audit{Log: true, LogLevel: "SUMMARY", RetainDays: retain},
	}
	if sh.ok {
		tail.Scope.Filesystem = &FilesystemScope{Paths: sh.paths, Recursive: sh.recursive}
		if tail.Scope.Filesystem.Paths == nil {
			tail.Scope.Filesystem.Paths = []string{}
		}
	}
	def := nodeOf(tail)
	if fs := get(def, "scope", "filesystem"); fs != nil {
		place(fs, opPos(root))
	} else if _, _, ok := root.Get("scope"); !ok {
		// An operation that does not decode: the schema says why, and
		// no scope is made up without its paths.
		i := slices.Index(def.Keys, "scope")
		def.Keys, def.Values, def.KeyPos = slices.Delete(def.Keys, i, i+1), slices.Delete(def.Values, i, i+1), slices.Delete(def.KeyPos, i, i+1)
	}
	fill(root, def, topOrder, nil)
	// A verification without workdir runs in the first scope path: a
	// directory, where act scoped a file.
	if v, _, _ := root.Get("verification"); v != nil && v.Kind == document.Map && sh.ok && sh.fileScoped && len(sh.paths) > 0 {
		setDefault(v, "workdir", str(filepath.Dir(sh.paths[0])), []string{"commands", "env", "workdir"})
	}
	return sh
}

// fill sets every field of def that m leaves out, in place, and completes
// the objects both have, but for the whole-or-nothing scope.filesystem and
// effects. order is the full form's order of m's fields (nil: def's).
func fill(m, def *document.Node, order []string, path []string) {
	if order == nil {
		order = def.Keys
	}
	for i, k := range def.Keys {
		v, _, ok := m.Get(k)
		if !ok {
			setDefault(m, k, def.Values[i], order)
			continue
		}
		p := append(slices.Clone(path), k)
		if v.Kind != document.Map || def.Values[i].Kind != document.Map || slices.Equal(p, []string{"scope", "filesystem"}) {
			continue
		}
		fill(v, def.Values[i], nil, p)
	}
}

// A shape is what expandTail needs to know of a descriptor's operations.
type shape struct {
	homes []string
	// ok: the scope could be derived (every operation decodes); paths
	// and recursive are it; fileScoped: some path is a file's own.
	ok, recursive, fileScoped bool
	paths                     []string
	// net: the action needs the network; command, request: it runs a
	// command (or a verification), makes a request; sandbox: the rules
	// require one; ui: it is or holds UI_AUTOMATION.
	net, command, request, sandbox, ui bool
}

// walk records n (the descriptor when top, else a step) and its steps.
func (sh *shape) walk(n *document.Node, top bool) {
	if top {
		sh.ok = true
	}
	t, _, _ := n.Get("action_type")
	if t == nil || t.Kind != document.String {
		sh.ok = false
		return
	}
	typ := ActionType(t.Scalar.(string))
	if sandboxReason(typ, "") != "" {
		sh.sandbox = true
	}
	switch typ {
	case CommandExecution:
		sh.command = true
	case PackageInstall, PackageRemove:
		sh.command = true
		sh.net = true
	case NetworkRequest:
		sh.request = true
		sh.net = true
	case UIAutomation:
		sh.ui = true
	case MultiStepComposite:
		steps, _, _ := n.Get("steps")
		if steps == nil || steps.Kind != document.List {
			sh.ok = false
			return
		}
		for _, s := range steps.Items {
			sh.walk(s, false)
		}
		return
	}
	op, _, _ := n.Get("operation")
	typed := typedOp(typ, op)
	if typed == nil {
		sh.ok = false
		return
	}
	switch o := typed.(type) {
	case FileReadOp:
		sh.file(o.Path)
	case FileWriteOp:
		sh.file(o.Path)
	case ConfigChangeOp:
		sh.file(o.Path)
	case DirectoryCreateOp:
		sh.file(o.Path)
	case FileMoveOp:
		sh.file(o.From)
		sh.file(o.To)
	case NetworkRequestOp:
		if o.SaveTo != "" {
			sh.file(o.SaveTo)
		}
	case FileDeleteOp:
		for _, p := range o.Paths {
			if pathglob.HasMeta(p) {
				sh.tree(pathglob.Prefix(p))
			} else {
				sh.file(p)
			}
		}
	case DirectoryDeleteOp:
		sh.tree(filepath.Dir(o.Path))
	case CommandExecutionOp:
		sh.tree(o.Workdir)
	case PackageOp:
		sh.tree(o.Workdir)
	}
}

// file scopes the directory of a path an operation names, or the path
// itself where that directory is a home directory or / (FileScope): no
// scope may take those in.
func (sh *shape) file(p string) {
	s, itself := FileScope(p, sh.homes)
	sh.fileScoped = sh.fileScoped || itself
	sh.add(s)
}

// tree scopes the directory dir and everything below it.
func (sh *shape) tree(dir string) {
	sh.recursive = true
	sh.add(dir)
}

func (sh *shape) add(p string) {
	if !slices.Contains(sh.paths, p) {
		sh.paths = append(sh.paths, p)
	}
}

// get is the node at path below n, or nil.
func get(n *document.Node, path ...string) *document.Node {
	for _, k := range path {
		n, _, _ = n.Get(k)
		if n == nil {
			return nil
		}
	}
	return n
}

// opPos is where n's operation (or steps) is written: what a field act
// derives from it points at.
func opPos(n *document.Node) problem.Pos {
	for _, k := range []string{"operation", "steps"} {
		if _, pos, ok := n.Get(k); ok {
			return pos
		}
	}
	return problem.Pos{}
}

// place gives every field and value of n, a node act filled in, the
// position pos (where what it derives from is written).
func place(n *document.Node, pos problem.Pos) {
	n.Pos = pos
	for i := range n.KeyPos {
		n.KeyPos[i] = pos
	}
	for _, v := range n.Values {
		place(v, pos)
	}
	for _, it := range n.Items {
		place(it, pos)
	}
}

// nodeOf is v (a struct of the descriptor's types) as a document node of
// no position, its objects' fields in v's order.
func nodeOf(v any) *document.Node {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err) // plain structs of strings, bools and numbers
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	n, err := decodeNode(dec)
	if err != nil {
		panic(err)
	}
	return n
}

func decodeNode(dec *json.Decoder) (*document.Node, error) {
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch t := tok.(type) {
	case json.Delim:
		if t == '{' {
			m := mapNode()
			for dec.More() {
				k, err := dec.Token()
				if err != nil {
					return nil, err
				}
				v, err := decodeNode(dec)
				if err != nil {
					return nil, err
				}
				m.Keys = append(m.Keys, k.(string))
				m.Values = append(m.Values, v)
				m.KeyPos = append(m.KeyPos, problem.Pos{})
			}
			_, err := dec.Token()
			return m, err
		}
		l := &document.Node{Kind: document.List, Items: []*document.Node{}}
		for dec.More() {
			v, err := decodeNode(dec)
			if err != nil {
				return nil, err
			}
			l.Items = append(l.Items, v)
		}
		_, err := dec.Token()
		return l, err
	case bool:
		return &document.Node{Kind: document.Bool, Scalar: t}, nil
	case json.Number:
		if i, err := t.Int64(); err == nil {
			return &document.Node{Kind: document.Int, Scalar: i}, nil
		}
		f, err := t.Float64()
		return &document.Node{Kind: document.Float, Scalar: f}, err
	case string:
		return str(t), nil
	}
	return &document.Node{Kind: document.Null}, nil
}

// MayChangeBelow are the effects a command or a package manager of d (its
// operation's, or any step's) claims by its workdir, WORKDIR/**, each
// once: what the short form derives for it, "it may create, modify and
// delete anything below", the claim under which its dry run's diff,
// reviewed and graded, decides (docs/descriptor.md, "Short form"). A
// command that changes nothing there has not failed to do what it said,
// so the plan does not warn effects.not-happened for these.
func MayChangeBelow(d *Descriptor) []string {
	var out []string
	add := func(op Operation) {
		var w string
		switch o := op.(type) {
		case CommandExecutionOp:
			w = o.Workdir
		case PackageOp:
			w = o.Workdir
		default:
			return
		}
		if p := pathglob.Join(w, "**"); !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	var steps func([]Step)
	steps = func(ss []Step) {
		for _, s := range ss {
			add(s.Op)
			steps(s.Steps)
		}
	}
	add(d.Op)
	steps(d.Steps)
	return out
}
