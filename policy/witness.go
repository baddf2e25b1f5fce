package policy

import (
	"fmt"
	"net/url"
	"slices"
	"strings"

	"github.com/act-project/act/audit"
)

// checkWitnesses checks what the schema cannot of a file's audit section
// a: every witness key a cosignature/v1 verifier key, every URL one with
// a host, no name twice, no public key twice (one witness under two names
// would count twice towards the quorum), and a quorum no larger than the
// witnesses listed (the file's, or the default's none).
func checkWitnesses(a map[string]any, at func(path []string, rule, format string, args ...any)) {
	list, _ := a["witnesses"].([]any)
	var names []string
	keys := map[string]string{} // public key (base64) → the name it is listed under
	for i, item := range list {
		w, _ := item.(map[string]any)
		idx := fmt.Sprint(i)
		if name, ok := w["name"].(string); ok {
			if slices.Contains(names, name) {
				at([]string{"witnesses", idx, "name"}, RuleInvalidWitness, "witness %q is listed twice", name)
			}
			names = append(names, name)
		}
		if key, ok := w["key"].(string); ok {
			if _, err := audit.NewCosignatureVerifier(key); err != nil {
				at([]string{"witnesses", idx, "key"}, RuleInvalidWitness, "not a witness's verifier key: %v", err)
			} else {
				_, rest, _ := strings.Cut(key, "+")
				_, pub, _ := strings.Cut(rest, "+")
				if other, ok := keys[pub]; ok {
					at([]string{"witnesses", idx, "key"}, RuleInvalidWitness, "the key of witness %q again: one witness would count twice towards the quorum", other)
				}
				name, _ := w["name"].(string)
				keys[pub] = name
			}
		}
		if s, ok := w["url"].(string); ok {
			if u, err := url.Parse(s); err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") || u.RawQuery != "" || u.Fragment != "" {
				at([]string{"witnesses", idx, "url"}, RuleInvalidWitness, "%q is not an http:// or https:// URL of a host (without query or fragment)", s)
			}
		}
	}
	if q, ok := a["quorum"]; ok {
		var n int64
		switch v := q.(type) {
		case int:
			n = int64(v)
		case int64:
			n = v
		case uint64:
			n = int64(v)
		case float64:
			n = int64(v)
		default:
			return
		}
		if n > int64(len(list)) {
			at([]string{"quorum"}, RuleInvalidQuorum, "a quorum of %d, but %d witnesses are listed", n, len(list))
		}
	}
}

// tightenWitnesses bounds the user layer's audit witnesses by the system
// layer's, into p: every system witness stays (a user entry of the same
// name gives way to it), the user's others are added; the quorum is the
// larger, the grace the shorter, and witness_after on if either says so.
// The system's own quorum of its own witnesses is required besides
// ([Policy.WitnessQuorums]), so witnesses a user adds never stand in for
// the system's.
func tightenWitnesses(p *Policy, sys *Policy, set func(string, bool)) {
	u, s := p.Audit, sys.Audit
	ws := slices.Clone(s.Witnesses)
	for _, w := range u.Witnesses {
		if !slices.ContainsFunc(ws, func(o Witness) bool { return o.Name == w.Name }) {
			ws = append(ws, w)
		}
	}
	changed := !slices.Equal(ws, u.Witnesses)
	set("audit.witnesses", changed)
	p.Audit.Witnesses = nonNil(ws)
	if s.Quorum > u.Quorum {
		p.Audit.Quorum = s.Quorum
		set("audit.quorum", true)
	}
	if s.WitnessGrace < u.WitnessGrace {
		p.Audit.WitnessGrace = s.WitnessGrace
		set("audit.witness_grace", true)
	}
	if s.WitnessAfter && !u.WitnessAfter {
		p.Audit.WitnessAfter = true
		set("audit.witness_after", true)
	}
}
