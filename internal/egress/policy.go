// Package egress is act's way out to the network: a dialer that checks a
// destination after its name is resolved, and an HTTP forward proxy built
// on it that sandboxed commands reach through HTTP_PROXY and HTTPS_PROXY
// (docs/sandbox.md, "Network: the egress proxy").
//
// A host is checked twice. Its name (or IP literal, as written) must be on
// the policy's allow-list ([Policy.HostAllowed]); then every address it
// resolves to must be one the policy may reach ([Policy.CheckAddr]):
// loopback, link-local, private, cloud metadata, unspecified, multicast and
// reserved addresses (and the IPv4-mapped and NAT64 forms of them) only
// where the policy names their range. The name is resolved once and the
// checked address is dialled, so a name whose DNS answer changes between
// the check and the connection (DNS rebinding) reaches nothing it was not
// checked for.
package egress

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Policy says where traffic may go.
type Policy struct {
	// HostAllowed reports whether a host name, or an IP literal as
	// written, is on the policy's allow-list. nil allows no host.
	HostAllowed func(host string) bool
	// Named are the address ranges the policy names explicitly: only
	// addresses in one of them may be loopback, link-local, private, cloud
	// metadata, unspecified, multicast or reserved.
	Named []netip.Prefix
	// LookupNetIP resolves a host name to its addresses. nil:
	// net.DefaultResolver.LookupNetIP(ctx, "ip", host).
	LookupNetIP func(ctx context.Context, host string) ([]netip.Addr, error)
	// DialTimeout bounds resolving and connecting. 0: 30 seconds.
	DialTimeout time.Duration
}

// A RefusedError is a destination the policy does not allow: a host not on
// the allow-list, or an address in a range the policy does not name.
type RefusedError struct {
	// Host is the host as asked for ("" for CheckAddr's own error).
	Host string
	// Addr is the refused address; invalid when the host itself is not
	// allowed.
	Addr netip.Addr
	// Kind says what Addr is ("a private address"), Range the special
	// range it lies in.
	Kind  string
	Range netip.Prefix
	// Via is the IPv4 address Addr embeds (NAT64), when that is what was
	// refused.
	Via netip.Addr
}

func (e *RefusedError) Error() string {
	if !e.Addr.IsValid() {
		return fmt.Sprintf("host %s is not in the policy's network.allowed_hosts", e.Host)
	}
	what := fmt.Sprintf("%s (%s)", e.Kind, e.Range)
	if e.Via.IsValid() {
		what = fmt.Sprintf("a NAT64 address of %s, %s", e.Via, what)
	}
	switch {
	case e.Host == "" || e.Host == e.Addr.String():
		return fmt.Sprintf("%s is %s the policy does not name", e.Addr, what)
	case isLiteral(e.Host):
		return fmt.Sprintf("%s is %s, %s the policy does not name", e.Host, e.Addr, what)
	}
	return fmt.Sprintf("%s resolves to %s, %s the policy does not name", e.Host, e.Addr, what)
}

// special are the ranges only a named range opens, most specific first so
// that a refusal names the narrowest.
var special = func() []struct {
	p    netip.Prefix
	kind string
} {
	var out []struct {
		p    netip.Prefix
		kind string
	}
	for _, s := range [][2]string{
		{"169.254.169.254/32", "a cloud metadata address"},
		{"fd00:ec2::254/128", "a cloud metadata address"},
		{"100.100.100.200/32", "a cloud metadata address"}, // Alibaba Cloud
		{"168.63.129.16/32", "a cloud metadata address"},   // Azure's wire server: a public address
		{"0.0.0.0/8", "an unspecified address"},
		{"::/128", "an unspecified address"},
		{"127.0.0.0/8", "a loopback address"},
		{"::1/128", "a loopback address"},
		{"::/96", "a reserved address"}, // IPv4-compatible, deprecated
		{"169.254.0.0/16", "a link-local address"},
		{"fe80::/10", "a link-local address"},
		{"10.0.0.0/8", "a private address"},
		{"172.16.0.0/12", "a private address"},
		{"192.168.0.0/16", "a private address"},
		{"100.64.0.0/10", "a private (carrier-grade NAT) address"},
		{"fc00::/7", "a private address"},
		{"fec0::/10", "a private (site-local) address"},
		{"64:ff9b:1::/48", "a private (local-use NAT64) address"},
		{"224.0.0.0/4", "a multicast address"},
		{"ff00::/8", "a multicast address"},
		{"240.0.0.0/4", "a reserved address"}, // and the broadcast address
	} {
		out = append(out, struct {
			p    netip.Prefix
			kind string
		}{netip.MustParsePrefix(s[0]), s[1]})
	}
	return out
}()

// nat64 is the well-known NAT64 prefix (RFC 6052): its addresses reach the
// IPv4 address in their last 32 bits.
var nat64 = netip.MustParsePrefix("64:ff9b::/96")

// CheckAddr returns nil if the policy may reach ip, else a *RefusedError
// naming the range ip lies in. An address in none of the special ranges
// is allowed; one in a special range only if a Named range holds it.
// IPv4-mapped IPv6 addresses are checked as the IPv4 address, NAT64
// addresses as the IPv4 address they embed too.
func (p Policy) CheckAddr(ip netip.Addr) error {
	ip = ip.WithZone("").Unmap()
	if !ip.IsValid() {
		return errors.New("no address")
	}
	if p.named(ip) {
		return nil
	}
	for _, s := range special {
		if s.p.Contains(ip) {
			return &RefusedError{Addr: ip, Kind: s.kind, Range: s.p}
		}
	}
	own, pfx, err := hostAddress(ip)
	if err != nil {
		// Fail closed: an address that may be this host's is refused.
		return &RefusedError{Addr: ip, Kind: "an address not known not to be this host's (its interfaces cannot be read: " + err.Error() + ")", Range: netip.PrefixFrom(ip, ip.BitLen())}
	}
	if own {
		return &RefusedError{Addr: ip, Kind: "one of this host's own addresses", Range: pfx}
	}
	if nat64.Contains(ip) {
		b := ip.As16()
		v4 := netip.AddrFrom4([4]byte(b[12:]))
		if err := p.CheckAddr(v4); err != nil {
			re := err.(*RefusedError)
			return &RefusedError{Addr: ip, Kind: re.Kind, Range: re.Range, Via: v4}
		}
	}
	return nil
}

// named reports whether a Named range holds ip (unmapped, without zone).
func (p Policy) named(ip netip.Addr) bool {
	for _, n := range p.Named {
		if n = normalize(n); n.IsValid() && n.Contains(ip) {
			return true
		}
	}
	return false
}

// normalize is n masked, an IPv4-mapped range as the IPv4 range.
func normalize(n netip.Prefix) netip.Prefix {
	if !n.IsValid() {
		return n
	}
	if a := n.Addr(); a.Is4In6() {
		bits := n.Bits() - 96
		if bits < 0 {
			return netip.Prefix{} // wider than the mapped block: not a range of IPv4
		}
		n = netip.PrefixFrom(a.Unmap(), bits)
	}
	return n.Masked()
}

// Resolve checks host against the allow-list, resolves it (or parses it as
// an IP literal) and checks every address: one refused address refuses the
// host. It returns the addresses to dial.
func (p Policy) Resolve(ctx context.Context, host string) ([]netip.Addr, error) {
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	if !validHost(host) {
		return nil, fmt.Errorf("%q is not a host name or IP address", host)
	}
	if p.HostAllowed == nil || !p.HostAllowed(host) {
		return nil, &RefusedError{Host: host}
	}
	var addrs []netip.Addr
	if a, ok := parseLiteral(host); ok {
		addrs = []netip.Addr{a}
	} else {
		lookup := p.LookupNetIP
		if lookup == nil {
			lookup = func(ctx context.Context, host string) ([]netip.Addr, error) {
				return net.DefaultResolver.LookupNetIP(ctx, "ip", host)
			}
		}
		var err error
		if addrs, err = lookup(ctx, host); err != nil {
			return nil, err
		}
		if len(addrs) == 0 {
			return nil, fmt.Errorf("%s resolves to no address", host)
		}
	}
	for _, a := range addrs {
		if err := p.CheckAddr(a); err != nil {
			err.(*RefusedError).Host = host
			return nil, err
		}
	}
	return addrs, nil
}

// DialContext connects to addr ("host:port") over TCP if the policy allows
// host and every address it resolves to (Resolve). It dials the addresses
// it checked, in order, never the name; and it checks again the address
// each socket is about to connect to.
func (p Policy) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	switch network {
	case "tcp", "tcp4", "tcp6":
	default:
		return nil, fmt.Errorf("egress: network %s: only TCP goes out", network)
	}
	host, portStr, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	port, err := strconv.ParseUint(portStr, 10, 16)
	if err != nil || port == 0 {
		return nil, fmt.Errorf("%s: port %q is not a number from 1 to 65535", addr, portStr)
	}
	timeout := p.DialTimeout
	if timeout <= 0 {
		timeout = 30 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	addrs, err := p.Resolve(ctx, host)
	if err != nil {
		return nil, err
	}
	d := net.Dialer{
		// The socket's own destination, checked where the kernel is
		// about to use it: whatever the code above does, no connection
		// starts to an address the policy refuses.
		Control: func(_, address string, _ syscall.RawConn) error {
			ap, err := netip.ParseAddrPort(address)
			if err != nil {
				return err
			}
			if err := p.CheckAddr(ap.Addr()); err != nil {
				err.(*RefusedError).Host = host
				return err
			}
			return nil
		},
	}
	var first error
	for _, a := range addrs {
		a = a.Unmap()
		if (network == "tcp4" && !a.Is4()) || (network == "tcp6" && !a.Is6()) {
			continue
		}
		c, err := d.DialContext(ctx, network, netip.AddrPortFrom(a, uint16(port)).String())
		if err == nil {
			return c, nil
		}
		if first == nil {
			first = err
		}
		if ctx.Err() != nil {
			break
		}
	}
	if first == nil {
		first = fmt.Errorf("%s has no %s address", host, network)
	}
	return nil, first
}

// isLiteral reports whether host is written as an IP address.
func isLiteral(host string) bool {
	_, ok := parseLiteral(host)
	return ok
}

// parseLiteral parses host as an IP address: any form netip accepts, and
// the IPv4 forms the C library's inet_aton accepts too ("127.1",
// "0x7f.1", "2130706433", "0177.0.0.1"), which a resolver may hand back
// as that address without asking DNS.
func parseLiteral(host string) (netip.Addr, bool) {
	if a, err := netip.ParseAddr(host); err == nil {
		return a, true
	}
	parts := strings.Split(host, ".")
	if len(parts) > 4 {
		return netip.Addr{}, false
	}
	var vals []uint64
	for _, s := range parts {
		base := 10
		switch {
		case len(s) > 2 && (s[:2] == "0x" || s[:2] == "0X"):
			s, base = s[2:], 16
		case len(s) > 1 && s[0] == '0':
			s, base = s[1:], 8
		}
		v, err := strconv.ParseUint(s, base, 32)
		if err != nil || s == "" || s[0] == '+' {
			return netip.Addr{}, false
		}
		vals = append(vals, v)
	}
	var n uint64
	for i, v := range vals[:len(vals)-1] {
		if v > 0xff {
			return netip.Addr{}, false
		}
		n |= v << (24 - 8*i)
	}
	last := vals[len(vals)-1]
	if last >= 1<<(32-8*(len(vals)-1)) {
		return netip.Addr{}, false
	}
	n |= last
	return netip.AddrFrom4([4]byte{byte(n >> 24), byte(n >> 16), byte(n >> 8), byte(n)}), true
}

// validHost reports whether host is an IP literal or a DNS name (letters,
// digits, '-', '_' and dots): nothing a URL parser, resolver or policy
// could read two ways.
func validHost(host string) bool {
	if host == "" || len(host) > 253 {
		return false
	}
	if _, err := netip.ParseAddr(host); err == nil {
		return true
	}
	for _, c := range host {
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', c == '-', c == '_', c == '.':
		default:
			return false
		}
	}
	return !strings.Contains(host, "..") && host[0] != '.'
}

// hostAddress reports whether ip is an address of one of this host's
// interfaces (a service bound to it is the host's, as a loopback one is),
// and the interface's prefix. The interfaces are read each time: they
// change. When they cannot be read, the error says so and CheckAddr
// refuses.
func hostAddress(ip netip.Addr) (bool, netip.Prefix, error) {
	addrs, err := interfaceAddrs()
	if err != nil {
		return false, netip.Prefix{}, err
	}
	for _, a := range addrs {
		n, ok := a.(*net.IPNet)
		if !ok {
			continue
		}
		if h, ok := netip.AddrFromSlice(n.IP); ok && h.Unmap() == ip {
			return true, netip.PrefixFrom(ip, ip.BitLen()), nil
		}
	}
	return false, netip.Prefix{}, nil
}

// interfaceAddrs is net.InterfaceAddrs (a variable: a test makes it fail).
var interfaceAddrs = net.InterfaceAddrs
