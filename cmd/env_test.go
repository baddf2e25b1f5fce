package cmd

import (
	"testing"
)

// TestActLineHome checks the one decision every command line act hands
// out makes: --home whenever the state dir did not come from the real
// user's default, the passwd entry's ~/.local/state/act — not $HOME's,
// which the agent may set.
func TestActLineHome(t *testing.T) {
	const passwd = "/home/u"
	for _, tt := range []struct {
		name string
		flag string // --home
		vars map[string]string
		want string
	}{
		{"default", "", map[string]string{"HOME": passwd}, "act rollback ID"},
		{"no HOME: the passwd entry's", "", nil, "act rollback ID"},
		{"--home naming the default", passwd + "/.local/state/act", nil, "act rollback ID"},
		{"ACT_HOME", "", map[string]string{"HOME": passwd, "ACT_HOME": "/s/act"}, "act --home /s/act rollback ID"},
		{"--home", "/s/flag", map[string]string{"ACT_HOME": "/s/act"}, "act --home /s/flag rollback ID"},
		{"XDG_STATE_HOME", "", map[string]string{"HOME": passwd, "XDG_STATE_HOME": "/x"}, "act --home /x/act rollback ID"},
		{"a HOME not the passwd entry's", "", map[string]string{"HOME": "/tmp/agent"}, "act --home /tmp/agent/.local/state/act rollback ID"},
		{"a path to quote", "/s/a b", nil, "act --home '/s/a b' rollback ID"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			pinned := ""
			env := &Env{Getenv: func(k string) string { return tt.vars[k] }, UserHome: func() string { return passwd },
				home: tt.flag, pinned: &pinned}
			if got := env.actLine("rollback", "ID"); got != tt.want {
				t.Errorf("actLine = %q, want %q", got, tt.want)
			}
		})
	}
	// A state dir the system policy pins: no environment chose it.
	pinned := "/var/lib/act/u"
	env := &Env{Getenv: func(string) string { return "" }, UserHome: func() string { return passwd }, pinned: &pinned}
	if got := env.actLine("pending"); got != "act pending" {
		t.Errorf("pinned: actLine = %q, want %q", got, "act pending")
	}
}
