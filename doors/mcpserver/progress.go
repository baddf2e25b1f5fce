package mcpserver

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/act-project/act/review"
)

// progressLines is the most progress notifications a second a dry run
// sends, as a terminal shows its lines (cmd's stream).
const progressLines = 4

// progressWidth is the most characters of a line a notification holds.
const progressWidth = 200

// notifyProgress sends a dry run's command output as MCP progress
// notifications of token: each line escaped (review.Line) and cut to
// progressWidth characters, at most progressLines a second (the rest
// counted in the next one sent). Notifications are best effort: one the
// client does not take is dropped.
func notifyProgress(ctx context.Context, ss *mcp.ServerSession, token any) func(stream int, line string) {
	var (
		mu            sync.Mutex
		n             float64
		second, shown int
		skipped       int
		start         = time.Now()
	)
	return func(_ int, line string) {
		mu.Lock()
		defer mu.Unlock()
		sec := int(time.Since(start) / time.Second)
		if sec != second {
			second, shown = sec, 0
		}
		if shown >= progressLines {
			skipped++
			return
		}
		shown++
		n++
		msg := cutWidth(review.Line(strings.TrimRight(line, "\r")), progressWidth)
		if skipped > 0 {
			msg = fmt.Sprintf("(%s not shown) %s", review.Plural(skipped, "line"), msg)
			skipped = 0
		}
		_ = ss.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: token, Message: msg, Progress: n})
	}
}

// cutWidth cuts s to at most n characters, ending in … when cut.
func cutWidth(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return string([]rune(s)[:n-1]) + "…"
}
