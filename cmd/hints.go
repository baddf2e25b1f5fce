package cmd

import (
	"errors"
	"fmt"
	"io/fs"
	"regexp"
	"strings"
	"sync"

	"github.com/act-project/act/gate"
	"github.com/act-project/act/internal/problem"
	"github.com/act-project/act/internal/state"
	"github.com/act-project/act/policy"
)

// hintsFor says what to change for the common errors: one line each, the
// first that applies, after the errors (at most one per distinct hint).
// Each command line in a hint is env.actLine's.
func (env *Env) hintsFor(err error) []string {
	var out []string
	add := func(h string) {
		for _, o := range out {
			if o == h {
				return
			}
		}
		out = append(out, h)
	}
	var probs problem.List
	if errors.As(err, &probs) {
		for _, p := range probs {
			if h := env.problemHint(p); h != "" {
				add(h)
			}
		}
		return out
	}
	var u usageError
	var need *gate.ConfirmationRequired
	switch {
	case errors.As(err, &need) && need.Via == gate.ViaSigned:
		add(fmt.Sprintf("an approver signs it: %s ~/.ssh/id_ed25519.pub (or --signature FILE, made with ssh-keygen -Y sign -n act-approval over the digest %s prints)",
			env.actLine("apply", need.PlanID, "--sign-with"), env.actLine("show", need.PlanID)))
	case errors.As(err, &need) && need.PlanID != "":
		add(fmt.Sprintf("%s lists what waits; a person approves with %s", env.actLine("pending"), env.actLine("apply", need.PlanID, "--confirm")))
		if h := env.notAWorkspaceHint(); h != "" {
			add(h)
		}
	case err == nil:
	case errors.As(err, &u):
		add("run 'act --help' for usage")
	case errors.Is(err, gate.ErrNotFound):
		add(fmt.Sprintf("%s lists the plans and actions in the state directory; %s the plans that wait", env.actLine("history"), env.actLine("pending")))
	case errors.Is(err, fs.ErrPermission) && strings.Contains(err.Error(), "/"):
		add("act keeps its state in one directory it must be able to write: pick another with --home DIR or ACT_HOME=DIR")
	}
	return out
}

func (env *Env) problemHint(p problem.Problem) string {
	switch {
	case p.Rule == "schema.type" && (p.Field == "mode" || strings.HasSuffix(p.Field, ".mode")):
		return `quote the mode: mode: "0644" (unquoted, YAML reads 0644 as a number)`
	case p.Rule == "schema.missing-field":
		return "act new TYPE prints a short descriptor to start from; act validate --expand FILE shows what act fills in"
	case p.Rule == "policy.outside-allowed-roots":
		return env.actLine("policy") + " shows the roots the host allows; a scope must lie under one of them"
	case p.Rule == "policy.stale-intent":
		return "an agent stamps created_at when it forms the intent: set it to now (date -u +%Y-%m-%dT%H:%M:%SZ)"
	case p.Rule == "effects.undeclared-change":
		return "declare every path the action changes under effects.filesystem (create, modify or delete), or change the action"
	case p.Rule == "rollback.target-changed" && !strings.Contains(p.Message, "make the directory again"):
		return env.actLine("rollback", "ID", "--force", "--confirm") + " saves what changed first, then rolls back"
	case p.Rule == "apply.stale":
		return "the tree changed since the plan: plan again (" + env.actLine("plan", "DESCRIPTOR") + ") and review the new diff"
	case strings.HasPrefix(p.Rule, "precondition."):
		return "a precondition is checked on the real machine; make it hold, or change the descriptor's preconditions"
	case p.Rule == "sandbox.max-runs":
		return "a new action gets a new action_id (act new prints one)"
	case env.caller == "run" && (p.Rule == gate.RuleNetworkRefused && strings.Contains(p.Message, "had no network") ||
		p.Rule == "op.command-failed" && networkFailure().MatchString(p.Message)):
		// docs/run.md, "The network"
		return env.actLine("run", "--network", "--", "CMD") + " gives the command the network: the hosts of the policy's network.allowed_hosts, through act's egress proxy, where its network.sandbox_network is true (" +
			env.actLine("policy") + " shows them)"
	case env.caller == "run" && p.Rule == "policy.sandbox-network":
		return "act run --network needs the policy's network.sandbox_network to be true (" + env.actLine("policy") + " shows it; docs/policy.md)"
	case (p.Rule == "op.command-failed" || p.Rule == "op.verification-failed") && networkFailure().MatchString(p.Message):
		return "the command had no network: the sandbox gives commands none unless the policy's network.sandbox_network is true (" +
			env.actLine("policy") + " shows it); fetch dependencies with a PACKAGE_INSTALL (npm, pip or go: act new PACKAGE_INSTALL), which the policy lets reach the network"
	}
	return ""
}

// networkFailure matches what programs print when the sandbox refuses
// them the network: the socket itself refused (seccomp), no name
// resolution, no route.
var networkFailure = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`(?i)socket: (permission denied|operation not permitted)|temporary failure in name resolution|could not resolve (host|proxy)|name or service not known|getaddrinfo (EAI_AGAIN|ENOTFOUND)|network is unreachable|connect (EACCES|ENETUNREACH)|failed to establish a new connection|dial tcp: lookup `)
})

// notAWorkspaceHint says which of this session's workspaces (act run's,
// --workspace) lies outside the policy's, where a door's workspace widens
// nothing (docs/policy.md, "Workspaces"), and how to name it there; "" when
// none does.
func (env *Env) notAWorkspaceHint() string {
	if len(env.workspaces) == 0 {
		return ""
	}
	res := &result{}
	pol, err := env.loadPolicy(res)
	if err != nil {
		return ""
	}
	for _, w := range env.workspaces {
		if pol.WithinWorkspaces(w) {
			continue
		}
		file := ""
		if res.Policy != nil {
			file = res.Policy.File
		}
		if pol.System != nil && (!pol.System.UserPolicy || len(pol.SystemWorkspaces()) > 0) {
			file = policy.SystemFile // only the system policy can name it
		}
		if home, err := env.stateDir(); file == "" && err == nil {
			file = state.Dir{Root: home}.PolicyFile() // where act reads a user policy
		}
		return fmt.Sprintf("%s is not one of the policy's workspaces, where changes may flow without a person: add it to workspaces: in %s (docs/policy.md, \"Workspaces\")", w, file)
	}
	return ""
}
