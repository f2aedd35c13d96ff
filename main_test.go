package main

import (
	"net"
	"testing"
)

// Only a listener on a loopback address is taken for one: 0.0.0.0 and
// :: listen on every interface.
func TestLoopback(t *testing.T) {
	for _, tc := range []struct {
		ip   string
		want bool
	}{{"127.0.0.1", true}, {"127.0.0.2", true}, {"::1", true}, {"0.0.0.0", false}, {"::", false}, {"192.0.2.1", false}} {
		if got := loopback(&net.TCPAddr{IP: net.ParseIP(tc.ip), Port: 7333}); got != tc.want {
			t.Errorf("loopback(%s) = %v, want %v", tc.ip, got, tc.want)
		}
	}
}
