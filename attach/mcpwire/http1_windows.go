package mcpwire

import "net"

// initPeek keeps nothing on Windows, whose sockets have no read that
// returns instead of waiting.
func (c *h1Conn) initPeek(net.Conn) {}

// idleOpen cannot tell on Windows: an idle connection is taken as open, as
// one with no descriptor (TLS) is everywhere, and a request on one the
// server closed fails.
func (c *h1Conn) idleOpen() bool { return true }
