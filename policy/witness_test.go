package policy

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

const testWitnessKey3 = "witness.example/w3+fe098b1d+BDMzMzMzMzMzMzMzMzMzMzMzMzMzMzMzMzMzMzMzMzMz"

// TestWitnessSettings: the audit witnesses load with their defaults (a
// quorum of all of them, a grace of an hour), and what the schema cannot
// say is checked: keys, URLs, names twice, a quorum above the list.
func TestWitnessSettings(t *testing.T) {
	p, err := Parse("p.yaml", []byte(`
audit:
  witnesses:
    - {name: w1, key: "`+testWitnessKey1+`", url: "https://w1.example/"}
    - {name: w2, key: "`+testWitnessKey2+`", url: "http://127.0.0.1:7380"}
  witness_after: true
`), "/home/u")
	if err != nil {
		t.Fatal(err)
	}
	a := p.Audit
	if len(a.Witnesses) != 2 || a.Quorum != 2 || a.WitnessGrace != time.Hour || !a.WitnessAfter || a.RetainDays != 90 {
		t.Fatalf("audit: %+v", a)
	}
	if q := p.WitnessQuorums(); len(q) != 1 || q[0].K != 2 || !slices.Equal(q[0].Witnesses, []string{"w1", "w2"}) {
		t.Fatalf("quorums: %+v", q)
	}
	p, err = Parse("p.yaml", []byte(`audit: {quorum: 0, witness_grace: 10m, witnesses: [{name: w1, key: "`+testWitnessKey1+`", url: "https://w1.example"}]}`), "/home/u")
	if err != nil || p.Audit.Quorum != 0 || p.Audit.WitnessGrace != 10*time.Minute || len(p.WitnessQuorums()) != 0 {
		t.Fatalf("quorum 0: %v %+v", err, p)
	}

	edKey := "witness.example/w1+f51765e1+ARERERERERERERERERERERERERERERERERERERERERER"
	for _, c := range []struct{ file, rule, field string }{
		{`{witnesses: [{name: w1, key: "` + edKey + `", url: "https://a"}]}`, RuleInvalidWitness, "audit.witnesses[0].key"},
		{`{witnesses: [{name: w1, key: "nonsense", url: "https://a"}]}`, RuleInvalidWitness, "audit.witnesses[0].key"},
		{`{witnesses: [{name: w1, key: "` + testWitnessKey1 + `", url: "https://"}]}`, RuleInvalidWitness, "audit.witnesses[0].url"},
		{`{witnesses: [{name: w1, key: "` + testWitnessKey1 + `", url: "https://a"}, {name: w1, key: "` + testWitnessKey2 + `", url: "https://b"}]}`, RuleInvalidWitness, "audit.witnesses[1].name"},
		{`{witnesses: [{name: w1, key: "` + testWitnessKey1 + `", url: "https://a"}], quorum: 2}`, RuleInvalidQuorum, "audit.quorum"},
		{`{witnesses: [{name: w1, key: "` + testWitnessKey1 + `", url: "https://a"}, {name: w2, key: "` + "w2.example+f531d025+BBERERERERERERERERERERERERERERERERERERERERER" + `", url: "https://b"}]}`, RuleInvalidWitness, "audit.witnesses[1].key"}, // w1's key under another name
		{`{quorum: 1}`, RuleInvalidQuorum, "audit.quorum"},
		{`{witness_grace: 99999999999h}`, RuleInvalidDuration, "audit.witness_grace"},
		{`{witnesses: [{name: "../x", key: "` + testWitnessKey1 + `", url: "https://a"}]}`, "", "audit.witnesses[0].name"},
		{`{witnesses: [{name: w1, key: "` + testWitnessKey1 + `", url: "ftp://a"}]}`, "", "audit.witnesses[0].url"},
		{`{witnesses: [{name: w1, key: "` + testWitnessKey1 + `"}]}`, "", "audit.witnesses[0].url"},
		{`{quorum: -1}`, "", "audit.quorum"},
	} {
		_, err := Parse("p.yaml", []byte("audit: "+c.file+"\n"), "/home/u")
		var le *LoadError
		if !errors.As(err, &le) {
			t.Errorf("%s: accepted (%v)", c.file, err)
			continue
		}
		found := false
		for _, p := range le.Problems {
			if (c.rule == "" || p.Rule == c.rule) && strings.HasPrefix(p.Field, c.field) {
				found = true
			}
		}
		if !found {
			t.Errorf("%s: want %s at %s, got %v", c.file, c.rule, c.field, le.Problems)
		}
	}
}

// TestTightenWitnesses: a user layer may add witnesses and raise the
// quorum, never drop or replace a system witness, lower the system's
// quorum of its own witnesses, lengthen the grace or turn witnessing
// after actions off; and the tightened policy prints as it is enforced.
func TestTightenWitnesses(t *testing.T) {
	sys, err := parse("sys.yaml", []byte(`
audit:
  witnesses:
    - {name: w1, key: "`+testWitnessKey1+`", url: "https://w1.example"}
    - {name: w2, key: "`+testWitnessKey2+`", url: "https://w2.example"}
  witness_grace: 30m
  witness_after: true
`), homeOf("/home/u"), true)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, user string
		want       Audit
		quorums    []WitnessQuorum
	}{
		{"drops all", `audit: {witnesses: [], quorum: 0, witness_grace: 99h, witness_after: false}`,
			Audit{Witnesses: []Witness{{"w1", testWitnessKey1, "https://w1.example"}, {"w2", testWitnessKey2, "https://w2.example"}}, Quorum: 2, WitnessGrace: 30 * time.Minute, WitnessAfter: true},
			[]WitnessQuorum{{[]string{"w1", "w2"}, 2}, {[]string{"w1", "w2"}, 2}}},
		{"replaces w1, adds w3", `audit: {witnesses: [{name: w1, key: "evil.example+99981772+BERERERERERERERERERERERERERERERERERERERERERE", url: "https://evil.example"}, {name: w3, key: "` + testWitnessKey3 + `", url: "https://w3.example"}], quorum: 1}`,
			Audit{Witnesses: []Witness{{"w1", testWitnessKey1, "https://w1.example"}, {"w2", testWitnessKey2, "https://w2.example"}, {"w3", testWitnessKey3, "https://w3.example"}}, Quorum: 2, WitnessGrace: 30 * time.Minute, WitnessAfter: true},
			[]WitnessQuorum{{[]string{"w1", "w2", "w3"}, 2}, {[]string{"w1", "w2"}, 2}}},
		{"raises", `audit: {witnesses: [{name: w3, key: "` + testWitnessKey3 + `", url: "https://w3.example"}], quorum: 1, witness_grace: 5m}`,
			Audit{Witnesses: []Witness{{"w1", testWitnessKey1, "https://w1.example"}, {"w2", testWitnessKey2, "https://w2.example"}, {"w3", testWitnessKey3, "https://w3.example"}}, Quorum: 2, WitnessGrace: 5 * time.Minute, WitnessAfter: true},
			[]WitnessQuorum{{[]string{"w1", "w2", "w3"}, 2}, {[]string{"w1", "w2"}, 2}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			user, err := Parse("user.yaml", []byte(c.user), "/home/u")
			if err != nil {
				t.Fatal(err)
			}
			p := tighten(sys, user, Origin{Source: OriginFlag})
			c.want.RetainDays = 90
			if d := cmp.Diff(c.want, p.Audit); d != "" {
				t.Errorf("audit (-want +got):\n%s", d)
			}
			if d := cmp.Diff(c.quorums, p.WitnessQuorums()); d != "" {
				t.Errorf("quorums (-want +got):\n%s", d)
			}
			// Printed and loaded back under the same system policy, it
			// is the same policy.
			again, err := Parse("again.yaml", p.Marshal(), "/home/u")
			if err != nil {
				t.Fatal(err)
			}
			q := tighten(sys, again, Origin{Source: OriginFlag})
			if d := cmp.Diff(p.Audit, q.Audit, cmpopts.EquateEmpty()); d != "" {
				t.Errorf("printed and loaded back (-want +got):\n%s", d)
			}
		})
	}
}
