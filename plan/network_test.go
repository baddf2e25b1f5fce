package plan

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
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

	fetch := HTTPFetcher{Allowed: func(h string) bool { return h == "127.0.0.1" }, Named: loopbackNamed}
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

// loopbackNamed names 127.0.0.1, where the tests' servers listen: without
// it the fetcher refuses them as loopback.
var loopbackNamed = []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}

// TestNetworkRequestChecksAddresses: a host on the allow-list is refused
// when it resolves to (or is) an address in a range the policy does not
// name — loopback by the real resolver ("localhost"), a private address
// among public ones, cloud metadata — and the server sees nothing.
func TestNetworkRequestChecksAddresses(t *testing.T) {
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hits.Add(1) }))
	defer srv.Close()
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	lookup := func(ctx context.Context, host string) ([]netip.Addr, error) {
		switch host {
		case "mirror.test":
			return []netip.Addr{netip.MustParseAddr("93.184.215.14"), netip.MustParseAddr("10.0.0.5")}, nil
		case "metadata.test":
			return []netip.Addr{netip.MustParseAddr("169.254.169.254")}, nil
		}
		return net.DefaultResolver.LookupNetIP(ctx, "ip", host)
	}
	for _, tt := range []struct {
		host  string
		named []netip.Prefix
		want  string
	}{
		{host: "localhost", want: "localhost resolves to "},
		{host: "localhost", named: []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}, want: "a loopback address"},
		{host: "127.0.0.1", want: "127.0.0.1 is a loopback address (127.0.0.0/8) the policy does not name"},
		{host: "mirror.test", want: "mirror.test resolves to 10.0.0.5, a private address (10.0.0.0/8) the policy does not name"},
		{host: "metadata.test", want: "metadata.test resolves to 169.254.169.254, a cloud metadata address"},
	} {
		fetch := HTTPFetcher{Allowed: func(string) bool { return true }, Named: tt.named, LookupNetIP: lookup}
		d := &descriptors.Descriptor{ActionType: descriptors.NetworkRequest}
		d.Op = descriptors.NetworkRequestOp{Method: "GET", URL: "http://" + net.JoinHostPort(tt.host, port) + "/x"}
		layer := sandbox.NewLayerSystem(sandbox.RealSystem{}, t.TempDir())
		_, err := RunOpsWith(context.Background(), d, layer, RunOptions{Fetch: fetch, MaxBody: 1024})
		var oe *OpError
		if !errors.As(err, &oe) || oe.Rule != "op.network-host-not-allowed" || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("GET %s (named %v): %v, want op.network-host-not-allowed saying %q", tt.host, tt.named, err, tt.want)
		}
	}
	if n := hits.Load(); n != 0 {
		t.Errorf("the server had %d requests", n)
	}
	// Named, the same loopback name goes through.
	fetch := HTTPFetcher{Allowed: func(h string) bool { return h == "localhost" }, Named: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8"), netip.MustParsePrefix("::1/128")}}
	if resp, err := fetch.Fetch(context.Background(), "GET", "http://localhost:"+port+"/", nil, 10); err != nil || resp.Status != 200 {
		t.Errorf("localhost with loopback named: %+v, %v", resp, err)
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
	fetch := HTTPFetcher{Allowed: func(h string) bool { return h == "127.0.0.1" }, Named: loopbackNamed}
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
