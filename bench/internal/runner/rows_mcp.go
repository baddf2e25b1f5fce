package main

import (
	"bufio"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"time"
)

// Row 3w: what an agent pays per action through `act mcp`. One act mcp
// process is started (and warmed) once; each A run is one tools/call
// round trip of act_plan of a COMMAND_EXECUTION `true`, timed by the
// client here, with a fresh action_id (an id that runs commands may be
// planned only max_runs times). B is the same bwrap process as row 3.
func init() {
	rows = append(rows, row{num: "3w", name: "plan-sandbox-mcp", target: 2.0, setup: func(b *bench) (side, side) {
		scope := b.tree("sandbox-mcp-100", 100)
		path := b.writeDescriptorOp(scope, "COMMAND_EXECUTION",
			"{create: [], modify: [], delete: []}",
			fmt.Sprintf("{argv: [\"true\"], workdir: %s}", scope))
		tmpl, err := os.ReadFile(path)
		b.must(err)
		const fixedID = "5d0c7a9e-3f1b-4c2d-8e4f-a0b1c2d3e4f5"
		if !strings.Contains(string(tmpl), fixedID) {
			b.fail("row 3w: the descriptor has no action_id to replace")
		}
		c, err := startMCP(b, b.act())
		b.must(err)
		plan := func(int) (sample, error) {
			d := strings.Replace(string(tmpl), fixedID, newUUID(), 1)
			start := time.Now()
			res, err := c.call("tools/call", map[string]any{"name": "act_plan", "arguments": map[string]any{"descriptor": d}})
			wall := time.Since(start)
			if err != nil {
				return sample{}, err
			}
			var r struct {
				IsError    bool `json:"isError"`
				Structured struct {
					Status string `json:"status"`
				} `json:"structuredContent"`
			}
			if err := json.Unmarshal(res, &r); err != nil {
				return sample{}, err
			}
			if r.IsError || r.Structured.Status != "planned" {
				return sample{}, fmt.Errorf("act_plan answered %s", res)
			}
			return sample{wall: wall, maxRSS: -1}, nil
		}
		if _, err := plan(-1); err != nil {
			b.fail("row 3w: %v", err)
		}
		bwrap, err := exec.LookPath("bwrap")
		b.must(err)
		return side{label: "act mcp: one tools/call of act_plan (warm server)", run: plan},
			b.command(bwrap, "--unshare-all", "--die-with-parent", "--ro-bind", "/", "/", "true")
	}})
}

// mcpClient is the least MCP client: newline-delimited JSON-RPC over the
// stdin and stdout of one `act mcp` process.
type mcpClient struct {
	w    io.Writer
	r    *bufio.Reader
	next int
}

// startMCP starts `act mcp` in the bench environment and initializes the
// session. The process ends when the runner does (its stdin closes).
func startMCP(b *bench, act string) (*mcpClient, error) {
	cmd := exec.Command(act, "mcp")
	cmd.Env, cmd.Dir, cmd.Stderr = b.env, b.work, b.devnull
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	c := &mcpClient{w: in, r: bufio.NewReaderSize(out, 1<<20)}
	if _, err := c.call("initialize", map[string]any{
		"protocolVersion": "2025-06-18",
		"capabilities":    map[string]any{},
		"clientInfo":      map[string]any{"name": "act-bench", "version": "1"},
	}); err != nil {
		return nil, fmt.Errorf("act mcp: initialize: %w", err)
	}
	if err := c.send(map[string]any{"jsonrpc": "2.0", "method": "notifications/initialized"}); err != nil {
		return nil, err
	}
	return c, nil
}

func (c *mcpClient) send(msg any) error {
	b, err := json.Marshal(msg)
	if err != nil {
		return err
	}
	_, err = c.w.Write(append(b, '\n'))
	return err
}

// call sends one request and returns its result, skipping notifications.
func (c *mcpClient) call(method string, params any) (json.RawMessage, error) {
	c.next++
	id := c.next
	if err := c.send(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params}); err != nil {
		return nil, err
	}
	for {
		line, err := c.r.ReadBytes('\n')
		if err != nil {
			return nil, fmt.Errorf("act mcp: %w", err)
		}
		var resp struct {
			ID     *int            `json:"id"`
			Result json.RawMessage `json:"result"`
			Error  *struct {
				Message string `json:"message"`
			} `json:"error"`
		}
		if err := json.Unmarshal(line, &resp); err != nil {
			return nil, fmt.Errorf("act mcp: %w: %s", err, line)
		}
		if resp.ID == nil || *resp.ID != id {
			continue
		}
		if resp.Error != nil {
			return nil, fmt.Errorf("act mcp: %s: %s", method, resp.Error.Message)
		}
		return resp.Result, nil
	}
}

// newUUID returns a random version 4 UUID.
func newUUID() string {
	var u [16]byte
	rand.Read(u[:])
	u[6] = u[6]&0x0f | 0x40
	u[8] = u[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", u[0:4], u[4:6], u[6:8], u[8:10], u[10:16])
}
