package mcpwire

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"strconv"
	"time"

	"github.com/mark3labs/mcp-go/client/transport"

	"github.com/ardgate/ardgate/attach/fault"
	"github.com/ardgate/ardgate/guard/jsonrpc"
)

// Opening an event stream again from where it was: the server's own GET
// stream after it ended (listen.go), and the stream of a call that the
// server ended before answering, once it had given an event id. That is
// how a 2025-11-25 server answers a long call without holding a
// connection for it (SEP-1699): the client polls with a GET carrying
// Last-Event-ID, after the wait the server's "retry:" field asks for.
// mcp-go's transport does the same for the calls it makes.

// streamAt is where an event stream is, for opening it again: the id of
// the last event read whole, and the wait the server asked for.
type streamAt struct {
	lastID  string
	retry   time.Duration // zero until the server sets it
	pending string        // the last id field read
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

// end marks the end of an event: the id it carried, or the one before
// it, is where to resume.
func (s *streamAt) end() { s.lastID = s.pending }

// Waits before polling a call's stream again: when the server set none
// (mcp-go's), and the shortest taken from it, so that a server asking
// for none is not polled in a tight loop.
const (
	pollWait    = time.Second
	minPollWait = 10 * time.Millisecond
)

// resume polls a call's stream that the server ended before answering,
// given what reading it returned, for as long as the server ends each
// stream the same way and the call lasts.
func (p *Poster) resume(ctx context.Context, key string, at *streamAt, resp *transport.JSONRPCResponse, err error) (*transport.JSONRPCResponse, error) {
	for errors.Is(err, ErrStreamEnded) && at.lastID != "" {
		wait := pollWait
		if at.retry > 0 {
			wait = max(at.retry, minPollWait)
		}
		if !fault.Sleep(ctx, wait) {
			return nil, ctx.Err()
		}
		var opened bool
		resp, opened, err = p.openStream(ctx, key, at, maxLineBuffer)
		if !opened && err != nil {
			return nil, fmt.Errorf("polling the server for the call's answer: %w", err)
		}
	}
	return resp, err
}

// openStream GETs the server's event stream from at's last event and
// reads it, with a line buffer of buf bytes, until the event that answers
// key or its end. opened tells whether the server accepted the GET.
func (p *Poster) openStream(ctx context.Context, key string, at *streamAt, buf int) (resp *transport.JSONRPCResponse, opened bool, err error) {
	r, err := p.send(ctx, request{method: http.MethodGet, accept: "text/event-stream", lastEventID: at.lastID})
	if err != nil {
		return nil, false, err
	}
	defer r.body.Close()
	switch r.status {
	case http.StatusOK:
	case http.StatusMethodNotAllowed:
		return nil, false, errNoStream
	case http.StatusNotFound:
		return nil, false, errSessionGone
	default:
		return nil, false, fmt.Errorf("the server answered HTTP %d", r.status)
	}
	if media, _, _ := mime.ParseMediaType(r.media); media != "text/event-stream" {
		return nil, false, fmt.Errorf("the server answered with content type %q", r.media)
	}
	resp, err = p.events(ctx, key, jsonrpc.NewLineReader(eventLines(r.body), buf), at)
	return resp, true, err
}

// errNoStream is a server that offers no event stream to GET.
var errNoStream = errors.New("the server offers no event stream (HTTP 405)")
