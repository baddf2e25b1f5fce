package egress

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"sync"
	"testing"
)

// credServer is a TLS (or, plain, HTTP) server that records the headers
// of what reaches it and echoes the Authorization header back in a header.
func credServer(t *testing.T, plain bool) (*httptest.Server, func() []http.Header) {
	var mu sync.Mutex
	var seen []http.Header
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.Header.Clone())
		mu.Unlock()
		w.Header().Set("X-Echo", r.Header.Get("Authorization"))
		io.WriteString(w, "answered")
	})
	srv := httptest.NewUnstartedServer(h)
	if plain {
		srv.Start()
	} else {
		srv.StartTLS()
	}
	t.Cleanup(srv.Close)
	return srv, func() []http.Header {
		mu.Lock()
		defer mu.Unlock()
		return append([]http.Header(nil), seen...)
	}
}

// TestProxyPutsCredentials: the proxy puts a credential in a request to
// its host, and to no other: over a CONNECT tunnel it terminates with a
// certificate of the run's CA (the client trusts that CA only), and over
// plain HTTP; in a bearer header, inside a Basic credential, in another
// header. A placeholder of another host's goes out as it is; a value the
// server echoes back in a header comes back as the placeholder; a request
// for another host on the tunnel is refused (421); a tunnel to a host
// without credentials is not terminated.
func TestProxyPutsCredentials(t *testing.T) {
	srv, seen := credServer(t, false)
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	const real, other = "real-token-1", "other-token-2"
	creds := []Credential{
		{Placeholder: "act-placeholder-1", Value: real, Host: "example.com"},
		{Placeholder: "act-placeholder-2", Value: other, Host: "elsewhere.test"},
	}
	ca, err := NewCA([]string{"example.com"})
	if err != nil {
		t.Fatal(err)
	}
	upstream := x509.NewCertPool()
	upstream.AddCert(srv.Certificate())
	p := &Proxy{
		Policy: Policy{
			HostAllowed: func(h string) bool { return h == "example.com" || h == "127.0.0.1" },
			Named:       loopback,
			LookupNetIP: func(ctx context.Context, host string) ([]netip.Addr, error) {
				return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil
			},
		},
		Credentials: creds, CA: ca, UpstreamRoots: upstream,
	}
	addr, events, _ := testProxy(t, p)
	trust := x509.NewCertPool()
	if !trust.AppendCertsFromPEM(ca.PEM) {
		t.Fatal("the CA's PEM does not parse")
	}
	c := &http.Client{Timeout: hang, Transport: &http.Transport{
		Proxy:           http.ProxyURL(&url.URL{Scheme: "http", Host: addr}),
		TLSClientConfig: &tls.Config{RootCAs: trust},
	}}
	base := "https://example.com:" + port + "/"
	do := func(h map[string]string) *http.Response {
		t.Helper()
		req, _ := http.NewRequest("GET", base, nil)
		for k, v := range h {
			req.Header.Set(k, v)
		}
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp
	}
	b64 := func(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }
	resp := do(map[string]string{"Authorization": "Bearer act-placeholder-1"})
	if got := resp.Header.Get("X-Echo"); got != "Bearer act-placeholder-1" {
		t.Errorf("the echoed header came back as %q, want the placeholder", got)
	}
	do(map[string]string{"Authorization": "Basic " + b64("bob:act-placeholder-1")})
	do(map[string]string{"Private-Token": "act-placeholder-1", "X-Other": "act-placeholder-2"})
	got := seen()
	if len(got) != 3 {
		t.Fatalf("%d requests reached the server, want 3", len(got))
	}
	if a := got[0].Get("Authorization"); a != "Bearer "+real {
		t.Errorf("bearer: the server got %q", a)
	}
	if a := got[1].Get("Authorization"); a != "Basic "+b64("bob:"+real) {
		t.Errorf("basic: the server got %q", a)
	}
	if a, o := got[2].Get("Private-Token"), got[2].Get("X-Other"); a != real || o != "act-placeholder-2" {
		t.Errorf("other headers: the server got %q and %q, want the value and the other host's placeholder", a, o)
	}
	if ev := events(); !containsEvent(ev, func(e Event) bool { return e.Credential && e.Method == "GET" }) {
		t.Errorf("no event says a credential was put in: %+v", ev)
	}

	// A request for another host on the tunnel: refused, nothing sent.
	req, _ := http.NewRequest("GET", base, nil)
	req.Host = "elsewhere.test"
	req.Header.Set("Authorization", "Bearer act-placeholder-1")
	if resp, err := c.Do(req); err == nil {
		resp.Body.Close()
		if resp.StatusCode != http.StatusMisdirectedRequest {
			t.Errorf("a request for another host on the tunnel: %d, want 421", resp.StatusCode)
		}
	}
	if n := len(seen()); n != 3 {
		t.Errorf("%d requests reached the server, want still 3", n)
	}

	// 127.0.0.1 has no credentials: its tunnel is not terminated, and a
	// client that trusts only the run's CA does not get through.
	if resp, err := c.Get("https://127.0.0.1:" + port + "/"); err == nil {
		resp.Body.Close()
		t.Error("a tunnel to a host without credentials was terminated by the proxy")
	}

	// A POST whose client waits for 100 Continue longer than the hang
	// guard: the proxy answers it and the body goes through, or the
	// request ends in the client's timeout.
	ec := &http.Client{Timeout: hang, Transport: &http.Transport{
		Proxy:                 http.ProxyURL(&url.URL{Scheme: "http", Host: addr}),
		TLSClientConfig:       &tls.Config{RootCAs: trust},
		ExpectContinueTimeout: 2 * hang,
	}}
	req, _ = http.NewRequest("POST", base, strings.NewReader("a body"))
	req.Header.Set("Expect", "100-continue")
	req.Header.Set("Authorization", "Bearer act-placeholder-1")
	if resp, err := ec.Do(req); err != nil {
		t.Fatalf("a POST with Expect: 100-continue: %v (the proxy never answered it?)", err)
	} else {
		resp.Body.Close()
	}
	if g := seen(); len(g) != 4 || g[3].Get("Authorization") != "Bearer "+real {
		t.Errorf("after a POST with Expect, the server saw %d requests", len(g))
	}

	// A tunnel to the credential host that does not speak TLS is a plain
	// tunnel: nothing put in.
	psrv0, pseen0 := credServer(t, true)
	_, pport0, _ := net.SplitHostPort(psrv0.Listener.Addr().String())
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "CONNECT example.com:%s HTTP/1.1\r\nHost: example.com:%s\r\n\r\n", pport0, pport0)
	br := bufio.NewReader(conn)
	if resp, err := http.ReadResponse(br, nil); err != nil || resp.StatusCode != 200 {
		t.Fatalf("CONNECT: %v %v", resp, err)
	}
	fmt.Fprintf(conn, "GET / HTTP/1.1\r\nHost: example.com\r\nAuthorization: Bearer act-placeholder-1\r\nConnection: close\r\n\r\n")
	if resp, err := http.ReadResponse(br, nil); err != nil || resp.StatusCode != 200 {
		t.Fatalf("through the plain tunnel: %v %v", resp, err)
	}
	if g := pseen0(); len(g) != 1 || g[0].Get("Authorization") != "Bearer act-placeholder-1" {
		t.Errorf("a plain tunnel to the credential host: the server got %v, want the placeholder", g)
	}

	// Plain HTTP: put in as it is forwarded.
	psrv, pseen := credServer(t, true)
	_, pport, _ := net.SplitHostPort(psrv.Listener.Addr().String())
	req, _ = http.NewRequest("GET", "http://example.com:"+pport+"/", nil)
	req.Header.Set("Authorization", "Bearer act-placeholder-1")
	resp, err = c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if g := pseen(); len(g) != 1 || g[0].Get("Authorization") != "Bearer "+real {
		t.Errorf("plain HTTP: the server got %v", g)
	}
}

func containsEvent(evs []Event, f func(Event) bool) bool {
	for _, e := range evs {
		if f(e) {
			return true
		}
	}
	return false
}

// TestCANameConstraints: the run's CA may vouch only for the hosts it was
// made for: a certificate it signed for another host does not verify.
func TestCANameConstraints(t *testing.T) {
	ca, err := NewCA([]string{"registry.example", "10.1.2.3"})
	if err != nil {
		t.Fatal(err)
	}
	block, _ := pem.Decode(ca.PEM)
	root, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AddCert(root)
	for host, ok := range map[string]bool{"registry.example": true, "10.1.2.3": true, "evil.example": false, "registry.example.evil": false, "10.1.2.4": false} {
		leaf, err := ca.leaf(host)
		if err != nil {
			t.Fatal(err)
		}
		cert, _ := x509.ParseCertificate(leaf.Certificate[0])
		_, err = cert.Verify(x509.VerifyOptions{Roots: roots, DNSName: strings.Trim(host, "[]")})
		if (err == nil) != ok {
			t.Errorf("a certificate for %s verifies: %v (%v), want %v", host, err == nil, err, ok)
		}
	}
	// No host at all: it may sign for none.
	none, err := NewCA(nil)
	if err != nil {
		t.Fatal(err)
	}
	block, _ = pem.Decode(none.PEM)
	nroot, _ := x509.ParseCertificate(block.Bytes)
	npool := x509.NewCertPool()
	npool.AddCert(nroot)
	leaf, _ := none.leaf("anything.example")
	cert, _ := x509.ParseCertificate(leaf.Certificate[0])
	if _, err := cert.Verify(x509.VerifyOptions{Roots: npool, DNSName: "anything.example"}); err == nil {
		t.Error("a CA made for no host vouches for anything.example")
	}
}
