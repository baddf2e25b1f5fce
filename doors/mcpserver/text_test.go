package mcpserver

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/act-project/act/review"
	"github.com/act-project/act/sandbox/isolate"
)

// TestMCPTextEscaped: the text a model reads of a tool's answer holds
// none of the characters act escapes as itself — a bidirectional
// override and a tag character in a file's name and content, an ESC that
// conceals (SGR 8) — and is still the JSON of the answer, decoding to
// the exact values the structured content holds; the progress of a
// command's output is escaped too.
func TestMCPTextEscaped(t *testing.T) {
	if err := isolate.Available(); err != nil {
		t.Skipf("commands cannot be isolated here: %v", err)
	}
	var mu sync.Mutex
	var progress []string
	f := newMCPFixtureWith(t, &mcp.ClientOptions{ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
		mu.Lock()
		progress = append(progress, req.Params.Message)
		mu.Unlock()
	}})
	const hostile = "a\u202eb\U000E0041\x1b[8mhidden"
	res, out := f.call(context.Background(), "act_plan", map[string]any{"descriptor": f.descriptor(descOpts{id: testUUID(41), name: hostile + ".txt", content: hostile + "\n"})})
	if res.IsError || out.PlanID == "" {
		t.Fatalf("act_plan: %+v", out)
	}
	checkText(t, res, func(decoded toolOutput) {
		if !strings.Contains(decoded.Diff, hostile) || len(decoded.Changes) != 1 || !strings.HasSuffix(decoded.Changes[0].Path, hostile+".txt") {
			t.Errorf("the text does not decode to the exact values: %+v", decoded)
		}
	})

	d := f.descriptor(descOpts{id: testUUID(42), command: []string{"sh", "-c", `printf 'out\033[8mhidden\342\200\256\n'`}})
	params := &mcp.CallToolParams{Name: "act_plan", Arguments: map[string]any{"descriptor": d}}
	params.SetProgressToken("plan-hostile")
	res, err := f.cs.CallTool(context.Background(), params)
	if err != nil || res.IsError {
		t.Fatalf("act_plan: %v %+v", err, res)
	}
	checkText(t, res, func(decoded toolOutput) {
		if len(decoded.Commands) != 1 || decoded.Commands[0].Stdout != "out\x1b[8mhidden\u202e\n" {
			t.Errorf("the text does not decode to the exact output: %+v", decoded.Commands)
		}
	})
	// A notification may be delivered after the call's answer: wait for
	// it (a liveness bound, not a speed one).
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		mu.Lock()
		n := len(progress)
		mu.Unlock()
		if n > 0 {
			break
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(progress) != 1 || progress[0] != `out\x1b[8mhidden\u202e` {
		t.Errorf("progress messages %q, want the line escaped", progress)
	}
}

// checkText checks that every text content of res holds no character
// act escapes as itself, and decodes as JSON to what check is given.
func checkText(t *testing.T, res *mcp.CallToolResult, check func(toolOutput)) {
	t.Helper()
	if len(res.Content) == 0 {
		t.Fatal("no text content")
	}
	for _, c := range res.Content {
		text := c.(*mcp.TextContent).Text
		for _, r := range text {
			if r < 0x20 && r != '\n' && r != '\t' || review.Invisible(r) {
				t.Errorf("the text holds U+%04X as itself: %q", r, text)
				break
			}
		}
		var decoded toolOutput
		if err := json.Unmarshal([]byte(text), &decoded); err != nil {
			t.Fatalf("the text is not JSON: %v\n%s", err, text)
		}
		check(decoded)
	}
}
