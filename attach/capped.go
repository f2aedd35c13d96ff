package attach

import (
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"

	"github.com/ardgate/ardgate/guard"
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

// capped returns hc with its answers capped; cut, when not nil, hears of
// each answer cut.
func capped(hc *http.Client, cut func()) *http.Client {
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
		// A line holds a message and its field name.
		resp.Body = readCloser{Reader: guard.LimitFrames(resp.Body, guard.MaxMessage+len("data: \r\n")), Closer: resp.Body, cut: c.cut}
	} else {
		resp.Body = &cappedBody{ReadCloser: resp.Body, left: guard.MaxMessage, cut: c.cut}
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
	if errors.Is(err, guard.ErrFrameTooLarge) && r.cut != nil {
		r.cut()
	}
	return n, err
}

// cappedBody fails the read that goes past its cap, and every one after,
// saying so.
type cappedBody struct {
	io.ReadCloser
	left int64  // bytes still allowed; negative once past the cap
	cut  func() // nil, or hears of the cut once
}

// errAnswerTooLarge is an answer past the message cap.
var errAnswerTooLarge = fmt.Errorf("the answer is larger than the %d MiB cap", guard.MaxMessage>>20)

func (b *cappedBody) Read(p []byte) (int, error) {
	if b.left < 0 {
		return 0, errAnswerTooLarge
	}
	n, err := b.ReadCloser.Read(p[:min(int64(len(p)), b.left+1)]) // one byte more tells a body past the cap
	if b.left -= int64(n); b.left < 0 {
		if b.cut != nil {
			b.cut()
		}
		return 0, errAnswerTooLarge
	}
	return n, err
}
