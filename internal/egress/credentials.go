package egress

import (
	"bufio"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"time"
)

// A Credential is a secret the proxy puts in requests to one host: the
// sandbox holds Placeholder where the secret would be (a tool's
// configuration copy, docs/sandbox-filesystem.md), and the proxy replaces
// it with Value in the headers of a request to Host, and to no other
// (docs/sandbox.md, "Credentials"). Value never enters the sandbox.
type Credential struct {
	Placeholder string
	Value       string
	// Host is a host name or IP address, as the request names it.
	Host string
}

// A CA is the certificate authority of one run of the proxy: it signs
// the certificates the proxy shows for the hosts whose credentials it puts
// in, and the sandbox of that run alone trusts it. Its key lives in act's
// memory only, and its certificate names the hosts it may sign for (name
// constraints), so that even its key could vouch for no other host.
type CA struct {
	// PEM is the certificate, for the sandbox to trust.
	PEM  []byte
	cert *x509.Certificate
	key  *ecdsa.PrivateKey

	mu     sync.Mutex
	leaves map[string]*tls.Certificate
}

// NewCA makes a CA that may sign for hosts alone (names and IP
// addresses), valid for a day.
func NewCA(hosts []string) (*CA, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:                serial(),
		Subject:                     pkix.Name{CommonName: "act egress proxy, one run"},
		NotBefore:                   now.Add(-time.Hour),
		NotAfter:                    now.Add(24 * time.Hour),
		KeyUsage:                    x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
		BasicConstraintsValid:       true,
		IsCA:                        true,
		MaxPathLenZero:              true,
		PermittedDNSDomainsCritical: true,
	}
	for _, h := range hosts {
		if ip, err := netip.ParseAddr(h); err == nil {
			bits := 32
			if ip.Is6() {
				bits = 128
			}
			tmpl.PermittedIPRanges = append(tmpl.PermittedIPRanges, &net.IPNet{IP: ip.AsSlice(), Mask: net.CIDRMask(bits, bits)})
			continue
		}
		tmpl.PermittedDNSDomains = append(tmpl.PermittedDNSDomains, h)
	}
	if len(tmpl.PermittedDNSDomains) == 0 {
		// No name at all: an empty list would permit every one.
		tmpl.ExcludedDNSDomains = []string{""}
	}
	if len(tmpl.PermittedIPRanges) == 0 {
		tmpl.ExcludedIPRanges = []*net.IPNet{{IP: net.IPv4zero, Mask: net.CIDRMask(0, 32)}, {IP: net.IPv6zero, Mask: net.CIDRMask(0, 128)}}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	return &CA{PEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), cert: cert, key: key, leaves: map[string]*tls.Certificate{}}, nil
}

func serial() *big.Int {
	n, _ := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 120))
	return n
}

// leaf is the certificate the proxy shows for host, made once.
func (ca *CA) leaf(host string) (*tls.Certificate, error) {
	ca.mu.Lock()
	defer ca.mu.Unlock()
	if c, ok := ca.leaves[host]; ok {
		return c, nil
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		// No common name: the names are in the SANs, and OpenSSL would
		// check a common name against the name constraints as a host
		// name (an IP address there is "excluded").
		SerialNumber: serial(),
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	if ip, err := netip.ParseAddr(host); err == nil {
		tmpl.IPAddresses = []net.IP{ip.AsSlice()}
	} else {
		tmpl.DNSNames = []string{host}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		return nil, err
	}
	c := &tls.Certificate{Certificate: [][]byte{der, ca.cert.Raw}, PrivateKey: key}
	ca.leaves[host] = c
	return c, nil
}

// credentialsFor are the credentials of p for host (compared without
// case).
func (p *Proxy) credentialsFor(host string) []Credential {
	host = strings.ToLower(strings.Trim(host, "[]"))
	var out []Credential
	for _, c := range p.Credentials {
		if c.Placeholder != "" && c.Value != "" && strings.EqualFold(c.Host, host) {
			out = append(out, c)
		}
	}
	return out
}

// putCredentials replaces, in the headers h of a request to a host, each
// placeholder of creds (that host's) by its value: where it stands in a
// header value, and inside a Basic credential (a tool builds one from a
// URL's user information or a user name and password). A placeholder of
// another host's is left as it is: it is worth nothing there. It returns
// whether it put any.
func putCredentials(h http.Header, creds []Credential) bool {
	if len(creds) == 0 {
		return false
	}
	put := false
	replace := func(s string) string {
		for _, c := range creds {
			if strings.Contains(s, c.Placeholder) {
				s = strings.ReplaceAll(s, c.Placeholder, c.Value)
				put = true
			}
		}
		return s
	}
	for k, vs := range h {
		for i, v := range vs {
			if scheme, cred, ok := strings.Cut(v, " "); ok && strings.EqualFold(scheme, "Basic") {
				if d, err := base64.StdEncoding.DecodeString(strings.TrimSpace(cred)); err == nil {
					if r := replace(string(d)); r != string(d) {
						vs[i] = scheme + " " + base64.StdEncoding.EncodeToString([]byte(r))
						continue
					}
				}
			}
			vs[i] = replace(v)
		}
		h[k] = vs
	}
	return put
}

// intercept serves a CONNECT to host:port, whose credentials (creds) the
// proxy puts in: it connects to the host through the policy and answers
// 200. If what the client sends is TLS (a handshake record), it shows the
// client a certificate of the run's CA for host, speaks TLS with the host
// (verified against the system's roots, or p.UpstreamRoots), and relays
// HTTP/1.1 requests one at a time, each with its credentials put in; a
// request for another host on the tunnel is refused (421). Anything else
// (ssh through the proxy, say) is tunnelled as it is, nothing put in.
// Nothing else about a request is changed.
func (s *state) intercept(w http.ResponseWriter, r *http.Request, host, target string, creds []Credential) {
	up, err := s.p.Policy.DialContext(r.Context(), "tcp", target)
	if err != nil {
		status, reason := failure(target, err)
		refuse(w, status, reason)
		s.logEvent(Event{Method: r.Method, Target: target, Allowed: status != http.StatusForbidden, Err: reason})
		return
	}
	leaf, err := s.p.CA.leaf(host)
	if err != nil {
		up.Close()
		refuse(w, http.StatusInternalServerError, err.Error())
		return
	}
	client, in, ok := s.establish(w, r, target, up)
	if !ok {
		return
	}
	defer s.untrack(client, up)
	first := make([]byte, 1)
	client.SetReadDeadline(time.Now().Add(s.idle))
	if _, err := io.ReadFull(in, first); err != nil {
		return
	}
	client.SetReadDeadline(time.Time{})
	in = &prefixConn{Conn: in, prefix: first}
	if first[0] != 0x16 { // not a TLS handshake record
		pipe(in, up, s.idle)
		return
	}
	upTLS := tls.Client(&idleConn{Conn: up, idle: s.idle}, &tls.Config{ServerName: host, RootCAs: s.p.UpstreamRoots, NextProtos: []string{"http/1.1"}, MinVersion: tls.VersionTLS12})
	hctx, cancel := context.WithTimeout(r.Context(), s.idle)
	err = upTLS.HandshakeContext(hctx)
	cancel()
	if err != nil {
		s.logEvent(Event{Method: r.Method, Target: target, Addr: up.RemoteAddr().String(), Allowed: true, Err: fmt.Sprintf("TLS with %s: %v", target, err)})
		return
	}
	cTLS := tls.Server(&idleConn{Conn: in, idle: s.idle}, &tls.Config{Certificates: []tls.Certificate{*leaf}, NextProtos: []string{"http/1.1"}, MinVersion: tls.VersionTLS12})
	hctx, cancel = context.WithTimeout(r.Context(), s.idle)
	err = cTLS.HandshakeContext(hctx)
	cancel()
	if err != nil {
		return
	}
	budget := &budgetReader{r: cTLS, n: -1}
	cr := bufio.NewReaderSize(budget, 32<<10)
	ur := bufio.NewReaderSize(upTLS, 32<<10)
	for {
		req, err := readRequest(cr, budget)
		if err != nil {
			return
		}
		name := req.Host
		if h, _, err := net.SplitHostPort(req.Host); err == nil {
			name = h
		}
		if name != "" && !strings.EqualFold(strings.Trim(name, "[]"), host) {
			// The tunnel is to host: a request for another one gets
			// none of host's credentials, nor goes anywhere.
			io.WriteString(cTLS, "HTTP/1.1 421 Misdirected Request\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\nContent-Length: 0\r\n\r\n")
			return
		}
		req.Header.Del("Proxy-Authorization")
		req.Header.Del("Upgrade")
		if strings.EqualFold(req.Header.Get("Expect"), "100-continue") {
			// The body goes on as it comes: the client need not wait.
			req.Header.Del("Expect")
			if _, err := io.WriteString(cTLS, "HTTP/1.1 100 Continue\r\n\r\n"); err != nil {
				return
			}
		}
		if putCredentials(req.Header, creds) {
			s.logEvent(Event{Method: req.Method, Target: target, Addr: up.RemoteAddr().String(), Allowed: true, Credential: true})
		}
		if err := req.Write(upTLS); err != nil {
			return
		}
		resp, err := http.ReadResponse(ur, req)
		for err == nil && resp.StatusCode >= 100 && resp.StatusCode < 200 && resp.StatusCode != http.StatusSwitchingProtocols {
			if err = resp.Write(cTLS); err == nil { // an informational answer (103): passed on, then the final one
				resp, err = http.ReadResponse(ur, req)
			}
		}
		if err != nil {
			return
		}
		// A value echoed back in a header goes back as its placeholder.
		for k, vs := range resp.Header {
			for i, v := range vs {
				for _, c := range creds {
					v = strings.ReplaceAll(v, c.Value, c.Placeholder)
				}
				vs[i] = v
			}
			resp.Header[k] = vs
		}
		err = resp.Write(cTLS)
		resp.Body.Close()
		if err != nil || resp.Close || req.Close || resp.StatusCode == http.StatusSwitchingProtocols {
			return
		}
	}
}

// readRequest reads one request of a tunnel the proxy terminates from
// br, which reads through budget: its header is bounded as the proxy's
// own server bounds one (maxHeaderBytes, past what br may have read ahead).
func readRequest(br *bufio.Reader, budget *budgetReader) (*http.Request, error) {
	budget.n = maxHeaderBytes + int64(br.Size())
	req, err := http.ReadRequest(br)
	budget.n = -1
	if err != nil {
		return nil, err
	}
	if req.Method == http.MethodConnect {
		return nil, errors.New("CONNECT inside a tunnel")
	}
	return req, nil
}

// budgetReader reads at most n bytes more from r (n < 0: no bound).
type budgetReader struct {
	r io.Reader
	n int64
}

func (b *budgetReader) Read(p []byte) (int, error) {
	if b.n == 0 {
		return 0, errors.New("request headers too large")
	}
	if b.n > 0 && int64(len(p)) > b.n {
		p = p[:b.n]
	}
	n, err := b.r.Read(p)
	if b.n > 0 {
		b.n -= int64(n)
	}
	return n, err
}

// prefixConn reads prefix before the connection's own bytes.
type prefixConn struct {
	net.Conn
	prefix []byte
}

func (c *prefixConn) Read(b []byte) (int, error) {
	if len(c.prefix) > 0 {
		n := copy(b, c.prefix)
		c.prefix = c.prefix[n:]
		return n, nil
	}
	return c.Conn.Read(b)
}
