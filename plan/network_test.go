package plan

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/act-project/act/descriptors"
	"github.com/act-project/act/sandbox"
)

// TestNetworkRequest performs real requests against a server on loopback:
// the body lands in the layer at save_to, the real tree is untouched, and a
// redirect to a host the policy does not list is refused.
func TestNetworkRequest(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("/ok", func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("payload\n")) })
	mux.HandleFunc("/missing", http.NotFound)
	mux.HandleFunc("/big", func(w http.ResponseWriter, r *http.Request) { w.Write([]byte(strings.Repeat("x", 2048))) })
	srv := httptest.NewServer(mux)
	defer srv.Close()
	// The same server under another name: "localhost" is not allow-listed.
	mux.HandleFunc("/away", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, strings.Replace(srv.URL, "127.0.0.1", "localhost", 1)+"/ok", http.StatusFound)
	})
	mux.HandleFunc("/hop", func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, "/ok", http.StatusFound) })

	fetch := HTTPFetcher{Allowed: func(h string) bool { return h == "127.0.0.1" }}
	for _, tt := range []struct {
		name, method, path, saveTo string
		wantRule, wantBody         string
	}{
		{name: "get saves", method: "GET", path: "/ok", saveTo: "out.txt", wantBody: "payload\n"},
		{name: "redirect within the host", method: "GET", path: "/hop", saveTo: "out.txt", wantBody: "payload\n"},
		{name: "head saves nothing", method: "HEAD", path: "/ok"},
		{name: "redirect elsewhere", method: "GET", path: "/away", saveTo: "out.txt", wantRule: "op.network-host-not-allowed"},
		{name: "not found", method: "GET", path: "/missing", saveTo: "out.txt", wantRule: "op.network-status"},
		{name: "too large", method: "GET", path: "/big", saveTo: "out.txt", wantRule: "op.network-too-large"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			real := t.TempDir()
			layer := sandbox.NewLayerSystem(sandbox.RealSystem{}, t.TempDir())
			d := &descriptors.Descriptor{ActionType: descriptors.NetworkRequest}
			d.Scope.Filesystem = descriptors.FilesystemScope{Paths: []string{real}, Recursive: true}
			op := descriptors.NetworkRequestOp{Method: tt.method, URL: srv.URL + tt.path}
			if tt.saveTo != "" {
				op.SaveTo = filepath.Join(real, tt.saveTo)
			}
			d.Op = op
			res, err := RunOpsWith(context.Background(), d, layer, RunOptions{Fetch: fetch, MaxBody: 1024})
			if tt.wantRule != "" {
				var oe *OpError
				if !errors.As(err, &oe) || oe.Rule != tt.wantRule {
					t.Fatalf("RunOpsWith() error = %v, want rule %s", err, tt.wantRule)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Fetched) != 1 || res.Fetched[0].Status != 200 {
				t.Fatalf("Fetched = %+v, want one 200", res.Fetched)
			}
			if entries, _ := os.ReadDir(real); len(entries) != 0 {
				t.Errorf("the real scope holds %d entries after a dry run, want none", len(entries))
			}
			if tt.saveTo == "" {
				return
			}
			got, err := os.ReadFile(layer.Upper(op.SaveTo))
			if err != nil || string(got) != tt.wantBody {
				t.Errorf("layer holds %q, %v; want %q", got, err, tt.wantBody)
			}
		})
	}
}

// TestNetworkRequestWithoutFetcher: plain RunOps does not reach the network.
func TestNetworkRequestWithoutFetcher(t *testing.T) {
	d := &descriptors.Descriptor{ActionType: descriptors.NetworkRequest, Op: descriptors.NetworkRequestOp{Method: "GET", URL: "http://127.0.0.1/"}}
	if _, err := RunOps(context.Background(), d, sandbox.RealSystem{}); !errors.Is(err, ErrNotFileOperation) {
		t.Errorf("RunOps() error = %v, want ErrNotFileOperation", err)
	}
}

// TestNetworkRequestAfterReady: a request is sent only once
// RunOptions.Ready has passed; its refusal is RunOpsWith's error.
func TestNetworkRequestAfterReady(t *testing.T) {
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hits.Add(1) }))
	defer srv.Close()
	refused := errors.New("the gate refused")
	real := t.TempDir()
	d := &descriptors.Descriptor{ActionType: descriptors.NetworkRequest}
	d.Scope.Filesystem = descriptors.FilesystemScope{Paths: []string{real}, Recursive: true}
	d.Op = descriptors.NetworkRequestOp{Method: "GET", URL: srv.URL + "/x"}
	fetch := HTTPFetcher{Allowed: func(h string) bool { return h == "127.0.0.1" }}
	for _, ready := range []error{refused, nil} {
		layer := sandbox.NewLayerSystem(sandbox.RealSystem{}, t.TempDir())
		_, err := RunOpsWith(context.Background(), d, layer, RunOptions{Fetch: fetch, MaxBody: 1024, Ready: func() error { return ready }})
		if !errors.Is(err, ready) || (ready == nil && err != nil) {
			t.Errorf("Ready %v: RunOpsWith() = %v", ready, err)
		}
		if want := map[error]int32{refused: 0, nil: 1}[ready]; hits.Load() != want {
			t.Errorf("Ready %v: the server had %d requests, want %d", ready, hits.Load(), want)
		}
	}
}
