package attach

import (
	"cmp"
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/ardgate/ardgate/attach/mcpwire"
	"github.com/ardgate/ardgate/config"
)

// A call to an upstream is bounded by its timeout (call_timeout, or the
// server's own). A call that asked for progress gets that timeout again at
// each progress the server reports on it, since the work is going on: the
// MCP spec lets a client do so, and a tool that reports progress for five
// minutes was cut at one. No progress takes a call past max_call_time from
// its start, the bound the spec asks for against a server that reports
// progress without end.
//
// A server that asked the client something (an elicitation waits for a
// person) cannot answer a call before it has the client's answer: while it
// waits, none of its calls runs out of time, and once answered each gets
// its timeout again, up to max_call_time from its start as well.

// callLimits are a call's time limits.
type callLimits struct {
	timeout time.Duration // without an answer or, with progress, without progress
	most    time.Duration // in all, whatever progress
}

// limits are the time limits of a call to a's upstream.
func (s *Session) limits(a *Attachment) callLimits {
	t := s.timeout(a)
	return callLimits{timeout: t, most: max(t, s.m.maxCallTime())}
}

// maxCallTime is how long a call may take in all: MaxCallTime, or its
// default.
func (m *Manager) maxCallTime() time.Duration {
	return cmp.Or(m.MaxCallTime, max(config.DefaultMaxCallTime, m.CallTimeout))
}

// errOutOfTime is the cause that ends a call's context when its time is
// up; the server is told the call is cancelled for that reason.
var errOutOfTime = fmt.Errorf("%w", ErrTimeout)

// within bounds ctx by l. A call with progress p gets l.timeout again at
// each progress it reports, and a call to a server that may ask the
// client (w not nil) is held while it does (mcpwire.ClientWait), both up to
// l.most.
func (l callLimits) within(ctx context.Context, p *Progress, w *mcpwire.ClientWait) (context.Context, context.CancelFunc) {
	if p == nil && w == nil {
		return context.WithTimeoutCause(ctx, l.timeout, errOutOfTime)
	}
	ctx, cancel := context.WithCancelCause(ctx)
	c := &callClock{limits: l, end: time.Now().Add(l.most), wait: w, cancel: cancel}
	c.set(l.timeout)
	if p != nil {
		p.heard = func() { c.set(min(l.timeout, time.Until(c.end))) }
	}
	return ctx, func() {
		c.mu.Lock()
		c.t.Stop()
		c.stopped = true // a fire under way does not set it again
		c.mu.Unlock()
		cancel(context.Canceled)
	}
}

// wire is l as a pipe bounds a request sent without waiting.
func (l callLimits) wire() mcpwire.Limits {
	return mcpwire.Limits{Timeout: l.timeout, Most: l.most}
}

// deadline is when a call that started at start and last reported
// progress now runs out of time.
func (l callLimits) deadline(start, now time.Time) time.Time {
	d := now.Add(l.timeout)
	if end := start.Add(l.most); end.Before(d) {
		return end
	}
	return d
}

// outOfTime says how a call of tool, which ran for ran, ran out of time;
// p is its progress, nil when it asked for none.
func (l callLimits) outOfTime(a *Attachment, tool string, ran time.Duration, p *Progress) error {
	err := l.ranOut(a, tool, ran, p)
	if why := a.waitingOnClient(); why != "" {
		return fmt.Errorf("%w%s", err, why)
	}
	return err
}

// ranOut is outOfTime but for the server's requests to the client.
func (l callLimits) ranOut(a *Attachment, tool string, ran time.Duration, p *Progress) error {
	switch {
	case (p == nil || !p.reported.Load()) && ran >= l.most && l.most > l.timeout:
		// Held while its server waited on the client.
		return fmt.Errorf("%w: %s did not answer %s within %s, the most one call may take (max_call_time)", ErrTimeout, a.Name, tool, l.most)
	case p == nil:
		return errNoAnswer(a, tool, l.timeout)
	case !p.reported.Load():
		return fmt.Errorf("%w: %s did not answer %s, nor report progress on it, within %s", ErrTimeout, a.Name, tool, l.timeout)
	case ran >= l.most && l.most > l.timeout:
		return fmt.Errorf("%w: %s was still working on %s after %s, the most one call may take (max_call_time), though it reported progress", ErrTimeout, a.Name, tool, l.most)
	case ran >= l.most:
		return fmt.Errorf("%w: %s did not answer %s within %s; its progress gave it no more time, as max_call_time is not longer than that", ErrTimeout, a.Name, tool, l.timeout)
	}
	return fmt.Errorf("%w: %s reported progress on %s, then neither answered nor reported more within %s", ErrTimeout, a.Name, tool, l.timeout)
}

// callClock is the timer of a call that may be given more time.
type callClock struct {
	limits callLimits
	end    time.Time           // l.most from the call's start
	wait   *mcpwire.ClientWait // nil when the server cannot ask the client
	cancel context.CancelCauseFunc

	mu      sync.Mutex // the timer may fire before AfterFunc has returned it
	t       *time.Timer
	stopped bool // the call has ended
}

// set lets the call run d more.
func (c *callClock) set(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stopped {
		return
	}
	if c.t == nil {
		c.t = time.AfterFunc(d, c.fire)
		return
	}
	c.t.Reset(d)
}

func (c *callClock) fire() {
	now := time.Now()
	if d := c.wait.Hold(now, c.limits.timeout, c.end); !d.IsZero() {
		c.set(d.Sub(now))
		return
	}
	c.cancel(errOutOfTime)
}
