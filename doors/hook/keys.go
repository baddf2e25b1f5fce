package hook

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
)

// The harnesses read their hook input's keys exactly (Claude Code's and
// Codex's JSON parsers are case-sensitive and keep one value per key),
// where Go's encoding/json matches a key case-insensitively and keeps the
// last of a repeated one. An input with file_path and File_Path, or with
// file_path twice, would have act review one file and the tool write
// another: such an input is refused.

// readKeys are the keys act reads of a hook input, at any depth.
var readKeys = []string{
	"session_id", "hook_event_name", "tool_name", "tool_input", "tool_use_id", "permission_mode", "cwd",
	"file_path", "content", "old_string", "new_string", "replace_all", "edits", "command",
}

// exactKeys refuses a JSON document holding, in any object, a key twice,
// two keys that differ only in case, or a key that differs only in case
// from one act reads.
func exactKeys(data []byte) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	return exactValue(dec)
}

func exactValue(dec *json.Decoder) error {
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	switch tok {
	case json.Delim('{'):
		seen := map[string]string{}
		for dec.More() {
			kt, err := dec.Token()
			if err != nil {
				return err
			}
			k := kt.(string)
			fold := strings.ToLower(k)
			if prev, ok := seen[fold]; ok {
				if prev == k {
					return fmt.Errorf("the hook input repeats the key %q", k)
				}
				return fmt.Errorf("the hook input has both %q and %q, which the harness reads as two keys", prev, k)
			}
			seen[fold] = k
			for _, r := range readKeys {
				if k != r && strings.EqualFold(k, r) {
					return fmt.Errorf("the hook input has the key %q, which the harness does not read as %q", k, r)
				}
			}
			if err := exactValue(dec); err != nil {
				return err
			}
		}
		_, err = dec.Token() // }
		return err
	case json.Delim('['):
		for dec.More() {
			if err := exactValue(dec); err != nil {
				return err
			}
		}
		_, err = dec.Token() // ]
		return err
	}
	return nil
}
