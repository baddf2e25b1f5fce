package mcpserver

import (
	"context"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/act-project/act/review"
)

// escapeToolText makes the text content of every tool result, which the
// model reads, what review makes of it (review.JSONText): the SDK writes
// the structured answer there as JSON, whose strings keep as themselves
// the characters act escapes everywhere else (a bidirectional override
// in a path, a tag character in an intent), and an error's message as it
// is. The structured content keeps the exact values, as --json does.
func escapeToolText(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		res, err := next(ctx, method, req)
		r, ok := res.(*mcp.CallToolResult)
		if err != nil || !ok || r == nil {
			return res, err
		}
		for i, c := range r.Content {
			if t, ok := c.(*mcp.TextContent); ok {
				text := *t
				text.Text = review.JSONText(t.Text)
				r.Content[i] = &text
			}
		}
		return r, nil
	}
}
