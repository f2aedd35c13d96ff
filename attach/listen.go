package attach

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"mime"
	"net/http"
	"strconv"
	"time"

	"github.com/ardgate/ardgate/guard"
)

// A streamable HTTP server says what it has to say between calls
// (tools/list_changed, for the gateway) on an event stream the client opens
// with a GET. The gateway opens it only for a server that declared it sends
// tools/list_changed, and reads it on one goroutine of its own, over the
// poster's connections. mcp-go's transport, listening, held six goroutines
// and a connection of net/http's per attached server, and opened the stream
// whether or not the server would ever use it; with 1,000 sessions of two
// attachments that was 12,000 goroutines and about 110 KiB a server.

// Waits before opening the stream again: after it ended, and longest
// after failures one after another. A server's "retry:" field sets it.
const (
	listenRetry    = time.Second
	listenRetryMax = 30 * time.Second
)

// Why the stream is not opened again: the server offers none (405), or
// it no longer knows the session (404), which every call will meet too.
var (
	errNoStream = errors.New("the server offers no event stream (HTTP 405)")
)

// streamAt is where an event stream is, for opening it again: the id of
// the last event read whole, and the wait the server asked for.
type streamAt struct {
	lastID  string
	retry   time.Duration // zero until the server sets it
	pending string        // the id of the event being read
}

// field takes an SSE field line other than data.
func (s *streamAt) field(line []byte) {
	name, value, _ := bytes.Cut(line, []byte(":"))
	value = bytes.TrimPrefix(value, []byte(" "))
	switch string(name) {
	case "id":
		if bytes.IndexByte(value, 0) < 0 { // as the SSE spec says: such an id is ignored
			s.pending = string(value)
		}
	case "retry":
		if ms, err := strconv.ParseUint(string(value), 10, 32); err == nil {
			s.retry = min(time.Duration(ms)*time.Millisecond, listenRetryMax)
		}
	}
}

// end marks the end of an event: its id is where to resume.
func (s *streamAt) end() { s.lastID = s.pending }

// listen reads the server's event stream until the poster closes: its
// notifications go to p.notify, and its requests are answered, as on a
// call's stream. It opens the stream again after it ends or fails, from
// the last event read, and stops when the server offers none or forgot
// the session.
func (p *poster) listen(log *slog.Logger) {
	var at streamAt
	wait := listenRetry
	for {
		opened, err := p.listen1(&at)
		if p.closed.Err() != nil {
			return
		}
		if errors.Is(err, errNoStream) || errors.Is(err, errSessionGone) {
			log.Info("not listening to the server between calls", "reason", err.Error())
			return
		}
		switch {
		case at.retry > 0:
			wait = at.retry
		case opened:
			wait = listenRetry
		}
		log.Debug("the server's event stream ended; opening it again", "in", wait, "err", err)
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-p.closed.Done():
			t.Stop()
			return
		}
		if !opened && at.retry == 0 {
			wait = min(2*wait, listenRetryMax)
		}
	}
}

// listen1 opens the stream once and reads it to its end. opened tells
// whether the server accepted it.
func (p *poster) listen1(at *streamAt) (opened bool, err error) {
	ctx := p.closed
	resp, err := p.send(ctx, request{method: http.MethodGet, accept: "text/event-stream", lastEventID: at.lastID})
	if err != nil {
		return false, err
	}
	defer resp.body.Close()
	switch resp.status {
	case http.StatusOK:
	case http.StatusMethodNotAllowed:
		return false, errNoStream
	case http.StatusNotFound:
		return false, errSessionGone
	default:
		return false, fmt.Errorf("the server answered HTTP %d", resp.status)
	}
	if media, _, _ := mime.ParseMediaType(resp.media); media != "text/event-stream" {
		return false, fmt.Errorf("the server answered with content type %q", resp.media)
	}
	// A small buffer, as the stream is idle most of its life and its
	// events are short (tools/list_changed is 70 bytes); a longer line is
	// gathered apart, up to a message and its field name. The stream has
	// no end to bound it by, as a call's has.
	lines := guard.LimitFrames(resp.body, guard.MaxMessage+len("data: \r\n"))
	_, err = p.events(ctx, "", guard.NewLineReader(lines, 512), at)
	return true, err
}
