package schema

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/act-project/act/internal/document"
)

// TestFastSchemaPinned: the shapes of fast_descriptor.go and
// fast_policy.go were checked against these bytes of the schemas. Who
// changes a schema makes its shape say the same (a shape looser than the
// schema lets through what CUE refuses), runs TestFastAgreesWithCUE, and
// then pins the new digest.
func TestFastSchemaPinned(t *testing.T) {
	for _, c := range []struct{ file, src, pinned, in string }{
		{"descriptor.cue", descriptorCUE, descriptorCUESHA256, "fast_descriptor.go"},
		{"policy.cue", policySource, policyCUESHA256, "fast_policy.go"},
	} {
		sum := sha256.Sum256([]byte(c.src))
		if got := hex.EncodeToString(sum[:]); got != c.pinned {
			t.Errorf("%s changed (sha256 %s): make the shapes of %s say what it says now, run TestFastAgreesWithCUE, then pin the new sha256 there", c.file, got, c.in)
		}
	}
}

// TestFastAgreesWithCUE: wherever a shape says a document is valid, CUE
// says so too — on every document of the corpus and act's examples, and
// on a thousand random mutations of them for each schema, new ones each run (fields dropped, added,
// retyped, emptied; values from every pattern and enum of the schemas).
// The valid documents must pass the shapes too: a shape that never holds
// would make this test pass and act no faster.
func TestFastAgreesWithCUE(t *testing.T) {
	descs := fastSamples(t, "descriptor")
	pols := fastSamples(t, "policy")
	// A new stream of mutations each run (its seed logged, ACT_TEST_SEED
	// replays it): runs add up to more than any one would check.
	n := 1000
	if testing.Short() {
		n = 300
	}
	seed := uint64(time.Now().UnixNano())
	if v := os.Getenv("ACT_TEST_SEED"); v != "" {
		var err error
		if seed, err = strconv.ParseUint(v, 10, 64); err != nil {
			t.Fatalf("ACT_TEST_SEED=%q: not a seed (a decimal number below 2^64)", v)
		}
	}
	t.Logf("seed %d (ACT_TEST_SEED=%d replays it)", seed, seed)
	for _, c := range []struct {
		name    string
		samples []any
		fast    func(any) bool
		cue     func(any) []Violation
	}{
		{"descriptor", descs, fastDescriptor(), validateDescriptorCUE},
		{"policy", pols, fastPolicy(), validatePolicyCUE},
	} {
		t.Run(c.name, func(t *testing.T) {
			check := func(what string, v any) (fast, valid bool) {
				fast, valid = c.fast(v), len(c.cue(v)) == 0
				if fast && !valid {
					t.Errorf("%s: the shape holds where CUE says %v\n%s", what, c.cue(v), describe(v))
				}
				return fast, valid
			}
			validSamples := 0
			for i, v := range c.samples {
				fast, valid := check(fmt.Sprintf("sample %d", i), v)
				if valid {
					validSamples++
					if !fast {
						t.Errorf("sample %d: valid, but the shape does not hold (no fast path)\n%s", i, describe(v))
					}
				}
			}
			if validSamples == 0 {
				t.Fatal("no valid sample")
			}
			// Mostly from the valid documents, mostly one change: the
			// mutants then lie near the schema's edges, on both sides.
			var valids []any
			for _, v := range c.samples {
				if len(c.cue(v)) == 0 {
					valids = append(valids, v)
				}
			}
			rng := rand.New(rand.NewPCG(seed, uint64(len(c.name))))
			var fastValid, slowValid, invalid int
			for i := range n {
				from := c.samples
				if rng.IntN(5) > 0 {
					from = valids
				}
				v := deepCopy(from[rng.IntN(len(from))])
				for range 1 + rng.IntN(2)*rng.IntN(3) {
					v = mutate(rng, v)
				}
				switch fast, valid := check(fmt.Sprintf("mutant %d", i), v); {
				case fast:
					fastValid++
				case valid:
					if slowValid++; slowValid <= 3 {
						t.Logf("valid by CUE only (the shape is stricter: no harm, no fast path): %s", describe(v))
					}
				default:
					invalid++
				}
			}
			t.Logf("%d mutants: %d valid by the shape, %d valid by CUE only, %d invalid", n, fastValid, slowValid, invalid)
			if fastValid < n/20 || invalid < n/20 {
				t.Errorf("the mutations are too weak or too strong to compare: %d valid by the shape, %d invalid of %d", fastValid, invalid, n)
			}
		})
	}
}

// fastSamples are the documents of one schema the test starts from.
func fastSamples(t *testing.T, kind string) []any {
	t.Helper()
	var out []any
	add := func(name string, data []byte) {
		doc, probs := document.Parse(name, data)
		if len(probs) > 0 {
			return // not a document the parser hands over
		}
		out = append(out, doc.Value())
	}
	if kind == "descriptor" {
		files, _ := filepath.Glob("testdata/corpus/*.json")
		more, _ := filepath.Glob("../examples/*.*")
		for _, f := range append(files, more...) {
			if data, err := os.ReadFile(f); err == nil {
				add(f, data)
			}
		}
		return out
	}
	data, err := os.ReadFile("../policy/default.yaml")
	if err != nil {
		t.Fatal(err)
	}
	add("default.yaml", data)
	for i, p := range fastPolicies {
		add("policy"+strconv.Itoa(i), []byte(p))
	}
	return out
}

// fastPolicies set every field of policy.cue at least once.
var fastPolicies = []string{
	`allowed_roots: ["~", /tmp, /srv/x]
workspaces: [~/src/p, /tmp]
resource_caps: {max_cpu_ms: 1000, max_memory_mb: 64, max_disk_mb: 10, max_duration_ms: 5000}
resources: {memory_enforcement: per_process}
modes:
  risk: {LOW: allow, MEDIUM: confirm, HIGH: deny, CRITICAL: deny}
  types: {FILE_READ: allow, COMMAND_EXECUTION: {LOW: allow, HIGH: deny}, MULTI_STEP_COMPOSITE: confirm, CONFIG_CHANGE: {MEDIUM: confirm}}
network: {allowed_hosts: [example.org, "*.example.org", 10.0.0.0/8, "::1"], sandbox_network: true, credential_hosts: [registry.npmjs.org]}
cooldown: 90s
plan_expiry: 1h30m
idle_period: 1.5s
`,
	`audit:
  retain_days: 30
  witnesses:
    - {name: w1, key: "w1+abcd+AAAA", url: "https://w.example/"}
    - {name: witness.example, key: k, url: "http://localhost:1/"}
  quorum: 0
  witness_grace: 5m
  witness_after: true
confirmation: {via: signed, approvers: ["ssh-ed25519 AAAA me"], approvers_file: ~/.ssh/allowed}
hooks: {cannot_dry_run: ask}
max_changes: 5
max_pending: 1
max_layers_mb: 100
command_rules:
  - {argv: [go, test, "*"], mode: allow}
  - {argv: [make], env: {CC: gcc}, stdin: any, mode: confirm}
risk: {max_deletes: 3, sensitive_paths: ["~/.ssh", "/etc/*"], commands: always_medium}
redact: {pii: true}
state_dir: /var/lib/act
user_policy: false
sandbox:
  hide_paths: [~/.aws]
  home_visible: [~/.gitconfig]
  caches: [~/.cache/go-build]
  persistent_caches: [~/go/pkg/mod, /root/go/pkg/mod/]
  persistent_caches_mb: 0
  loopback: true
`,
	`{}`,
}

// mutate changes one random node of v in one random way, returning the
// new document.
func mutate(rng *rand.Rand, v any) any {
	// Collect every node with the way to replace it.
	type node struct {
		v   any
		set func(any)
		del func() // nil for the root and list elements
	}
	var nodes []node
	var walk func(v any, set func(any), del func())
	walk = func(v any, set func(any), del func()) {
		nodes = append(nodes, node{v, set, del})
		switch x := v.(type) {
		case map[string]any:
			for _, k := range slices.Sorted(maps.Keys(x)) {
				walk(x[k], func(n any) { x[k] = n }, func() { delete(x, k) })
			}
		case []any:
			for i := range x {
				walk(x[i], func(n any) { x[i] = n }, nil)
			}
		}
	}
	root := v
	walk(v, func(n any) { root = n }, nil)
	n := nodes[rng.IntN(len(nodes))]
	switch rng.IntN(6) {
	case 0:
		if n.del != nil {
			n.del()
			return root
		}
		fallthrough
	case 1:
		if m, ok := n.v.(map[string]any); ok {
			m[fastKeys[rng.IntN(len(fastKeys))]] = deepCopy(fastValues[rng.IntN(len(fastValues))])
			return root
		}
		fallthrough
	case 2:
		if l, ok := n.v.([]any); ok {
			if len(l) > 0 && rng.IntN(2) == 0 {
				n.set(append(slices.Clone(l), deepCopy(l[rng.IntN(len(l))])))
			} else {
				n.set([]any{})
			}
			return root
		}
		fallthrough
	default:
		n.set(deepCopy(fastValues[rng.IntN(len(fastValues))]))
	}
	return root
}

// fastKeys are field names of both schemas and a few of neither.
var fastKeys = strings.Fields(`action_type operation steps content content_base64 edits set unset path mode
	intent_summary risk_level scope effects network required workdir argv env stdin report_cwd manager packages
	create modify delete filesystem paths recursive sha256 old new replace_all LOW MEDIUM HIGH CRITICAL
	FILE_READ COMMAND_EXECUTION allowed_roots workspaces modes risk types cooldown audit witnesses name key url
	quorum command_rules sandbox caches persistent_caches state_dir user_policy max_runs unknown x_extra`)

// fastValues are values of every kind, among them one of each pattern and
// enum of the schemas.
var fastValues = []any{
	nil, true, false, int64(0), int64(1), int64(-1), int64(5), 1.5, 5.0, "", "x", "\xff", " ",
	[]any{}, []any{"a"}, []any{""}, []any{int64(1)}, []any{[]any{"go", "test"}},
	map[string]any{}, map[string]any{"a": "b"}, map[string]any{"a": int64(1)},
	"1.0", "ai", "0644", "0999", "LOW", "MEDIUM", "CRITICAL", "NONE",
	"FILE_READ", "FILE_WRITE", "FILE_DELETE", "FILE_MOVE", "DIRECTORY_CREATE", "DIRECTORY_DELETE",
	"COMMAND_EXECUTION", "PACKAGE_INSTALL", "PACKAGE_REMOVE", "NETWORK_REQUEST", "UI_AUTOMATION", "CONFIG_CHANGE", "MULTI_STEP_COMPOSITE",
	"6b1fb005-419c-473b-bfdc-5e77383af7f8", "6b1fb005-419c-473b-bfdc-5e77383af7f", "2026-11-22T00:00:00Z", "2026-13-22T00:00:00Z",
	"e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855", "E3B0C44298FC1C149AFBF4C8996FB92427AE41E4649B934CA495991B7852B855",
	"container", "filesystem_snapshot", "full_scope", "SUMMARY", "DEBUG", "npm", "pip", "go", "cargo", "GET", "POST", "json", "toml",
	"allow", "confirm", "deny", "ask", "flag", "terminal", "signed", "total", "per_process", "by_diff", "always_medium", "any",
	"/tmp", "~", "~/x", "~x", "relative", "90s", "1h30m", "5", "1.5µs", "1.5μs", "example.org", "*.example.org", "10.0.0.0/8", "a b",
	"w1", "-w", "https://x", "ftp://x", "~/go/pkg/mod", "/x/pkg/mod/", "/x/pkg",
	map[string]any{"paths": []any{"/tmp"}, "recursive": true},
	map[string]any{"create": []any{}, "modify": []any{}, "delete": []any{}},
	map[string]any{"old": "a", "new": "b"},
	map[string]any{"argv": []any{"true"}, "mode": "allow"},
	map[string]any{"name": "w", "key": "k", "url": "https://w"},
	map[string]any{"LOW": "allow"},
}

func deepCopy(v any) any {
	switch x := v.(type) {
	case map[string]any:
		m := make(map[string]any, len(x))
		for k, e := range x {
			m[k] = deepCopy(e)
		}
		return m
	case []any:
		l := make([]any, len(x))
		for i, e := range x {
			l[i] = deepCopy(e)
		}
		return l
	}
	return v
}

func describe(v any) string { return fmt.Sprintf("%#v", v) }
