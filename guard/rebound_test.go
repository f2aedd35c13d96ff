package guard

import (
	"net"
	"testing"
)

// A request to a loopback address is rebound when its Host is no
// loopback name; one to another address never is.
func TestRebound(t *testing.T) {
	loop := &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 8080}
	lan := &net.TCPAddr{IP: net.IPv4(192, 0, 2, 1), Port: 8080}
	for _, c := range []struct {
		host  string
		local net.Addr
		want  bool
	}{
		{"127.0.0.1:8080", loop, false},
		{"localhost:8080", loop, false},
		{"LOCALHOST", loop, false},
		{"[::1]:8080", loop, false},
		{"rebind.example:8080", loop, true},
		{"rebind.example", loop, true},
		{"192.0.2.1:8080", loop, true},
		{"gateway.lan:8080", lan, false},
		{"rebind.example", nil, false},
	} {
		if got := Rebound(c.host, c.local); got != c.want {
			t.Errorf("Rebound(%q, %v) = %v, want %v", c.host, c.local, got, c.want)
		}
	}
}
