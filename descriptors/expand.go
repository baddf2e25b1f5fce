package descriptors

// The short form (docs/descriptor.md, "Short form"): a descriptor may leave
// out the fields that have one allowed value, created_at and action_id,
// and a file operation's effects. [Expand] fills them in on the parsed
// document, before the schema sees it, so that every field the user wrote
// keeps its position in their file; a field act filled in has none.

import (
	"crypto/rand"
	"fmt"
	"slices"
	"time"

	"github.com/act-project/act/internal/document"
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
}

// Single-valued fields and their one value: a short descriptor may leave
// them out.
var singleValued = []struct {
	path  []string
	value string
}{
	{[]string{"descriptor_version"}, "1.0"},
	{[]string{"created_by"}, "ai"},
	{[]string{"sandbox", "sandbox_type"}, "container"},
	{[]string{"rollback", "rollback_type"}, "filesystem_snapshot"},
}

// The order of the fields of each object act fills in, for a filled-in
// field to stand where the full form has it.
var (
	topOrder = []string{"descriptor_version", "action_id", "created_at", "created_by", "intent_summary",
		"action_type", "risk_level", "scope", "resources", "preconditions", "effects", "sandbox",
		"rollback", "confirmation", "audit", "verification", "operation", "steps"}
	stepOrder     = []string{"action_type", "intent_summary", "risk_level", "effects", "operation", "steps"}
	fieldOrders   = map[string][]string{"sandbox": {"required", "sandbox_type", "allow_network", "max_runs"}, "rollback": {"supported", "rollback_type", "rollback_scope"}}
	effectsFields = []string{"create", "modify", "delete"}
)

// DerivedEffects are the action types whose effects act derives from the
// operation when a descriptor (or a step) leaves them out.
var DerivedEffects = []ActionType{FileRead, FileWrite, FileDelete, FileMove, DirectoryCreate,
	DirectoryDelete, ConfigChange, NetworkRequest, MultiStepComposite}

// Expand turns a short descriptor into the full one in place: it fills in
// the single-valued fields, action_id and created_at (from st), and the
// effects of a file operation (and of each such step of a composite, the
// composite's own being the union of its steps') that leaves them out.
// It changes nothing that is there, and leaves what it cannot derive (a
// malformed operation, a command's effects) for the schema to report.
func Expand(doc *document.Document, st Stamp) {
	root := doc.Root
	if root == nil || root.Kind != document.Map {
		return
	}
	for _, f := range singleValued {
		m := root
		for _, k := range f.path[:len(f.path)-1] {
			m, _, _ = m.Get(k)
		}
		if m != nil && m.Kind == document.Map {
			key := f.path[len(f.path)-1]
			order := topOrder
			if len(f.path) > 1 {
				order = fieldOrders[f.path[0]]
			}
			setDefault(m, key, str(f.value), order)
		}
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
	expandEffects(root, topOrder)
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

// operationEffects derives the effects of a file operation op of type t,
// a document node (OpEffects on what it names), or nil where op does not
// name what its effects need.
func operationEffects(t ActionType, op *document.Node) *fileEffects {
	if op == nil || op.Kind != document.Map {
		return nil
	}
	get := func(k string) (string, bool) {
		v, _, _ := op.Get(k)
		if v == nil || v.Kind != document.String {
			return "", false
		}
		return v.Scalar.(string), true
	}
	flag := func(k string) bool {
		v, _, _ := op.Get(k)
		return v != nil && v.Scalar == true
	}
	var typed Operation
	switch t {
	case FileRead:
		p, ok := get("path")
		if !ok {
			return nil
		}
		typed = FileReadOp{Path: p}
	case FileWrite:
		p, ok := get("path")
		if !ok {
			return nil
		}
		w := FileWriteOp{Path: p, CreateOnly: flag("create_only")}
		if _, _, ok := op.Get("edits"); ok {
			w.Edits = []Edit{}
		}
		typed = w
	case FileDelete:
		l, _, _ := op.Get("paths")
		if l == nil || l.Kind != document.List {
			return nil
		}
		d := FileDeleteOp{Paths: []string{}}
		for _, it := range l.Items {
			s, ok := it.Scalar.(string)
			if !ok {
				return nil
			}
			d.Paths = append(d.Paths, s)
		}
		typed = d
	case FileMove:
		from, ok1 := get("from")
		to, ok2 := get("to")
		if !ok1 || !ok2 {
			return nil
		}
		typed = FileMoveOp{From: from, To: to, Overwrite: flag("overwrite")}
	case DirectoryCreate, DirectoryDelete, ConfigChange:
		p, ok := get("path")
		if !ok {
			return nil
		}
		typed = map[ActionType]Operation{DirectoryCreate: DirectoryCreateOp{Path: p}, DirectoryDelete: DirectoryDeleteOp{Path: p}, ConfigChange: ConfigChangeOp{Path: p}}[t]
	case NetworkRequest:
		p, _ := get("save_to")
		typed = NetworkRequestOp{SaveTo: p}
	}
	return opEffects(typed)
}

// opEffects derives the effects of a file operation: what the operation
// names, by the kind of change it makes to it. A path that may exist or
// not (FILE_WRITE's path, FILE_MOVE's to with overwrite, a
// NETWORK_REQUEST's save_to) is declared both created and modified: which
// one the plan finds depends on the tree, and validate does not look.
// FILE_WRITE with create_only only creates, with edits only modifies. Nil
// for an operation whose effects must be declared (a command's).
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
