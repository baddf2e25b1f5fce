package mcpserver

// The framing of `act mcp` on standard input and output (docs/mcp.md,
// "Framing"). The rules of this file:
//
//   - A frame is one line: bytes up to a newline, a final "\r" dropped. A
//     blank line is nothing.
//   - The SDK reads only frames it accepts: one JSON object that decodes
//     as a JSON-RPC request or response, ended by a newline. Any other line
//     is answered here with a JSON-RPC error and dropped, and the session
//     goes on: the SDK ends a session at the first frame it cannot decode.
//   - A line longer than maxFrame is not kept: it is read to its
//     newline in pieces of the reader's buffer and answered as too large.
//   - Every frame written to standard output, the SDK's and this file's,
//     is one Write under one mutex, so that frames never interleave, and
//     holds none of the characters act escapes as itself: JSON's own
//     \uXXXX escapes stand for them (review.JSONVisible), as in --json.

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/act-project/act/review"
)

// NewTransport is act mcp's transport over in and out: the SDK's
// newline-delimited one, fed only the frames it accepts. out is the raw
// standard output: JSON-RPC is data, not text for a terminal, and JSON
// already escapes every control character. log is standard error.
func NewTransport(in io.Reader, out io.Writer, log io.Writer) mcp.Transport {
	w := &frameWriter{w: out}
	r := &frameReader{src: bufio.NewReaderSize(in, 64<<10), out: w, log: log, max: maxFrame}
	if c, ok := in.(io.Closer); ok {
		r.closer = c
	}
	// The SDK's own cap on a frame is off: frameReader hands it no line
	// longer than maxFrame, and the SDK's cap would end the session.
	return &mcp.IOTransport{Reader: r, Writer: w, MaxLineLength: -1}
}

// frameWriter is standard output shared by the SDK and frameReader: one
// Write is one whole frame.
type frameWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (w *frameWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if _, err := w.w.Write(review.JSONVisible(p)); err != nil {
		return 0, err
	}
	return len(p), nil
}

// Close leaves standard output open: the process's, not the session's.
func (w *frameWriter) Close() error { return nil }

// frameReader hands the SDK the lines of src that are JSON-RPC messages,
// each ended by a newline, and answers every other line on out itself.
type frameReader struct {
	src    *bufio.Reader
	closer io.Closer
	out    *frameWriter
	log    io.Writer
	max    int
	line   []byte // the line being read, at most max bytes
	ready  []byte // the rest of the frame the SDK is reading
	err    error  // src's error, returned once ready is drained
}

func (r *frameReader) Read(p []byte) (int, error) {
	for len(r.ready) == 0 {
		if r.err != nil {
			return 0, r.err
		}
		line, long, err := r.readLine()
		r.err = err
		switch {
		case long:
			r.refuse(frameError{code: jsonrpc.CodeInvalidRequest,
				msg: fmt.Sprintf("invalid request: the message is longer than %d MiB", r.max>>20)})
		case len(bytes.TrimSpace(line)) == 0:
		default:
			if fe := checkFrame(line); fe != nil {
				r.refuse(*fe)
				continue
			}
			r.ready = append(line, '\n')
		}
	}
	n := copy(p, r.ready)
	r.ready = r.ready[n:]
	return n, nil
}

// readLine reads the next line of src without its newline (or final
// "\r"). A line longer than r.max is read to its end and dropped: long
// is true. A last line without a newline is a line; err is src's error
// after it.
func (r *frameReader) readLine() (line []byte, long bool, err error) {
	if cap(r.line) > 1<<20 {
		r.line = nil // not kept between messages
	}
	r.line = r.line[:0]
	for {
		chunk, err := r.src.ReadSlice('\n')
		if !long {
			if len(r.line)+len(chunk) > r.max+2 { // room for "\r\n"
				long, r.line = true, r.line[:0]
			} else {
				r.line = append(r.line, chunk...)
			}
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		line = bytes.TrimSuffix(bytes.TrimSuffix(r.line, []byte("\n")), []byte("\r"))
		if len(line) > r.max {
			long, line = true, nil
		}
		if err == io.EOF && len(chunk) == 0 && len(r.line) == 0 && !long {
			return nil, false, io.EOF
		}
		return line, long, err
	}
}

func (r *frameReader) Close() error {
	if r.closer != nil {
		return r.closer.Close()
	}
	return nil
}

// frameError is the JSON-RPC error answering a frame the SDK is not given.
type frameError struct {
	code int
	msg  string
	id   json.RawMessage // the frame's id, when it has a valid one
}

// refuse answers a dropped frame on out, and logs it on the server's
// standard error, where MCP clients keep the server's log.
func (r *frameReader) refuse(fe frameError) {
	id := fe.id
	if id == nil {
		id = json.RawMessage("null")
	}
	b, err := json.Marshal(struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}{JSONRPC: "2.0", ID: id, Error: struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	}{fe.code, fe.msg}})
	if err != nil {
		return // a string and a valid id always marshal
	}
	r.out.Write(append(b, '\n'))
	if r.log != nil {
		io.WriteString(r.log, "act: mcp: refused a message: "+review.Line(fe.msg)+"\n")
	}
}

// checkFrame says why line is not a message the SDK takes, or nil when it
// is: one JSON object that decodes as a JSON-RPC 2.0 request, or a
// response with a result or an error. Batches (arrays), which MCP dropped
// in its 2025-06-18 version and the SDK refuses after it, are refused.
func checkFrame(line []byte) *frameError {
	var v json.RawMessage
	if err := json.Unmarshal(line, &v); err != nil {
		return &frameError{code: jsonrpc.CodeParseError, msg: "parse error: the message is not JSON: " + err.Error()}
	}
	v = bytes.TrimSpace(v)
	switch v[0] {
	case '{':
	case '[':
		return &frameError{code: jsonrpc.CodeInvalidRequest, msg: "invalid request: batches (JSON arrays) are not supported; send one message a line"}
	default:
		return &frameError{code: jsonrpc.CodeInvalidRequest, msg: "invalid request: a JSON-RPC message is a JSON object"}
	}
	var fields struct {
		ID json.RawMessage `json:"id"`
	}
	json.Unmarshal(v, &fields) // an object always decodes into a raw field
	fe := &frameError{code: jsonrpc.CodeInvalidRequest}
	if id := bytes.TrimSpace(fields.ID); len(id) > 0 && (id[0] == '"' || id[0] == '-' || id[0] >= '0' && id[0] <= '9') {
		fe.id = id
	}
	msg, err := jsonrpc.DecodeMessage(v)
	if err != nil {
		fe.msg = "invalid request: " + err.Error()
		return fe
	}
	if r, ok := msg.(*jsonrpc.Response); ok && r.Result == nil && r.Error == nil {
		fe.msg = "invalid request: a message with an id has a method (a request), or a result or an error (a response)"
		return fe
	}
	return nil
}
