package auth

import "testing"

func TestLoopback(t *testing.T) {
	for _, c := range []struct {
		in         string
		host, addr bool // IsLoopbackHost(in), IsLoopbackAddr(in)
	}{
		{in: "127.0.0.1", host: true, addr: true},
		{in: "127.0.0.1:8080", addr: true},
		{in: "127.1.2.3:80", addr: true},
		{in: "::1", host: true, addr: true},
		{in: "[::1]", host: true, addr: true},
		{in: "[::1]:55587", addr: true},
		{in: "::ffff:127.0.0.1", host: true, addr: true},
		{in: "[::ffff:127.0.0.1]:80", addr: true},
		{in: "localhost", host: true, addr: true},
		{in: "LocalHost", host: true, addr: true},
		{in: "LOCALHOST:55587", addr: true},
		{in: "localhost:0", addr: true},
		// Every interface.
		{in: ""},
		{in: ":55587"},
		{in: "0.0.0.0"},
		{in: "0.0.0.0:55587"},
		{in: "::"},
		{in: "[::]:55587"},
		// Other addresses and names: a name that resolves to 127.0.0.1
		// today is not trusted, as it is never resolved.
		{in: "10.0.0.1:80"},
		{in: "192.168.1.1"},
		{in: "2001:db8::1"},
		{in: "[2001:db8::1]:443"},
		{in: "localtest.me"},
		{in: "localtest.me:80"},
		{in: "127.0.0.1.nip.io:80"},
		{in: "localhost.example.com"},
		{in: "notlocalhost"},
		{in: "evil.com:80"},
		// Malformed, or odd.
		{in: "[::1"},
		{in: "::1]"},
		{in: "127.0.0.1:80:90"},
		{in: "[127.0.0.1]:80", addr: true}, // Go and URLs read the host inside the brackets
		{in: "127.0.0.256"},
	} {
		if got := IsLoopbackHost(c.in); got != c.host {
			t.Errorf("IsLoopbackHost(%q) = %v, want %v", c.in, got, c.host)
		}
		if got := IsLoopbackAddr(c.in); got != c.addr {
			t.Errorf("IsLoopbackAddr(%q) = %v, want %v", c.in, got, c.addr)
		}
	}
}

func FuzzLoopback(f *testing.F) {
	for _, s := range []string{"127.0.0.1:80", "[::1]:1", "localhost", "0.0.0.0", "evil.com:80", "[::1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		// A host the rule accepts stays accepted with a port.
		if IsLoopbackHost(s) && !IsLoopbackAddr(s) {
			t.Errorf("IsLoopbackHost(%q) but not IsLoopbackAddr", s)
		}
	})
}
