package egress

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// hang is how long a test waits for what must happen before it fails as
// hung: a liveness bound, not a speed one.
const hang = 2 * time.Minute

// testProxy serves p on a loopback port until the test ends; it returns the
// proxy's address, the events it logged, and a stop that cancels Serve and
// returns its error.
func testProxy(t *testing.T, p *Proxy) (addr string, events func() []Event, stop func() error) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var evs []Event
	p.Log = func(e Event) {
		mu.Lock()
		defer mu.Unlock()
		evs = append(evs, e)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Serve(ctx, ln) }()
	var once sync.Once
	var serveErr error
	stop = func() error {
		once.Do(func() {
			cancel()
			select {
			case serveErr = <-done:
			case <-time.After(hang):
				serveErr = fmt.Errorf("hung: Serve did not return within %v of the cancel", hang)
			}
		})
		return serveErr
	}
	t.Cleanup(func() { stop() })
	events = func() []Event {
		mu.Lock()
		defer mu.Unlock()
		return append([]Event(nil), evs...)
	}
	return ln.Addr().String(), events, stop
}

// client is Go's own HTTP client set to use the proxy at addr.
func client(addr string, roots *http.Transport) *http.Client {
	tr := &http.Transport{Proxy: http.ProxyURL(&url.URL{Scheme: "http", Host: addr})}
	if roots != nil {
		tr.TLSClientConfig = roots.TLSClientConfig.Clone()
	}
	return &http.Client{Transport: tr, Timeout: hang}
}

// raw sends request (CRLF line ends added) to the proxy on one connection
// and reads the response.
func raw(t *testing.T, addr, request string) (*http.Response, string) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(hang))
	if _, err := io.WriteString(c, strings.ReplaceAll(request, "\n", "\r\n")); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("%q: %v", request, err)
	}
	body, _ := io.ReadAll(resp.Body)
	return resp, string(body)
}

// loopback names 127.0.0.1, so that the httptest servers are reachable.
var loopback = []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}

// TestProxyForwardsGet: an absolute-form GET reaches the server at the
// URL's host (not a Host header), without the proxy's own headers; Go's
// client, set to the proxy, gets the answer.
func TestProxyForwardsGet(t *testing.T) {
	var got atomic.Value
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got.Store(r.Clone(context.Background()))
		fmt.Fprintf(w, "%s %s", r.Method, r.URL)
	}))
	defer srv.Close()
	addr, events, _ := testProxy(t, &Proxy{Policy: Policy{HostAllowed: func(h string) bool { return h == "127.0.0.1" }, Named: loopback}})

	req, _ := http.NewRequest("GET", srv.URL+"/a/b%2Fc?q=1&r=2", nil)
	req.Header.Set("Proxy-Authorization", "Basic c2VjcmV0")
	resp, err := client(addr, nil).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || string(body) != "GET /a/b%2Fc?q=1&r=2" {
		t.Errorf("through the proxy: %d %q, want 200 %q", resp.StatusCode, body, "GET /a/b%2Fc?q=1&r=2")
	}
	r := got.Load().(*http.Request)
	if r.Header.Get("Proxy-Authorization") != "" || r.Host != srv.Listener.Addr().String() {
		t.Errorf("the server saw Host %q, Proxy-Authorization %q", r.Host, r.Header.Get("Proxy-Authorization"))
	}
	// A Host header naming another host changes nothing: the URL's host is
	// where the request goes and what is checked.
	resp, body2 := raw(t, addr, "GET "+srv.URL+"/x HTTP/1.1\nHost: 169.254.169.254\nConnection: close\n\n")
	if resp.StatusCode != 200 || body2 != "GET /x" {
		t.Errorf("with a foreign Host header: %d %q", resp.StatusCode, body2)
	}
	ev := events()
	if len(ev) != 2 || !ev[0].Allowed || ev[0].Target != srv.Listener.Addr().String() || ev[0].Addr != srv.Listener.Addr().String() || ev[0].Method != "GET" {
		t.Errorf("events = %+v, want two allowed GETs of %s", ev, srv.Listener.Addr())
	}
}

// TestProxyTunnelsConnect: Go's client reaches an https server through a
// CONNECT tunnel when the server's host is listed and its range named.
func TestProxyTunnelsConnect(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "over tls") }))
	defer srv.Close()
	addr, events, _ := testProxy(t, &Proxy{Policy: Policy{HostAllowed: func(h string) bool { return h == "127.0.0.1" }, Named: loopback}})
	c := client(addr, srv.Client().Transport.(*http.Transport))
	for range 2 { // the second request reuses the tunnel
		resp, err := c.Get(srv.URL + "/")
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || string(body) != "over tls" || resp.TLS == nil {
			t.Errorf("through the tunnel: %d %q (TLS %v)", resp.StatusCode, body, resp.TLS != nil)
		}
	}
	ev := events()
	if len(ev) != 1 || ev[0].Method != "CONNECT" || !ev[0].Allowed || ev[0].Addr != srv.Listener.Addr().String() {
		t.Errorf("events = %+v, want one allowed CONNECT", ev)
	}
}

// TestProxyRefuses: loopback, link-local, private and metadata addresses,
// by name and by literal, and hosts not listed are refused with 403 and a
// one-line reason, over CONNECT and plain HTTP alike, and nothing reaches
// the server.
func TestProxyRefuses(t *testing.T) {
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hits.Add(1) }))
	defer srv.Close()
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	names := map[string][]netip.Addr{
		"metadata.test": {netip.MustParseAddr("169.254.169.254")},
		"intranet.test": {netip.MustParseAddr("93.184.215.14"), netip.MustParseAddr("10.0.0.5")},
		"v6.test":       {netip.MustParseAddr("fe80::1")},
	}
	p := &Proxy{Policy: Policy{
		HostAllowed: func(h string) bool { return h != "example.com" },
		Named:       []netip.Prefix{netip.MustParsePrefix("192.0.2.0/24")},
		LookupNetIP: func(ctx context.Context, host string) ([]netip.Addr, error) {
			if a, ok := names[host]; ok {
				return a, nil
			}
			return net.DefaultResolver.LookupNetIP(ctx, "ip", host)
		},
	}}
	addr, events, _ := testProxy(t, p)
	cases := map[string]string{
		"example.com":        "act: host example.com is not in the policy's network.allowed_hosts",
		"127.0.0.1":          "act: 127.0.0.1 is a loopback address (127.0.0.0/8) the policy does not name",
		"localhost":          "act: localhost resolves to ",
		"0x7f.1":             "act: 0x7f.1 is 127.0.0.1, a loopback address",
		"[::ffff:127.0.0.1]": "act: ::ffff:127.0.0.1 is 127.0.0.1, a loopback address",
		"[::1]":              "act: ::1 is a loopback address",
		"169.254.169.254":    "act: 169.254.169.254 is a cloud metadata address",
		"metadata.test":      "act: metadata.test resolves to 169.254.169.254, a cloud metadata address (169.254.169.254/32) the policy does not name",
		"intranet.test":      "act: intranet.test resolves to 10.0.0.5, a private address (10.0.0.0/8) the policy does not name",
		"10.1.2.3":           "act: 10.1.2.3 is a private address",
		"v6.test":            "act: v6.test resolves to fe80::1, a link-local address (fe80::/10)",
	}
	for host, want := range cases {
		target := host + ":" + port
		for _, req := range []string{
			"CONNECT " + target + " HTTP/1.1\nHost: " + target + "\n\n",
			"GET http://" + target + "/ HTTP/1.1\nHost: " + target + "\n\n",
		} {
			resp, body := raw(t, addr, req)
			if resp.StatusCode != http.StatusForbidden || !strings.HasPrefix(body, want) || strings.Count(body, "\n") != 1 {
				t.Errorf("%s: %d %q, want 403 %q…", strings.SplitN(req, "\n", 2)[0], resp.StatusCode, body, want)
			}
		}
	}
	// Go's client sees the refusal too.
	resp, err := client(addr, nil).Get(srv.URL)
	if err != nil || resp.StatusCode != http.StatusForbidden {
		t.Errorf("Go client: %v, %v; want 403", resp, err)
	}
	if _, err := client(addr, nil).Get("https://" + srv.Listener.Addr().String()); err == nil || !strings.Contains(err.Error(), "Forbidden") {
		t.Errorf("Go client over CONNECT: %v, want Forbidden", err)
	}
	if n := hits.Load(); n != 0 {
		t.Errorf("the server had %d requests", n)
	}
	for _, e := range events() {
		if e.Allowed || e.Addr != "" || !strings.Contains(e.Err, "the policy") || strings.HasPrefix(e.Err, "act: ") {
			t.Errorf("event %+v, want a refusal", e)
		}
	}
}

// TestProxyBadRequests: what is neither CONNECT host:port nor an absolute
// http:// URL is answered 400; headers past the bound 431.
func TestProxyBadRequests(t *testing.T) {
	addr, _, _ := testProxy(t, &Proxy{Policy: Policy{HostAllowed: func(string) bool { return true }}})
	for _, req := range []string{
		"GET / HTTP/1.1\nHost: example.org\n\n",
		"GET https://example.org/ HTTP/1.1\nHost: example.org\n\n",
		"GET http://user@example.org/ HTTP/1.1\nHost: example.org\n\n",
		"CONNECT example.org HTTP/1.1\nHost: example.org\n\n",
		"CONNECT 10.0.0.0/8:443 HTTP/1.1\nHost: x\n\n",
		"CONNECT /path HTTP/1.1\nHost: x\n\n",
		"CONNECT example.org:0 HTTP/1.1\nHost: x\n\n",
		"GET http://example.org:99999/ HTTP/1.1\nHost: example.org\n\n",
	} {
		if resp, body := raw(t, addr, req); resp.StatusCode != http.StatusBadRequest || !strings.HasPrefix(body, "act: ") {
			t.Errorf("%q: %d %q, want 400", req, resp.StatusCode, body)
		}
	}
	big := "GET http://example.org/ HTTP/1.1\nHost: example.org\nX: " + strings.Repeat("a", 2*maxHeaderBytes) + "\n\n"
	if resp, _ := raw(t, addr, big); resp.StatusCode != http.StatusRequestHeaderFieldsTooLarge {
		t.Errorf("%d KiB of headers: %d, want 431", len(big)>>10, resp.StatusCode)
	}
}

// echoServer accepts TCP connections on loopback and echoes them.
func echoServer(t *testing.T) net.Listener {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { io.Copy(c, c); c.Close() }()
		}
	}()
	return ln
}

// tunnel opens a CONNECT tunnel to target through the proxy.
func tunnel(t *testing.T, addr, target string) (net.Conn, *bufio.Reader) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\nhello", target, target)
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("CONNECT: %v %v", resp, err)
	}
	got := make([]byte, 5)
	c.SetReadDeadline(time.Now().Add(hang))
	if _, err := io.ReadFull(br, got); err != nil || string(got) != "hello" {
		t.Fatalf("the tunnel echoed %q, %v (bytes sent behind the request must go through)", got, err)
	}
	return c, br
}

// TestProxyStopsOnCancel: Serve returns once its context is cancelled,
// closing tunnels and kept-alive connections.
func TestProxyStopsOnCancel(t *testing.T) {
	echo := echoServer(t)
	addr, _, stop := testProxy(t, &Proxy{Policy: Policy{HostAllowed: func(h string) bool { return h == "127.0.0.1" }, Named: loopback}})
	c, br := tunnel(t, addr, echo.Addr().String())
	idle, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer idle.Close()
	if err := stop(); err != nil {
		t.Fatalf("Serve() = %v, want nil after the cancel", err)
	}
	for name, r := range map[string]io.Reader{"the tunnel": br, "an idle connection": idle} {
		c.SetReadDeadline(time.Now().Add(hang))
		idle.SetReadDeadline(time.Now().Add(hang))
		// Closed either way: EOF, or a reset for a connection still in
		// the listener's backlog when it closed (not yet accepted). A
		// timeout would mean it was left open.
		if n, err := io.Copy(io.Discard, r); err != nil && !errors.Is(err, syscall.ECONNRESET) {
			t.Errorf("%s after the cancel: read %d bytes, %v; want EOF or a reset", name, n, err)
		}
	}
	if _, err := net.Dial("tcp", addr); err == nil {
		t.Error("the listener still accepts after Serve returned")
	}
}

// TestProxyListenerClosed: Serve returns nil when its listener is closed.
func TestProxyListenerClosed(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- (&Proxy{}).Serve(context.Background(), ln) }()
	time.Sleep(50 * time.Millisecond)
	ln.Close()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Serve() = %v, want nil", err)
		}
	case <-time.After(hang):
		t.Fatalf("hung: Serve did not return in %v after its listener was closed", hang)
	}
}

// TestProxyIdleTunnel: a tunnel where no byte moves either way for
// IdleTimeout is closed; one where bytes keep moving is not. Nothing
// else closes the quiet one (the echo server keeps it open), and a byte
// every tenth of IdleTimeout keeps the busy one moving on a loaded
// machine too.
func TestProxyIdleTunnel(t *testing.T) {
	echo := echoServer(t)
	const idle = time.Second
	addr, _, _ := testProxy(t, &Proxy{IdleTimeout: idle, Policy: Policy{HostAllowed: func(h string) bool { return h == "127.0.0.1" }, Named: loopback}})

	busy, busyR := tunnel(t, addr, echo.Addr().String())
	for range 25 { // 25 × idle/10: longer than idle, never idle
		time.Sleep(idle / 10)
		busy.SetDeadline(time.Now().Add(hang))
		if _, err := io.WriteString(busy, "x"); err != nil {
			t.Fatal(err)
		}
		if b, err := busyR.ReadByte(); err != nil || b != 'x' {
			t.Fatalf("a busy tunnel: %q, %v", b, err)
		}
	}

	_, quietR := tunnel(t, addr, echo.Addr().String())
	if _, err := io.Copy(io.Discard, quietR); err != nil {
		t.Errorf("an idle tunnel: %v, want EOF (a timeout: it was never closed)", err)
	}
}

// TestProxyIdleUpstream: a server that sends headers and then nothing is
// cut off after IdleTimeout, so a forwarded request cannot hang forever.
func TestProxyIdleUpstream(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", "100")
		w.WriteHeader(200)
		io.WriteString(w, "part")
		w.(http.Flusher).Flush()
		<-release
	}))
	defer srv.Close()
	defer close(release)
	const idle = 300 * time.Millisecond
	addr, _, _ := testProxy(t, &Proxy{IdleTimeout: idle, Policy: Policy{HostAllowed: func(h string) bool { return h == "127.0.0.1" }, Named: loopback}})
	resp, err := client(addr, nil).Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	// The proxy's cut, not the client's own timeout (hang).
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		t.Fatalf("hung: the stalled response was not cut off by the proxy: %v", err)
	}
	if err == nil || string(body) != "part" {
		t.Errorf("body %q, %v; want %q and an error", body, err, "part")
	}
}
