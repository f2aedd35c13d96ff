package mcpwire

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/ardgate/ardgate/attach/fault"
	"github.com/ardgate/ardgate/guard/jsonrpc"
)

// capAnswers holds the answers of an upstream (an MCP server through
// mcp-go's transport, an A2A agent through a2a-go's client) to the message
// cap. Both clients read an answer whole, and mcp-go reads an event
// stream a line at a time, however long: a server that answered without
// end would fill the gateway's memory. An answer is cut past the cap,
// and so is a line of an event stream, with a sentence; cut, when set,
// hears of it, for the client may not pass the sentence on.
type capAnswers struct {
	next http.RoundTripper
	cut  func()
}

// Capped returns hc with its answers capped; cut, when not nil, hears of
// each answer cut.
func Capped(hc *http.Client, cut func()) *http.Client {
	c := *hc
	next := c.Transport
	if next == nil {
		next = http.DefaultTransport
	}
	c.Transport = capAnswers{next: next, cut: cut}
	return &c
}

func (c capAnswers) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := c.next.RoundTrip(r)
	if err != nil {
		return resp, err
	}
	if media, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); media == "text/event-stream" {
		resp.Body = readCloser{Reader: &deepEvents{lr: jsonrpc.NewLineReader(eventLines(resp.Body), eventBuffer)}, Closer: resp.Body, cut: c.cut}
	} else {
		resp.Body = &cappedBody{ReadCloser: resp.Body, left: jsonrpc.MaxMessage, cut: c.cut}
	}
	return resp, nil
}

type readCloser struct {
	io.Reader
	io.Closer
	cut func()
}

func (r readCloser) Read(p []byte) (int, error) {
	n, err := r.Reader.Read(p)
	if errors.Is(err, jsonrpc.ErrFrameTooLarge) && r.cut != nil {
		r.cut()
	}
	return n, err
}

// eventBuffer is deepEvents' buffer: small, as a legacy SSE server's
// stream lasts as long as the connection; a longer line is gathered apart
// (jsonrpc.LineReader).
const eventBuffer = 4 << 10

// deepEvents reads an event stream for mcp-go's transport, which drops an
// event it cannot decode: an answer nested deeper than guard reads (as
// encoding/json reads) is passed on as an error answering the same
// request, saying why, so that the request fails at once; it waited out
// its timeout.
type deepEvents struct {
	lr   *jsonrpc.LineReader
	line []byte // what is still to be read of the line read
	err  error  // reading the stream, once line is read
}

func (d *deepEvents) Read(p []byte) (int, error) {
	for len(d.line) == 0 {
		if d.err != nil {
			return 0, d.err
		}
		d.line, d.err = d.lr.ReadLine()
		d.line = refusedIfDeep(d.line)
	}
	n := copy(p, d.line)
	d.line = d.line[n:]
	return n, nil
}

// refusedIfDeep is line, an event stream's, or in place of a data line
// that answers a request nested too deep, an error answer to it.
func refusedIfDeep(line []byte) []byte {
	data, ok := bytes.CutPrefix(line, []byte("data:"))
	if !ok {
		return line
	}
	data = bytes.TrimSpace(data)
	if _, err := jsonrpc.ReadMessage(data); !errors.Is(err, jsonrpc.ErrTooDeep) {
		return line
	}
	id, method := jsonrpc.RouteOf(data)
	if id == nil || method {
		return line // a request or a notification: dropped, as before
	}
	why, _ := json.Marshal(fmt.Sprintf("the server's response is %s: %s", ErrMalformedAnswer, jsonrpc.ErrTooDeep))
	return fmt.Appendf(nil, "data: {\"jsonrpc\":\"2.0\",\"id\":%s,\"error\":{\"code\":%d,\"message\":%s}}\n", id, mcp.PARSE_ERROR, why)
}

// cappedBody fails the read that goes past its cap, and every one after,
// saying so.
type cappedBody struct {
	io.ReadCloser
	left int64  // bytes still allowed; negative once past the cap
	cut  func() // nil, or hears of the cut once
}

// ErrMalformedAnswer is an answer that is not JSON-RPC the gateway reads:
// one nested deeper than jsonrpc.ErrTooDeep allows, say. That request
// fails, not the connection.
var ErrMalformedAnswer = errors.New("not JSON-RPC the gateway reads")

func (b *cappedBody) Read(p []byte) (int, error) {
	if b.left < 0 {
		return 0, fault.ErrAnswerTooLarge
	}
	n, err := b.ReadCloser.Read(p[:min(int64(len(p)), b.left+1)]) // one byte more tells a body past the cap
	if b.left -= int64(n); b.left < 0 {
		if b.cut != nil {
			b.cut()
		}
		return 0, fault.ErrAnswerTooLarge
	}
	return n, err
}
