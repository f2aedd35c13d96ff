package attach

import (
	"context"
	"fmt"
	"net"
	"strings"
	"syscall"
	"testing"

	"github.com/ardgate/ardgate/attach/a2a"
)

// An agent a request could not reach is down until one reaches it; a
// request that failed otherwise (the agent said no, the caller gave up)
// tells nothing of it.
func TestAgentReached(t *testing.T) {
	a := &Attachment{agent: &a2a.Conn{}}
	a.reached(fmt.Errorf("send: %w", &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}))
	if st, why := a.Status(); st != StatusDown || !strings.Contains(why, "could not reach it: dial tcp: connection refused") {
		t.Fatalf("after a request that could not reach it: %s %q", st, why)
	}
	a.reached(context.Canceled)
	if st, _ := a.Status(); st != StatusDown {
		t.Fatalf("a request its caller gave up on made it %s", st)
	}
	a.reached(nil)
	if st, why := a.Status(); st != StatusUp {
		t.Fatalf("after a request that reached it: %s %q", st, why)
	}
}
