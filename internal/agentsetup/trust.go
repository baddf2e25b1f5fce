package agentsetup

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"sort"
	"strconv"
	"unicode/utf8"
)

// Codex runs a hook of the user's or a project's only when the user's
// config.toml holds, under hooks.state."KEY", a trusted_hash equal to the
// hook's hash as it now reads (openai/codex, codex-rs/hooks/src/engine/
// discovery.rs: command_hook_hash and hook_trust_status; the state is read
// from the user's layers only, codex-rs/hooks/src/config_rules.rs). KEY is
// "<source file>:<event>:<group index>:<handler index>" (hook_key), the
// file as Codex names it: $CODEX_HOME resolved, or the project's
// .codex/config.toml. Managed hooks (the system's config.toml, MDM,
// requirements) need no trust.
//
// The hash is version_for_toml (codex-rs/config/src/fingerprint.rs) of a
// normalized identity: the event's snake_case label and the matcher group
// with only this handler, its timeout made explicit (600 when absent, at
// least 1). Codex serializes it through TOML, which drops every absent
// field, turns it into JSON, sorts every object's keys, writes it compact
// with serde_json and takes its SHA-256, written "sha256:<hex>". Checked
// against Codex 0.171.0: the hash of act hook install is the currentHash
// Codex reports, and Codex runs the hook (TestCodexCLI).

// codexEventLabel is Codex's key label of an event (hook_event_key_label).
var codexEventLabel = map[string]string{
	"PreToolUse": "pre_tool_use", "PermissionRequest": "permission_request", "PostToolUse": "post_tool_use",
	"PreCompact": "pre_compact", "PostCompact": "post_compact", "SessionStart": "session_start",
	"UserPromptSubmit": "user_prompt_submit", "Stop": "stop",
}

// hookKey is Codex's hooks.state key of a handler.
func hookKey(source, event string, group, index int) string {
	return fmt.Sprintf("%s:%s:%d:%d", source, codexEventLabel[event], group, index)
}

// codexHandlerFields are the members of a command handler Codex 0.171.0
// reads (and so hashes); it ignores any other.
var codexHandlerFields = []string{"command", "timeout", "async", "statusMessage"}

// TrustedHash is the trusted_hash Codex requires of a command hook on
// event with matcher (nil: none) and the handler's fields as its
// settings file has them (command, timeout, async, statusMessage).
func TrustedHash(event string, matcher *string, fields map[string]any) string {
	h := map[string]any{"type": "command", "async": false, "timeout": int64(defaultAgentTimeout)}
	for _, k := range codexHandlerFields {
		if v, ok := fields[k]; ok && v != nil {
			h[k] = v
		}
	}
	switch t := h["timeout"].(type) {
	case int64:
		h["timeout"] = max(t, 1)
	case float64:
		h["timeout"] = max(int64(t), 1)
	}
	group := map[string]any{"hooks": []any{h}}
	if matcher != nil {
		group["matcher"] = *matcher
	}
	group["event_name"] = codexEventLabel[event]
	var b bytes.Buffer
	writeCanonical(&b, group)
	sum := sha256.Sum256(b.Bytes())
	return "sha256:" + hex.EncodeToString(sum[:])
}

// writeCanonical writes v as serde_json writes a canonicalized value:
// compact, object keys sorted by their bytes, strings escaped as
// serde_json escapes them.
func writeCanonical(b *bytes.Buffer, v any) {
	switch x := v.(type) {
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		b.WriteByte('{')
		for i, k := range keys {
			if i > 0 {
				b.WriteByte(',')
			}
			writeJSONString(b, k)
			b.WriteByte(':')
			writeCanonical(b, x[k])
		}
		b.WriteByte('}')
	case []any:
		b.WriteByte('[')
		for i, e := range x {
			if i > 0 {
				b.WriteByte(',')
			}
			writeCanonical(b, e)
		}
		b.WriteByte(']')
	case string:
		writeJSONString(b, x)
	case bool:
		b.WriteString(strconv.FormatBool(x))
	case int64:
		b.WriteString(strconv.FormatInt(x, 10))
	case float64:
		if x == float64(int64(x)) {
			b.WriteString(strconv.FormatInt(int64(x), 10))
		} else {
			b.WriteString(strconv.FormatFloat(x, 'g', -1, 64))
		}
	default:
		fmt.Fprintf(b, "%q", fmt.Sprint(x))
	}
}

// writeJSONString writes s as serde_json does: " and \ escaped, \b \f \n
// \r \t, any other control character as \u00xx (lower-case hex), every
// other character as itself.
func writeJSONString(b *bytes.Buffer, s string) {
	b.WriteByte('"')
	for _, r := range s {
		switch r {
		case '"':
			b.WriteString(`\"`)
		case '\\':
			b.WriteString(`\\`)
		case '\b':
			b.WriteString(`\b`)
		case '\f':
			b.WriteString(`\f`)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		case '\t':
			b.WriteString(`\t`)
		default:
			if r < 0x20 {
				fmt.Fprintf(b, `\u%04x`, r)
			} else if r == utf8.RuneError {
				b.WriteString("\uFFFD")
			} else {
				b.WriteRune(r)
			}
		}
	}
	b.WriteByte('"')
}
