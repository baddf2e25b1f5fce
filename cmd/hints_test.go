package cmd

import (
	"strings"
	"testing"

	"github.com/act-project/act/internal/problem"
)

// TestNetworkFailureHint: a command that failed for want of the network
// (go get, npm, pip, curl in the sandbox) is pointed at the policy's
// sandbox network and PACKAGE_INSTALL; any other failure is not.
func TestNetworkFailureHint(t *testing.T) {
	env := &Env{home: t.TempDir(), Getenv: func(string) string { return "" }, UserHome: func() string { return "" }}
	for msg, want := range map[string]bool{
		`the command "go get rsc.io/quote" exited with status 1: go: module rsc.io/quote: Get "https://proxy.golang.org/rsc.io/quote/@v/list": dial tcp: lookup proxy.golang.org on 10.0.0.53:53: dial udp 10.0.0.53:53: socket: permission denied`: true,
		`the command "npm install kleur" exited with status 1: npm error code EAI_AGAIN | npm error request to https://registry.npmjs.org/kleur failed, reason: getaddrinfo EAI_AGAIN registry.npmjs.org`:                                           true,
		`the command "curl -sS https://example.com" exited with status 6: curl: (6) Could not resolve host: example.com`:                                                                                                                            true,
		`the command "go test ./..." exited with status 1: --- FAIL: TestX (0.00s) | FAIL`:                                                                                                                                                          false,
	} {
		h := env.problemHint(problem.Problem{Rule: "op.command-failed", Field: "operation", Message: msg})
		if got := strings.Contains(h, "network.sandbox_network") && strings.Contains(h, "PACKAGE_INSTALL"); got != want {
			t.Errorf("%s: hint %q", msg, h)
		}
	}
}
