// Package fault names the ways a request to an upstream fails, for attach
// and its subpackages alike: a timed-out call reads the same whether its
// upstream is an MCP server or an A2A agent. attach re-exports its
// sentinels, which callers test with errors.Is.
//
// It imports the standard library, guard and guard/jsonrpc only, and
// nothing of attach.
package fault

import (
	"context"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/ardgate/ardgate/guard"
	"github.com/ardgate/ardgate/guard/jsonrpc"
)

// Sentinels shared by attach, attach/a2a and the transports.
var (
	ErrUpstreamDown   = errors.New("upstream is down")
	ErrTimeout        = errors.New("timed out")
	ErrNotImplemented = errors.New("not supported by this build")
	// ErrNotAttachable is wrapped by every reason an entry cannot be
	// attached.
	ErrNotAttachable = errors.New("not attachable")
	// ErrAnswerTooLarge is an answer past the message cap.
	ErrAnswerTooLarge = fmt.Errorf("the answer is larger than the %d MiB cap", jsonrpc.MaxMessage>>20)
)

// NotAttachable is a reason an entry cannot be attached.
func NotAttachable(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrNotAttachable, fmt.Sprintf(format, args...))
}

// NoAnswer is a request, what, to the upstream named name that timeout
// ended.
func NoAnswer(name, what string, timeout time.Duration) error {
	return fmt.Errorf("%w: %s did not answer %s within %s", ErrTimeout, name, what, timeout)
}

// Unreachable is the dial behind err that failed, when err is one: what a
// long chain of wrapping says at its end. A dial the guard refused is not.
func Unreachable(err error) (*net.OpError, bool) {
	var op *net.OpError
	return op, errors.As(err, &op) && op.Op == "dial" && !errors.Is(err, guard.ErrRefused)
}

// ClientGone says why a call was cancelled when nothing said more: its
// client's connection or session ended ("context canceled").
const ClientGone = "its client went away: the connection or the session ended"

// Cancelled is a request's end by its caller, cause being its context's
// cause, said as CancelReason says it ("context canceled" told a model
// nothing); it still unwraps to cause, context.Canceled most often.
func Cancelled(cause error) error { return cancelled{cause} }

type cancelled struct{ cause error }

func (c cancelled) Error() string { return CancelReason(c.cause) }
func (c cancelled) Unwrap() error { return c.cause }

// CancelReason says why a call was cancelled with cause, the cause of its
// context or its error.
func CancelReason(cause error) string {
	if cause == nil || cause == context.Canceled {
		return ClientGone
	}
	return cause.Error()
}

// Sleep waits d, or until ctx ends; it reports whether it waited d: the
// pause between tries of a request to an upstream.
func Sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
