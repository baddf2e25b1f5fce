package egress

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/http/httputil"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// A Proxy is an HTTP forward proxy whose every connection out goes through
// its Policy's DialContext. It takes CONNECT host:port (a tunnel, for
// https) and absolute-form plain-HTTP requests (GET http://host/path); any
// other request is answered 400, a refused destination 403.
type Proxy struct {
	Policy Policy
	// Log, if set, is called once for each request: allowed, refused or
	// failed. It may be called from several goroutines at once.
	Log func(Event)
	// IdleTimeout closes a tunnel, an upstream connection or a client's
	// kept-alive connection after this long without a byte either way.
	// 0: 2 minutes.
	IdleTimeout time.Duration
	// MaxConns bounds the client connections served at once; more wait
	// to be accepted. 0: 256.
	MaxConns int
	// Credentials are the secrets the proxy puts in requests, each in
	// requests to its own host only (docs/sandbox.md, "Credentials").
	// Over plain HTTP it puts them in as it forwards; an https tunnel to
	// a host of theirs it terminates with a certificate of CA, which the
	// sandbox trusts, and relays request by request. Without CA, https
	// tunnels go through untouched and carry the placeholders.
	Credentials []Credential
	CA          *CA
	// UpstreamRoots verify the hosts whose tunnels the proxy terminates
	// (nil: the system's roots).
	UpstreamRoots *x509.CertPool
}

// An Event is one request the proxy decided.
type Event struct {
	// Method is CONNECT or the forwarded request's method.
	Method string
	// Target is host:port as the client asked for it.
	Target string
	// Addr is the address connected to ("" when none was).
	Addr string
	// Allowed is false when the policy refused the destination.
	Allowed bool
	// Err is why the request was refused or failed ("" when it went
	// through).
	Err string
	// Credential: the proxy put credentials in this request (the
	// method is the request's, inside a tunnel it terminated).
	Credential bool
}

// Bounds on what a client may make the proxy hold.
const (
	maxHeaderBytes    = 64 << 10
	readHeaderTimeout = 30 * time.Second
)

// Serve answers the proxy's clients on ln until ctx is done or ln is
// closed; it returns nil then, and the error of ln.Accept otherwise. Before
// it returns it closes ln and every connection it still holds, and waits
// for its goroutines to end.
func (p *Proxy) Serve(ctx context.Context, ln net.Listener) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	idle := p.IdleTimeout
	if idle <= 0 {
		idle = 2 * time.Minute
	}
	maxConns := p.MaxConns
	if maxConns <= 0 {
		maxConns = 256
	}
	s := &state{p: p, idle: idle, tunnels: map[net.Conn]struct{}{}}
	s.transport = &http.Transport{
		Proxy: nil,
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			c, err := p.Policy.DialContext(ctx, network, addr)
			if err != nil {
				return nil, err
			}
			return &idleConn{Conn: c, idle: idle}, nil
		},
		MaxIdleConnsPerHost:   4,
		IdleConnTimeout:       idle,
		ResponseHeaderTimeout: idle,
		DisableCompression:    true, // pass the body through as the server sent it
	}
	defer s.transport.CloseIdleConnections()
	s.forward = &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			// The request goes where it was checked: to the URL rebuilt from
			// its parsed parts, never to a Host header the client sent.
			in := r.In.URL
			r.Out.URL = &url.URL{Scheme: "http", Host: in.Host, Path: in.Path, RawPath: in.RawPath, RawQuery: in.RawQuery}
			r.Out.Host = in.Host
			if putCredentials(r.Out.Header, p.credentialsFor(r.In.URL.Hostname())) {
				s.logEvent(Event{Method: r.In.Method, Target: r.In.URL.Host, Allowed: true, Credential: true})
			}
		},
		Transport:     s.transport,
		FlushInterval: -1,
		ErrorLog:      log.New(io.Discard, "", 0),
		ErrorHandler:  s.forwardError,
		ModifyResponse: func(resp *http.Response) error {
			s.log(resp.Request, true, "")
			return nil
		},
	}
	srv := &http.Server{
		Handler:           s,
		ReadHeaderTimeout: readHeaderTimeout,
		IdleTimeout:       idle,
		MaxHeaderBytes:    maxHeaderBytes,
		BaseContext:       func(net.Listener) context.Context { return ctx },
		ErrorLog:          log.New(io.Discard, "", 0),
	}
	stopped := make(chan struct{})
	go func() {
		<-ctx.Done()
		srv.Close()
		s.closeTunnels()
		close(stopped)
	}()
	err := srv.Serve(&limitListener{Listener: ln, sem: make(chan struct{}, maxConns), done: make(chan struct{})})
	cancel()
	<-stopped
	s.wg.Wait()
	if errors.Is(err, http.ErrServerClosed) || errors.Is(err, net.ErrClosed) {
		return nil
	}
	return err
}

// state is one Serve's.
type state struct {
	p         *Proxy
	idle      time.Duration
	transport *http.Transport
	forward   *httputil.ReverseProxy

	wg      sync.WaitGroup
	mu      sync.Mutex
	closed  bool
	tunnels map[net.Conn]struct{}
}

// ServeHTTP dispatches a request: CONNECT, an absolute http:// URL, or 400.
func (s *state) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !s.enter() {
		refuse(w, http.StatusServiceUnavailable, "the proxy is closing")
		return
	}
	defer s.wg.Done()
	if r.Method == http.MethodConnect {
		s.connect(w, r)
		return
	}
	if r.URL.Scheme != "http" || r.URL.Host == "" || r.URL.User != nil {
		refuse(w, http.StatusBadRequest, fmt.Sprintf("the proxy takes CONNECT host:port or an absolute http:// URL, not %s %s", r.Method, r.RequestURI))
		return
	}
	if _, _, err := hostPort(r.URL.Host, "80"); err != nil {
		refuse(w, http.StatusBadRequest, err.Error())
		return
	}
	// An upgraded connection (a plain ws:// WebSocket) would leave the
	// proxy's timeouts: the request goes out without the upgrade.
	r.Header.Del("Upgrade")
	var addr atomic.Value
	trace := &httptrace.ClientTrace{GotConn: func(i httptrace.GotConnInfo) { addr.Store(i.Conn.RemoteAddr().String()) }}
	ctx := httptrace.WithClientTrace(r.Context(), trace)
	ctx = context.WithValue(ctx, addrKey{}, &addr)
	s.forward.ServeHTTP(w, r.WithContext(ctx))
}

// addrKey carries the connected address from the transport to the log.
type addrKey struct{}

// connect tunnels a CONNECT: dial through the policy, answer 200, then copy
// bytes both ways until either side closes or stays idle.
func (s *state) connect(w http.ResponseWriter, r *http.Request) {
	target := r.RequestURI
	if _, _, err := hostPort(target, ""); err != nil {
		refuse(w, http.StatusBadRequest, "CONNECT "+err.Error())
		s.logEvent(Event{Method: r.Method, Target: target, Allowed: true, Err: err.Error()})
		return
	}
	if host, _, _ := hostPort(target, ""); s.p.CA != nil {
		if creds := s.p.credentialsFor(host); len(creds) > 0 {
			s.intercept(w, r, strings.ToLower(strings.Trim(host, "[]")), target, creds)
			return
		}
	}
	up, err := s.p.Policy.DialContext(r.Context(), "tcp", target)
	if err != nil {
		status, reason := failure(target, err)
		refuse(w, status, reason)
		s.logEvent(Event{Method: r.Method, Target: target, Allowed: status != http.StatusForbidden, Err: reason})
		return
	}
	client, in, ok := s.establish(w, r, target, up)
	if !ok {
		return
	}
	defer s.untrack(client, up)
	pipe(in, up, s.idle)
}

// establish answers the CONNECT r to target, whose upstream connection up
// is open: it takes the client's connection over, logs the tunnel, tracks
// both connections (the caller untracks them when ok) and answers 200. in
// is what the client sends from then on, with the bytes it sent behind
// the request (a TLS ClientHello) that are already in the server's buffer
// first. Not ok, both connections are closed or were never taken.
func (s *state) establish(w http.ResponseWriter, r *http.Request, target string, up net.Conn) (client, in net.Conn, ok bool) {
	client, brw, err := http.NewResponseController(w).Hijack()
	if err != nil {
		up.Close()
		refuse(w, http.StatusInternalServerError, err.Error())
		return nil, nil, false
	}
	s.logEvent(Event{Method: r.Method, Target: target, Addr: up.RemoteAddr().String(), Allowed: true})
	if !s.track(client, up) {
		client.Close()
		up.Close()
		return nil, nil, false
	}
	client.SetDeadline(time.Time{})
	if _, err := io.WriteString(client, "HTTP/1.1 200 Connection established\r\n\r\n"); err != nil {
		s.untrack(client, up)
		return nil, nil, false
	}
	in = client
	if n := brw.Reader.Buffered(); n > 0 {
		b, _ := brw.Reader.Peek(n)
		in = &prefixConn{Conn: client, prefix: append([]byte(nil), b...)}
	}
	return client, in, true
}

// enter counts a request in, false when Serve is already closing.
func (s *state) enter() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false
	}
	s.wg.Add(1)
	return true
}

// track registers a tunnel's connections for Serve to close; false when
// Serve is already closing.
func (s *state) track(cs ...net.Conn) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false
	}
	for _, c := range cs {
		s.tunnels[c] = struct{}{}
	}
	return true
}

// untrack closes a tunnel's connections and forgets them.
func (s *state) untrack(cs ...net.Conn) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range cs {
		c.Close()
		delete(s.tunnels, c)
	}
}

// closeTunnels closes every tunnel, and any opened from now on.
func (s *state) closeTunnels() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	for c := range s.tunnels {
		c.Close()
	}
}

// forwardError answers a forwarded request that did not go through.
func (s *state) forwardError(w http.ResponseWriter, r *http.Request, err error) {
	status, reason := failure(r.URL.Host, err)
	refuse(w, status, reason)
	s.log(r, status != http.StatusForbidden, reason)
}

// log records a forwarded request.
func (s *state) log(r *http.Request, allowed bool, reason string) {
	e := Event{Method: r.Method, Target: r.URL.Host, Allowed: allowed, Err: reason}
	if _, _, err := net.SplitHostPort(e.Target); err != nil {
		e.Target = net.JoinHostPort(strings.Trim(e.Target, "[]"), "80")
	}
	if v, ok := r.Context().Value(addrKey{}).(*atomic.Value); ok {
		e.Addr, _ = v.Load().(string)
	}
	s.logEvent(e)
}

func (s *state) logEvent(e Event) {
	if s.p.Log != nil {
		s.p.Log(e)
	}
}

// failure is the status and the reason for a request to target that
// failed with err: 403 for a refusal, 504 for a timeout, else 502.
func failure(target string, err error) (int, string) {
	var re *RefusedError
	var ne net.Error
	switch {
	case errors.As(err, &re):
		return http.StatusForbidden, re.Error()
	case errors.As(err, &ne) && ne.Timeout(), errors.Is(err, context.DeadlineExceeded):
		return http.StatusGatewayTimeout, fmt.Sprintf("%s did not answer in time", target)
	}
	return http.StatusBadGateway, fmt.Sprintf("cannot reach %s: %v", target, err)
}

// refuse answers status with a one-line plain-text reason, "act: " first.
func refuse(w http.ResponseWriter, status int, reason string) {
	h := w.Header()
	h.Set("Content-Type", "text/plain; charset=utf-8")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Connection", "close")
	w.WriteHeader(status)
	io.WriteString(w, "act: "+strings.ReplaceAll(reason, "\n", " ")+"\n")
}

// hostPort splits a CONNECT target or a URL's host into host and port,
// with defaultPort when there is none ("" requires one).
func hostPort(hostport, defaultPort string) (host, port string, err error) {
	host, port, err = net.SplitHostPort(hostport)
	if err != nil && defaultPort != "" {
		host, port, err = strings.Trim(hostport, "[]"), defaultPort, nil
	}
	if err != nil {
		return "", "", fmt.Errorf("%q is not host:port", hostport)
	}
	if !validHost(host) {
		return "", "", fmt.Errorf("%q is not a host name or IP address", host)
	}
	if n, err := strconv.ParseUint(port, 10, 16); err != nil || n == 0 {
		return "", "", fmt.Errorf("port %q is not a number from 1 to 65535", port)
	}
	return host, port, nil
}

// pipe copies bytes between a and b both ways until both directions have
// ended, or neither has moved a byte for idle.
func pipe(a, b net.Conn, idle time.Duration) {
	var last atomic.Int64
	last.Store(time.Now().UnixNano())
	var wg sync.WaitGroup
	one := func(dst, src net.Conn) {
		defer wg.Done()
		buf := make([]byte, 32<<10)
		for {
			src.SetReadDeadline(time.Now().Add(idle))
			n, err := src.Read(buf)
			if n > 0 {
				last.Store(time.Now().UnixNano())
				dst.SetWriteDeadline(time.Now().Add(idle))
				if _, werr := dst.Write(buf[:n]); werr != nil {
					src.Close()
					return
				}
			}
			if err != nil {
				var ne net.Error
				if errors.As(err, &ne) && ne.Timeout() && time.Since(time.Unix(0, last.Load())) < idle {
					continue // the other direction is busy
				}
				if errors.Is(err, io.EOF) {
					closeWrite(dst) // pass the half-close on
					return
				}
				dst.Close()
				src.Close()
				return
			}
		}
	}
	wg.Add(2)
	go one(a, b)
	go one(b, a)
	wg.Wait()
}

// closeWrite half-closes c if it can, else closes it.
func closeWrite(c net.Conn) {
	if cw, ok := c.(interface{ CloseWrite() error }); ok {
		cw.CloseWrite()
		return
	}
	c.Close()
}

// idleConn is an upstream connection that fails a read or write blocked
// for longer than idle.
type idleConn struct {
	net.Conn
	idle time.Duration
}

func (c *idleConn) Read(b []byte) (int, error) {
	c.Conn.SetReadDeadline(time.Now().Add(c.idle))
	return c.Conn.Read(b)
}

func (c *idleConn) Write(b []byte) (int, error) {
	c.Conn.SetWriteDeadline(time.Now().Add(c.idle))
	return c.Conn.Write(b)
}

// limitListener accepts at most cap(sem) connections at once.
type limitListener struct {
	net.Listener
	sem  chan struct{}
	done chan struct{}
	once sync.Once
}

func (l *limitListener) Accept() (net.Conn, error) {
	select {
	case l.sem <- struct{}{}:
	case <-l.done:
		return nil, net.ErrClosed
	}
	c, err := l.Listener.Accept()
	if err != nil {
		<-l.sem
		return nil, err
	}
	return &limitConn{Conn: c, release: func() { <-l.sem }}, nil
}

func (l *limitListener) Close() error {
	l.once.Do(func() { close(l.done) })
	return l.Listener.Close()
}

// limitConn gives its slot back when closed.
type limitConn struct {
	net.Conn
	once    sync.Once
	release func()
}

// CloseWrite half-closes the connection, as a *net.TCPConn does.
func (c *limitConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return c.Close()
}

func (c *limitConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.release)
	return err
}
