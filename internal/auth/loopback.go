package auth

import (
	"net"
	"net/netip"
	"strings"
)

// The loopback rule, in one place: the server allows no authentication
// and plain HTTP with tokens only on a loopback address, the API answers a
// loopback server's requests only when their Host names a loopback
// address (against DNS rebinding), and the CLI sends a kubeconfig's
// credential over plain HTTP only to a loopback server.
//
// A loopback address is "localhost" in any case, or an IP address in
// 127.0.0.0/8 or ::1 (an IPv4-mapped one too). No name is resolved: a name
// another server resolves, today to 127.0.0.1, may resolve elsewhere
// tomorrow, so only "localhost", which resolvers answer themselves
// (RFC 6761), counts. An empty host and the unspecified addresses (0.0.0.0,
// ::) listen on every interface: not loopback.

// IsLoopbackHost reports whether host, a name or an IP address without a
// port (an IPv6 address with or without its brackets), is a loopback
// address.
func IsLoopbackHost(host string) bool {
	if strings.HasPrefix(host, "[") && strings.HasSuffix(host, "]") {
		host = host[1 : len(host)-1]
	}
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.Unmap().IsLoopback()
}

// IsLoopbackAddr reports whether addr, HOST:PORT (a listen address, a
// Host header) or a host alone, names a loopback address.
func IsLoopbackAddr(addr string) bool {
	if host, _, err := net.SplitHostPort(addr); err == nil {
		return IsLoopbackHost(host)
	}
	return IsLoopbackHost(addr)
}
