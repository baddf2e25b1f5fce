package policy

import (
	"fmt"
	"net/netip"
	"testing"
)

// TestNamedRanges: the IP and CIDR entries of network.allowed_hosts name
// their ranges, allow the IP literals in them, and under a system policy
// count only where the system allows them too.
func TestNamedRanges(t *testing.T) {
	p := &Policy{Network: Network{AllowedHosts: []string{
		"example.org", "127.0.0.1", "::1", "10.0.0.0/8", "10.1.2.3/8", "::ffff:192.168.0.0/112", "*.example.net", "fe80::1%eth0",
	}}}
	if got, want := fmt.Sprint(p.NamedRanges()), "[127.0.0.1/32 ::1/128 10.0.0.0/8 192.168.0.0/16]"; got != want {
		t.Errorf("NamedRanges() = %s, want %s", got, want)
	}
	for host, want := range map[string]bool{
		"10.2.3.4": true, "127.0.0.1": true, "::ffff:127.0.0.1": true, "0:0::1": true, "[::1]": true, "192.168.7.7": true,
		"10.9.0.0/16": true, "11.0.0.1": false, "127.0.0.2": false, "::2": false, "example.org": true, "0.0.0.0/0": false,
	} {
		if got := p.HostAllowed(host); got != want {
			t.Errorf("HostAllowed(%q) = %v, want %v", host, got, want)
		}
	}

	sys := &Policy{Network: Network{AllowedHosts: []string{"10.1.0.0/16", "127.0.0.1", "example.org"}}}
	user := &Policy{Network: Network{AllowedHosts: []string{"10.0.0.0/8", "127.0.0.1", "192.168.0.0/16"}}}
	tight := tighten(sys, user, Origin{Source: OriginFlag})
	if got, want := fmt.Sprint(tight.NamedRanges()), "[127.0.0.1/32 10.1.0.0/16]"; got != want {
		t.Errorf("under the system policy, NamedRanges() = %s, want %s", got, want)
	}
	for host, want := range map[string]bool{"10.1.2.3": true, "10.2.0.1": false, "192.168.0.1": false, "127.0.0.1": true} {
		if got := tight.HostAllowed(host); got != want {
			t.Errorf("under the system policy, HostAllowed(%q) = %v, want %v", host, got, want)
		}
	}
	// The floor is consulted even where the layer's own list was not
	// narrowed to it.
	loose := &Policy{Network: user.Network, floor: sys}
	if got := loose.NamedRanges(); len(got) != 1 || got[0] != netip.MustParsePrefix("127.0.0.1/32") {
		t.Errorf("bounded by the floor, NamedRanges() = %v, want [127.0.0.1/32]", got)
	}
}

// TestCredentialHostAllowed: the egress proxy gives the person's
// credentials only to a host network.credential_hosts names and
// network.allowed_hosts allows; under a system policy, only to one both
// layers name.
func TestCredentialHostAllowed(t *testing.T) {
	p := &Policy{Network: Network{
		AllowedHosts:    []string{"registry.npmjs.org", "*.corp.example", "pypi.org"},
		CredentialHosts: []string{"registry.npmjs.org", "*.corp.example", "not-allowed.example"},
	}}
	for host, want := range map[string]bool{"registry.npmjs.org": true, "REGISTRY.npmjs.org": true, "npm.corp.example": true,
		"pypi.org": false, "not-allowed.example": false, "corp.example": false, "": false} {
		if got := p.CredentialHostAllowed(host); got != want {
			t.Errorf("CredentialHostAllowed(%q) = %v, want %v", host, got, want)
		}
	}
	sys := &Policy{Network: Network{AllowedHosts: []string{"registry.npmjs.org", "*.corp.example"}, CredentialHosts: []string{"npm.corp.example"}}}
	tight := tighten(sys, p, Origin{Source: OriginFlag})
	for host, want := range map[string]bool{"registry.npmjs.org": false, "npm.corp.example": true, "git.corp.example": false} {
		if got := tight.CredentialHostAllowed(host); got != want {
			t.Errorf("under the system policy, CredentialHostAllowed(%q) = %v, want %v", host, got, want)
		}
	}
	if got := fmt.Sprint(tight.Network.CredentialHosts); got != "[npm.corp.example]" {
		t.Errorf("under the system policy, credential_hosts = %s", got)
	}
}
