package hook

import (
	"strings"
	"testing"
)

// TestExactKeys: an input whose keys the harness and Go's encoding/json
// would read differently is refused — a repeated key, a case variant of
// another, a case variant of a key act reads — at any depth.
func TestExactKeys(t *testing.T) {
	for in, want := range map[string]string{
		`{"tool_name":"Write","tool_input":{"file_path":"/a","content":"x"}}`:                    "",
		`{"tool_name":"Write","tool_input":{"file_path":"/a","File_Path":"/b","content":"x"}}`:   `both "file_path" and "File_Path"`,
		`{"tool_name":"Write","tool_input":{"File_Path":"/b","content":"x"}}`:                    `"File_Path", which the harness does not read as "file_path"`,
		`{"tool_name":"Write","tool_input":{"file_path":"/a","file_path":"/b","content":"x"}}`:   `repeats the key "file_path"`,
		`{"tool_name":"MultiEdit","tool_input":{"edits":[{"old_string":"a","Old_String":"b"}]}}`: `both "old_string" and "Old_String"`,
		`{"Tool_Name":"Write"}`: `"Tool_Name"`,
		`{"tool_name":"Bash","tool_input":{"command":"ls","extra":{"A":1,"a":2}}}`: `both "A" and "a"`,
	} {
		err := exactKeys([]byte(in))
		switch {
		case want == "" && err != nil:
			t.Errorf("%s: %v", in, err)
		case want != "" && (err == nil || !strings.Contains(err.Error(), want)):
			t.Errorf("%s: got %v, want an error with %s", in, err, want)
		}
	}
}
