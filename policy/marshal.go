package policy

import (
	"bytes"
	"cmp"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/act-project/act/descriptors"
)

// marshalHeader opens every printed policy.
const marshalHeader = `act host policy: the effective policy, in the format act reads.
Save it as <home>/policy.yaml (or pass it with --policy or ACT_POLICY) and
edit it; a field left out takes act's default.`

// Marshal prints p as a YAML policy file, with a leading comment and one
// comment per section. Loading the output yields a policy equal to p.
func (p *Policy) Marshal() []byte {
	caps := mapping(
		pair("max_cpu_ms", intNode(p.ResourceCaps.MaxCPUMs), ""),
		pair("max_memory_mb", intNode(p.ResourceCaps.MaxMemoryMB), ""),
		pair("max_disk_mb", intNode(p.ResourceCaps.MaxDiskMB), ""),
		pair("max_duration_ms", intNode(p.ResourceCaps.MaxDurationMs), ""),
	)
	risk := mapping()
	for _, r := range descriptors.RiskLevels {
		if m, ok := p.Modes.Risk[r]; ok {
			risk.Content = append(risk.Content, strNode(string(r)), strNode(string(m)))
		}
	}
	types := mapping()
	for _, t := range descriptors.ActionTypes {
		if m, ok := p.Modes.Types[t]; ok {
			types.Content = append(types.Content, strNode(string(t)), strNode(string(m)))
		}
		if byRisk, ok := p.Modes.TypeRisk[t]; ok {
			levels := mapping()
			levels.Style = yaml.FlowStyle
			for _, r := range descriptors.RiskLevels {
				if m, ok := byRisk[r]; ok {
					levels.Content = append(levels.Content, strNode(string(r)), strNode(string(m)))
				}
			}
			types.Content = append(types.Content, strNode(string(t)), levels)
		}
	}
	root := mapping(
		pair("allowed_roots", strList(p.AllowedRoots),
			"Every scope path of a descriptor must lie under one of these roots.\n\"~\" and \"~/x\" expand to the user's home directory."),
		pair("workspaces", strList(p.Workspaces),
			"Where an agent's everyday changes may flow without a person: a plan is\nLOW only when every change lies inside one of these."),
		pair("resource_caps", caps, "The most a descriptor may request; a request above a cap is blocked."),
		pair("resources", mapping(
			pair("memory_enforcement", strNode(cmp.Or(p.Resources.MemoryEnforcement, MemoryPerProcess)), ""),
		), "How the sandbox enforces a command's caps. memory_enforcement: total\nrefuses commands where no memory cgroup can bound all their processes\ntogether; per_process falls back, for an ordinary user without one, to\nRLIMIT_AS per process, labelled as not a total cap."),
		pair("modes", mapping(
			pair("risk", risk, "By risk level."),
			pair("types", types, "By action type (FILE_WRITE, COMMAND_EXECUTION, ...); overrides the risk default.\nOne mode, or one a risk level: FILE_WRITE: {LOW: allow, HIGH: deny}."+p.droppedTypes()),
		), "The mode of an action: allow, confirm or deny."),
		pair("network", mapping(
			pair("allowed_hosts", strList(p.Network.AllowedHosts), "Hosts NETWORK_REQUEST may reach: an exact host or \"*.example.org\".\n"+
				"An IP address or CIDR range (127.0.0.1, ::1, 10.0.0.0/8) names that range:\n"+
				"names are checked after they resolve, and a loopback, link-local, private\n"+
				"or cloud metadata address is reached only where an entry names its range."),
			pair("sandbox_network", boolNode(p.Network.SandboxNetwork), "Whether sandboxed commands (and so PACKAGE_INSTALL/PACKAGE_REMOVE) may use the network."),
			pair("credential_hosts", strList(p.Network.CredentialHosts), "Hosts (of allowed_hosts) to which act's egress proxy may give your registry\n"+
				"tokens and passwords (~/.npmrc, ~/.netrc, pip.conf, …): commands see them\n"+
				"only as placeholders, which the proxy replaces in requests to these hosts."),
		), ""),
		pair("cooldown", strNode(FormatDuration(p.Cooldown)), "Refuse the same action for this long after a rollback (Go duration)."),
		pair("plan_expiry", strNode(FormatDuration(p.PlanExpiry)), "Pending plans expire after this; a descriptor created longer ago is a stale intent."),
		pair("idle_period", strNode(FormatDuration(p.IdlePeriod)), "The user_idle precondition: no terminal input for this long."),
		pair("max_changes", intNode(p.MaxChanges), "The most changes one plan may hold; a dry run that makes more is rejected."),
		pair("max_pending", intNode(p.MaxPending), "The most plans that may wait for a person."),
		pair("max_layers_mb", intNode(p.MaxLayersMB), "The most MiB the layers of plans not yet applied may hold together."),
		pair("command_rules", commandRulesNode(p.CommandRules), commandRulesComment),
		pair("risk", mapping(
			pair("max_deletes", intNode(p.Risk.MaxDeletes), ""),
			pair("sensitive_paths", strList(p.Risk.SensitivePaths), ""),
			pair("commands", strNode(cmp.Or(p.Risk.Commands, CommandsByDiff)), "by_diff: a command whose dry run had no network and whose every change\nis LOW is LOW, as a FILE_WRITE of that diff; always_medium: every command\nis at least MEDIUM (a person per command, with the default modes)."),
		), "act's own grading: more deletes than this, or a change under one of these\npaths, makes a plan HIGH."),
		pair("redact", mapping(
			pair("pii", boolNode(p.Redact.PII), ""),
		), "Also redact e-mail addresses and phone numbers in commands' output."),
		pair("audit", mapping(
			pair("retain_days", intNode(p.Audit.RetainDays), "How many days audit records are kept."),
			pair("witnesses", witnessesNode(p.Audit.Witnesses), "Witnesses that cosign the log's checkpoints (docs/audit.md, \"Witnesses\"):\n[{name: w1, key: \"<its cosignature/v1 verifier key>\", url: \"https://...\"}]."),
			pair("quorum", intNode(p.Audit.Quorum), "How many of the witnesses must cosign (0: none)."),
			pair("witness_grace", strNode(FormatDuration(p.Audit.WitnessGrace)), "How long a record may wait for the quorum before act audit verify fails."),
			pair("witness_after", boolNode(p.Audit.WitnessAfter), "Ask the witnesses to cosign after each apply and rollback."),
		), ""),
		pair("confirmation", confirmationNode(p.Confirmation, p.approversNote()), ""),
		pair("hooks", mapping(
			pair("cannot_dry_run", strNode(cmp.Or(p.Hooks.CannotDryRun, HookDeny)), "What act hook answers for a command whose dry run does not finish in the\nhook's time (it may wait on the network the sandbox lacks, or a local\nservice): deny, or ask (a person's yes then runs it outside act)."),
		), ""),
		pair("sandbox", mapping(
			pair("hide_paths", strList(p.Sandbox.HidePaths), "More paths hidden from sandboxed commands, besides act's state dir and\nthe usual credential stores (~/.ssh, ~/.aws, ~/.gnupg, …)."),
			pair("home_visible", strList(p.Sandbox.HomeVisible), "What builds need below the home, shown read-only to commands while the\nrest of every home is masked; never a credential store. A tool's\nconfiguration that mixes settings and secrets is shown as a copy with\na placeholder for each secret."),
			pair("caches", strList(p.Sandbox.Caches), "Where tools keep their caches: commands see the user's own there,\nread-only under a throwaway layer; nothing a dry run writes there stays."),
			pair("persistent_caches", strList(p.Sandbox.PersistentCaches), "Opt-in, with a risk: those of caches where act keeps a cache of its own\nacross dry runs, over the user's (docs/sandbox-filesystem.md; act gc\n--caches empties them)."),
			pair("persistent_caches_mb", intNode(p.Sandbox.PersistentCachesMB), "The most MiB act's own caches may hold together."),
			pair("loopback", boolNode(p.Sandbox.Loopback), "IPv4/IPv6 sockets on the sandbox's own loopback for commands without the\nnetwork (a test suite's local server); off: refused."),
		), ""),
	)
	header := marshalHeader
	if p.System != nil {
		header += "\n\nBounded by the system policy " + p.System.File + ": these are the values act\nenforces, the stricter of both layers; a setting marked \"system policy\"\nis the system's, every other the user layer's (" + p.userOrigin() + ")."
		markSources(root, "", p.Sources)
	}
	doc := &yaml.Node{Kind: yaml.DocumentNode, HeadComment: header, Content: []*yaml.Node{root}}
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(doc); err != nil {
		// Every node is built above from plain scalars; encoding cannot fail.
		panic("policy: marshal: " + err.Error())
	}
	if err := enc.Close(); err != nil {
		panic("policy: marshal: " + err.Error())
	}
	return buf.Bytes()
}

// kv is one key and value of a mapping, with the comment above the key.
type kv struct {
	key, value *yaml.Node
}

func pair(key string, value *yaml.Node, comment string) kv {
	k := strNode(key)
	k.HeadComment = comment
	return kv{k, value}
}

func mapping(pairs ...kv) *yaml.Node {
	n := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
	for _, p := range pairs {
		n.Content = append(n.Content, p.key, p.value)
	}
	return n
}

func strList(items []string) *yaml.Node {
	n := &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq"}
	for _, s := range items {
		n.Content = append(n.Content, strNode(s))
	}
	return n
}

func strNode(s string) *yaml.Node {
	return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: s}
}

func intNode(i int64) *yaml.Node {
	return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!int", Value: strconv.FormatInt(i, 10)}
}

func boolNode(b bool) *yaml.Node {
	return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!bool", Value: strconv.FormatBool(b)}
}

func confirmationNode(c Confirmation, note string) *yaml.Node {
	m := mapping(
		pair("via", strNode(c.Via), "What counts as a person's confirmation: flag (--confirm, or a yes at the\nterminal), terminal (only a yes at the controlling terminal), signed (an\nSSH signature by an approver)."),
		pair("approvers", strList(c.Approvers), "Approvers of signed confirmations: allowed_signers lines."+note),
	)
	if c.ApproversFile != "" {
		m.Content = append(m.Content, pair("approvers_file", strNode(c.ApproversFile), "").key, strNode(c.ApproversFile))
	}
	return m
}

// markSources gives every key of n whose setting (prefix.key) the system
// policy decided the line comment "system policy".
func markSources(n *yaml.Node, prefix string, src map[string]string) {
	if n.Kind != yaml.MappingNode {
		return
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		name := prefix + k.Value
		if src[name] == OriginSystem {
			// On the value where it is written on the key's line (a
			// scalar, [] or {...}); after the key before a block.
			if v.Kind == yaml.ScalarNode || len(v.Content) == 0 || v.Style&yaml.FlowStyle != 0 {
				v.LineComment = "system policy"
			} else {
				k.LineComment = "system policy"
			}
		}
		markSources(v, name+".", src)
	}
}

// userOrigin names the user layer's origin in Sources.
func (p *Policy) userOrigin() string {
	for _, name := range settingNames {
		if s := p.Sources[name]; s != "" && s != OriginSystem {
			return s
		}
	}
	return "none of its settings stand"
}

// droppedTypes says which action types the system policy gave the risk
// table's modes, dropping the user layer's looser override.
func (p *Policy) droppedTypes() string {
	var names []string
	for _, t := range descriptors.ActionTypes {
		if !p.Modes.overrides(t) && p.user != nil && p.user.Modes.overrides(t) && p.Sources["modes.types."+string(t)] == OriginSystem {
			names = append(names, string(t))
		}
	}
	if len(names) == 0 {
		return ""
	}
	return "\nThe system policy set aside the user's looser override of " + strings.Join(names, ", ") + "."
}

// approversNote says, when it is so, that the user layer's approvers do
// not count.
func (p *Policy) approversNote() string {
	if p.floor == nil || p.floor.Confirmation.Via != ViaSigned {
		return ""
	}
	s := "\nThe system policy asks for signed confirmations: only the approvers it\nnames count"
	if p.UserApproversIgnored {
		s += "; the user policy's approvers and approvers_file are ignored"
	}
	if len(p.Confirmation.Approvers) == 0 && p.Confirmation.ApproversFile == "" {
		s += ".\nIt names none, so nothing approves"
	}
	return s + "."
}

// commandRulesComment is the comment above command_rules in the policy
// act prints (and in default.yaml).
const commandRulesComment = "Invocations a person pre-approves (allow, confirm) or refuses (deny); a plan\n" +
	"whose every command one matches has the rule's mode while the rest of it is LOW.\n" +
	"allow and confirm match the whole command: the program as the sandbox's PATH\n" +
	"finds it (a bare name: one root installed in a system tree, such as /usr/bin;\n" +
	"else its absolute path), each argument exactly, \"*\" one operand, \"**\" last:\n" +
	"any flag of the tool; env: and stdin: any must allow the operation's.\n" +
	"deny matches the program by name whatever follows, also through env, nice,\n" +
	"timeout, xargs, sh -c, find -exec: best effort, never the only defence.\n" +
	"E.g. [{argv: [go, test, ./...], mode: allow}, {argv: [go, vet, \"**\"], mode: allow},\n" +
	"{argv: [rm], mode: deny}] (docs/policy.md, \"Command rules\")."

// commandRulesNode is the command rules as a flow sequence of
// {argv: [...], env: {...}, stdin: any, mode: ...} mappings.
func commandRulesNode(rules []CommandRule) *yaml.Node {
	n := &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq"}
	if len(rules) == 0 {
		n.Style = yaml.FlowStyle
	}
	for _, r := range rules {
		argv := strList(r.Argv)
		argv.Style = yaml.FlowStyle
		m := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map", Style: yaml.FlowStyle}
		m.Content = append(m.Content, strNode("argv"), argv)
		if len(r.Env) > 0 {
			env := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map", Style: yaml.FlowStyle}
			keys := make([]string, 0, len(r.Env))
			for k := range r.Env {
				keys = append(keys, k)
			}
			slices.Sort(keys)
			for _, k := range keys {
				env.Content = append(env.Content, strNode(k), strNode(r.Env[k]))
			}
			m.Content = append(m.Content, strNode("env"), env)
		}
		if r.Stdin != "" {
			m.Content = append(m.Content, strNode("stdin"), strNode(r.Stdin))
		}
		m.Content = append(m.Content, strNode("mode"), strNode(string(r.Mode)))
		n.Content = append(n.Content, m)
	}
	return n
}

func witnessesNode(ws []Witness) *yaml.Node {
	n := &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq"}
	if len(ws) == 0 {
		n.Style = yaml.FlowStyle
	}
	for _, w := range ws {
		m := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
		m.Content = append(m.Content, strNode("name"), strNode(w.Name), strNode("key"), strNode(w.Key), strNode("url"), strNode(w.URL))
		n.Content = append(n.Content, m)
	}
	return n
}
