// Package review makes what a person or a model reads of act's work, for
// every sink: the terminal and the pager, act show, a hook's reason
// (Claude Code's, Codex's), MCP text, the strings of --json. It renders a
// plan (Plan, PlanText), a command's output (Output), a command line
// (ShellJoin) and an intent (Intent), and it escapes, in this package and
// so for every door, whatever could drive a terminal or hide text: control
// characters, ESC, DEL, C1, the bidirectional and other format
// characters, invisible letters, invalid UTF-8 (Text, Line, JSONVisible,
// TermWriter; docs/sandbox-output.md). What it bounds it says it cut,
// where and how much.
//
// Colours are not review's: a Style is an id and a nonce marking text;
// cmd gives each id its colour (lipgloss) for a TermWriter to draw.
package review
