package mcpwire

import (
	"errors"
	"log/slog"
	"time"

	"github.com/ardgate/ardgate/attach/fault"
)

// A streamable HTTP server says what it has to say between calls
// (tools/list_changed, for the gateway) on an event stream the client opens
// with a GET. The gateway opens it only for a server that declared it sends
// tools/list_changed, and reads it on one goroutine of its own, over the
// Poster's connections. mcp-go's transport, listening, held six goroutines
// and a connection of net/http's per attached server, and opened the stream
// whether or not the server would ever use it; with 1,000 sessions of two
// attachments that was 12,000 goroutines and about 110 KiB a server.

// Waits before opening the stream again: after it ended, and longest
// after failures one after another. A server's "retry:" field sets it,
// down to listenRetryMin: a server that ends every stream at once asking
// for no wait is not asked again in a tight loop.
const (
	listenRetry    = time.Second
	listenRetryMin = 100 * time.Millisecond
	listenRetryMax = 30 * time.Second
)

// Listen reads the server's event stream until the Poster closes: its
// notifications go to p.notify, and its requests are answered, as on a
// call's stream. It opens the stream again after it ends or fails, from
// the last event read, and stops when the server offers none (405) or
// forgot the session (404), which every call will meet too.
func (p *Poster) Listen(log *slog.Logger) {
	var at streamAt
	wait := listenRetry
	for {
		// A small line buffer, as the stream is idle most of its life and
		// its events are short (tools/list_changed is 70 bytes); a longer
		// line is gathered apart.
		_, opened, err := p.openStream(p.closed, "", &at, 512)
		if p.closed.Err() != nil {
			return
		}
		if errors.Is(err, errNoStream) || errors.Is(err, errSessionGone) {
			log.Info("not listening to the server between calls", "reason", err.Error())
			return
		}
		switch {
		case at.retry > 0:
			wait = max(at.retry, listenRetryMin)
		case opened:
			wait = listenRetry
		}
		log.Debug("the server's event stream ended; opening it again", "in", wait, "err", err)
		if !fault.Sleep(p.closed, wait) {
			return
		}
		if !opened && at.retry == 0 {
			wait = min(2*wait, listenRetryMax)
		}
	}
}
