package mcpserver

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"strings"
	"testing"
)

// TestFrameReaderLines: the lines the SDK is given and the errors
// answered, at the edges of the length limit and of the input.
func TestFrameReaderLines(t *testing.T) {
	req := `{"jsonrpc":"2.0","id":1,"method":"m"}`
	resp := `{"jsonrpc":"2.0","id":1}` // neither a result nor an error
	for _, c := range []struct {
		name, in string
		max      int
		frames   []string
		codes    []float64
	}{
		{"one request", req + "\n", 64, []string{req}, nil},
		{"CRLF", req + "\r\n", 64, []string{req}, nil},
		{"no newline at the end", req, 64, []string{req}, nil},
		{"blank lines", "\n \r\n\t\n" + req + "\n\n", 64, []string{req}, nil},
		{"exactly the limit, with CRLF", req + "\r\n", len(req), []string{req}, nil},
		{"one byte over", req + " \n" + req + "\n", len(req), []string{req}, []float64{-32600}},
		{"an empty response", resp + "\n" + req + "\n", 64, []string{req}, []float64{-32600}},
		{"two values", req + req + "\n", 128, nil, []float64{-32700}},
		{"far over, then a request", strings.Repeat("x", 1000) + "\n" + req + "\n", 64, []string{req}, []float64{-32600}},
		{"far over, no newline", strings.Repeat("x", 1000), 64, nil, []float64{-32600}},
		{"cut off at the end", `{"jsonrpc":"2.0","id":1,"meth`, 64, nil, []float64{-32700}},
	} {
		t.Run(c.name, func(t *testing.T) {
			var out bytes.Buffer
			r := &frameReader{src: bufio.NewReaderSize(strings.NewReader(c.in), 16), out: &frameWriter{w: &out}, max: c.max}
			got, err := io.ReadAll(r)
			if err != nil {
				t.Fatal(err)
			}
			var frames []string
			for _, l := range strings.SplitAfter(string(got), "\n") {
				if l != "" {
					if !strings.HasSuffix(l, "\n") {
						t.Errorf("a frame without its newline: %q", l)
					}
					frames = append(frames, strings.TrimSuffix(l, "\n"))
				}
			}
			if strings.Join(frames, "|") != strings.Join(c.frames, "|") {
				t.Errorf("frames %q, want %q", frames, c.frames)
			}
			var codes []float64
			for _, l := range strings.Split(strings.TrimSpace(out.String()), "\n") {
				if l == "" {
					continue
				}
				var m struct {
					ID    any `json:"id"`
					Error struct {
						Code float64 `json:"code"`
					} `json:"error"`
				}
				if err := json.Unmarshal([]byte(l), &m); err != nil {
					t.Fatalf("answer %q: %v", l, err)
				}
				codes = append(codes, m.Error.Code)
			}
			if len(codes) != len(c.codes) || len(codes) > 0 && codes[0] != c.codes[0] || len(codes) > 1 && codes[1] != c.codes[1] {
				t.Errorf("answers %v, want %v\n%s", codes, c.codes, out.String())
			}
		})
	}
}
