package egress

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"
)

// TestCheckAddr: the special ranges are refused unless named, in every
// form that reaches them; other addresses pass.
func TestCheckAddr(t *testing.T) {
	for _, tt := range []struct {
		addr  string
		named []string
		want  string // "" allowed, else a word of the refusal
	}{
		{addr: "127.0.0.1", want: "loopback address (127.0.0.0/8)"},
		{addr: "127.255.0.9", want: "loopback"},
		{addr: "::1", want: "loopback address (::1/128)"},
		{addr: "::ffff:127.0.0.1", want: "127.0.0.1 is a loopback"},
		{addr: "169.254.169.254", want: "cloud metadata address"},
		{addr: "::ffff:169.254.169.254", want: "cloud metadata address"},
		{addr: "fd00:ec2::254", want: "cloud metadata address"},
		{addr: "169.254.1.1", want: "link-local"},
		{addr: "fe80::1%eth0", want: "link-local"},
		{addr: "10.0.0.5", want: "private address (10.0.0.0/8)"},
		{addr: "172.31.255.255", want: "private"},
		{addr: "192.168.1.1", want: "private"},
		{addr: "100.64.0.1", want: "carrier-grade NAT"},
		{addr: "fd12:3456::1", want: "private address (fc00::/7)"},
		{addr: "0.0.0.0", want: "unspecified"},
		{addr: "::", want: "unspecified"},
		{addr: "224.0.0.251", want: "multicast"},
		{addr: "ff02::1", want: "multicast"},
		{addr: "255.255.255.255", want: "reserved"},
		{addr: "::127.0.0.1", want: "reserved"},
		{addr: "64:ff9b::a00:5", want: "a NAT64 address of 10.0.0.5, a private address"},
		{addr: "64:ff9b::7f00:1", want: "NAT64 address of 127.0.0.1"},
		{addr: "64:ff9b::808:808"},
		{addr: "8.8.8.8"},
		{addr: "172.32.0.1"},
		{addr: "2606:4700::1111"},
		{addr: "10.0.0.5", named: []string{"10.0.0.0/8"}},
		{addr: "10.0.0.5", named: []string{"10.0.0.6/32"}, want: "private"},
		{addr: "127.0.0.1", named: []string{"127.0.0.1/32"}},
		{addr: "::ffff:127.0.0.1", named: []string{"127.0.0.1/32"}},
		{addr: "127.0.0.1", named: []string{"::ffff:127.0.0.0/104"}},
		{addr: "::1", named: []string{"127.0.0.1/32"}, want: "loopback"},
		{addr: "169.254.169.254", named: []string{"169.254.169.254/32"}},
	} {
		var p Policy
		for _, n := range tt.named {
			p.Named = append(p.Named, netip.MustParsePrefix(n))
		}
		err := p.CheckAddr(netip.MustParseAddr(tt.addr))
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("CheckAddr(%s), named %v = %v, want nil", tt.addr, tt.named, err)
		case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
			t.Errorf("CheckAddr(%s), named %v = %v, want a refusal saying %q", tt.addr, tt.named, err, tt.want)
		}
		var re *RefusedError
		if err != nil && !errors.As(err, &re) {
			t.Errorf("CheckAddr(%s) = %T, want *RefusedError", tt.addr, err)
		}
	}
}

// TestParseLiteral: the IPv4 forms inet_aton reads are IP literals here
// too, so they are checked as the address they are.
func TestParseLiteral(t *testing.T) {
	for host, want := range map[string]string{
		"127.0.0.1": "127.0.0.1", "0x7f.1": "127.0.0.1", "127.1": "127.0.0.1", "2130706433": "127.0.0.1",
		"0177.0.0.1": "127.0.0.1", "0x7f000001": "127.0.0.1", "10.0x10.1": "10.16.0.1", "::ffff:127.0.0.1": "::ffff:127.0.0.1",
		"example.org": "", "1.2.3.4.5": "", "256.1": "", "1.16777216": "", "08.1.1.1": "", "0x.1": "", "1..2": "", "": "",
	} {
		a, ok := parseLiteral(host)
		if got := map[bool]string{true: a.String(), false: ""}[ok]; got != want {
			t.Errorf("parseLiteral(%q) = %q, want %q", host, got, want)
		}
	}
}

// TestResolveEveryAddress: a name on the allow-list is refused when any
// address it resolves to is refused, whatever the order.
func TestResolveEveryAddress(t *testing.T) {
	for _, tt := range []struct {
		addrs []string
		bad   string
	}{
		{[]string{"93.184.215.14", "10.0.0.5"}, "10.0.0.5"},
		{[]string{"10.0.0.5", "93.184.215.14"}, "10.0.0.5"},
		{[]string{"2606:2800::1", "fd00:ec2::254"}, "fd00:ec2::254"},
	} {
		p := Policy{
			HostAllowed: func(h string) bool { return h == "mirror.example" },
			LookupNetIP: func(context.Context, string) ([]netip.Addr, error) {
				var out []netip.Addr
				for _, a := range tt.addrs {
					out = append(out, netip.MustParseAddr(a))
				}
				return out, nil
			},
		}
		_, err := p.DialContext(context.Background(), "tcp", "mirror.example:443")
		var re *RefusedError
		if !errors.As(err, &re) || re.Addr.String() != tt.bad || !strings.HasPrefix(err.Error(), "mirror.example resolves to "+tt.bad+", a ") {
			t.Errorf("addresses %v: DialContext() = %v, want a refusal of %s", tt.addrs, err, tt.bad)
		}
	}
}

// TestDialResolvesOnce: the name is resolved once and the checked address
// is the one dialled; a later answer (rebinding) is never asked for.
func TestDialResolvesOnce(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") }))
	defer srv.Close()
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	var lookups atomic.Int32
	p := Policy{
		HostAllowed: func(h string) bool { return h == "svc.test" },
		Named:       []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")},
		LookupNetIP: func(context.Context, string) ([]netip.Addr, error) {
			if lookups.Add(1) > 1 {
				return []netip.Addr{netip.MustParseAddr("169.254.169.254")}, nil
			}
			return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil
		},
	}
	c, err := p.DialContext(context.Background(), "tcp", "svc.test:"+port)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if got := c.RemoteAddr().String(); got != srv.Listener.Addr().String() {
		t.Errorf("connected to %s, want %s", got, srv.Listener.Addr())
	}
	if n := lookups.Load(); n != 1 {
		t.Errorf("%d lookups for one dial, want 1", n)
	}
}

// TestDialRefuses: DialContext refuses before connecting — a host not
// listed, a literal in a special range, a name that resolves into one (the
// real resolver's "localhost") — and takes only TCP.
func TestDialRefuses(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var accepted atomic.Int32
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted.Add(1)
			c.Close()
		}
	}()
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	p := Policy{HostAllowed: func(h string) bool { return h != "example.com" }}
	for host, want := range map[string]string{
		"example.com":        "host example.com is not in the policy's network.allowed_hosts",
		"127.0.0.1":          "127.0.0.1 is a loopback address",
		"[::ffff:127.0.0.1]": "::ffff:127.0.0.1 is 127.0.0.1, a loopback address",
		"0x7f.1":             "0x7f.1 is 127.0.0.1, a loopback address",
		"2130706433":         "2130706433 is 127.0.0.1, a loopback address",
		"localhost":          "localhost resolves to ",
		"169.254.169.254":    "cloud metadata",
	} {
		_, err := p.DialContext(context.Background(), "tcp", host+":"+port)
		var re *RefusedError
		if !errors.As(err, &re) || !strings.Contains(err.Error(), want) {
			t.Errorf("DialContext(%s) = %v, want a refusal saying %q", host, err, want)
		}
	}
	if _, err := p.DialContext(context.Background(), "udp", "8.8.8.8:53"); err == nil {
		t.Error("DialContext(udp) succeeded")
	}
	if n := accepted.Load(); n != 0 {
		t.Errorf("the loopback listener accepted %d connections", n)
	}
}

// TestCheckAddrHostAndMetadata: the host's own interface addresses and the
// cloud metadata addresses outside link-local are refused unless named.
func TestCheckAddrHostAndMetadata(t *testing.T) {
	var p Policy
	for _, a := range []string{"168.63.129.16", "100.100.100.200"} {
		if err := p.CheckAddr(netip.MustParseAddr(a)); err == nil || !strings.Contains(err.Error(), "cloud metadata") {
			t.Errorf("%s: %v, want a cloud metadata refusal", a, err)
		}
	}
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		t.Skip(err)
	}
	checked := 0
	for _, a := range addrs {
		n, ok := a.(*net.IPNet)
		if !ok {
			continue
		}
		ip, _ := netip.AddrFromSlice(n.IP)
		ip = ip.Unmap()
		if ip.IsLoopback() || ip.IsLinkLocalUnicast() {
			continue
		}
		checked++
		if err := p.CheckAddr(ip); err == nil {
			t.Errorf("the host's own address %s is allowed", ip)
		}
		named := Policy{Named: []netip.Prefix{netip.PrefixFrom(ip, ip.BitLen())}}
		if err := named.CheckAddr(ip); err != nil {
			t.Errorf("named, %s is refused: %v", ip, err)
		}
	}
	t.Logf("%d host addresses checked", checked)
}

// TestCheckAddrInterfacesUnreadable: when the host's interfaces cannot be
// read, a public address is refused (it may be this host's), not let
// through.
func TestCheckAddrInterfacesUnreadable(t *testing.T) {
	defer func(f func() ([]net.Addr, error)) { interfaceAddrs = f }(interfaceAddrs)
	interfaceAddrs = func() ([]net.Addr, error) { return nil, errors.New("netlink: refused") }
	if err := (Policy{}).CheckAddr(netip.MustParseAddr("93.184.216.34")); err == nil || !strings.Contains(err.Error(), "cannot be read") {
		t.Errorf("CheckAddr with unreadable interfaces = %v, want a refusal", err)
	}
}
