//go:build unix

package mcpwire

import (
	"errors"
	"net"
	"syscall"
)

// initPeek keeps conn's descriptor, for idleOpen to look at.
func (c *h1Conn) initPeek(conn net.Conn) {
	if sc, ok := conn.(syscall.Conn); ok {
		c.raw, _ = sc.SyscallConn()
	}
	c.peekFn = c.peek
}

// idleOpen tells whether the server has neither closed the idle
// connection nor sent anything on it, by a look at the socket that does
// not wait. A connection with no descriptor (TLS) is taken as open.
func (c *h1Conn) idleOpen() bool {
	if c.raw == nil {
		return true
	}
	if err := c.raw.Read(c.peekFn); err != nil {
		return false
	}
	return errors.Is(c.peekErr, syscall.EAGAIN) // nothing to read, and not closed
}

func (c *h1Conn) peek(fd uintptr) bool {
	_, _, c.peekErr = syscall.Recvfrom(int(fd), c.peekBuf[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
	return true // done, whatever it found: the check never waits
}
