// Package doors holds what every door into act shares. A door is
// anything that lets a request in — the CLI's commands, act run, act mcp,
// the Claude Code and Codex hooks, adoption after PostToolUse — and each
// is one package that only translates its protocol: it builds a typed
// descriptor (descriptors.Built) or reads one, asks the gate
// (gate.CheckBuilt or gate.Check, gate.PlanChecked, then gate.Submit,
// gate.Apply, gate.Adopt or gate.Rollback), and renders the gate's typed
// answer through package review. The gate checks, decides and records;
// no door calls package plan or package rollback (TestDeps).
//
// Adding a door (docs/agents.md, "Adding a door"): a new package under
// doors/ that takes a [Door] from cmd, maps its protocol's request to a
// descriptor and its protocol's answer from a gate.Decision, and shows
// every text through review — so a rule added to the gate holds for the
// new door at once, and no door can skip act's escaping.
package doors
