package tools

import (
	"context"
	"net/http"
	"time"

	"github.com/ardgate/ardgate/tools/serve"
	"github.com/mark3labs/mcp-go/server"
)

// Reaping. Clients that close without a DELETE (the Inspector CLI, and
// LangChain and Mastra over HTTP) left their sessions, and so their
// attachments and npx servers, until IdleTTL swept them: 30 minutes by
// default. A session shows signs of life while a request of it is under
// way (a GET stream open, a call running) and when one came or ended
// lately. One that shows none for ReapAfter is ended as its client's
// DELETE would end it. A client that keeps a GET stream open, as the
// TypeScript SDK and mcp-go do, keeps its session until IdleTTL.

// serving counts r, a request of session s, as under way until the
// function it returns runs, and starts the session's reaper.
func (h *HTTP) serving(r *http.Request, s *session) (done func()) {
	h.reapClock(r, s)
	s.requests.Add(1)
	return func() {
		s.heard.Store(time.Now().UnixNano())
		s.requests.Add(-1)
	}
}

// reapClock starts, once per session, the timer that ends s, the session
// of r, once it has shown no sign of life for ReapAfter.
func (h *HTTP) reapClock(r *http.Request, s *session) {
	s.reapOnce.Do(func() {
		host, sid := r.Host, r.Header.Get(server.HeaderKeySessionID)
		t := time.AfterFunc(time.Hour, func() { h.reapIfQuiet(s, host, sid) })
		s.reaper.Store(t)
		t.Reset(h.reapAfter) // set only once stored, for the func to find it
	})
}

// reapIfQuiet ends s, whose id is sid and whose client came to host, when
// it has shown no sign of life for ReapAfter, or looks again when it
// could have.
func (h *HTTP) reapIfQuiet(s *session, host, sid string) {
	if h.g.lookup(sid) != s {
		return // ended meanwhile
	}
	quiet := time.Since(time.Unix(0, s.heard.Load()))
	if s.requests.Load() > 0 || s.fast.Busy() {
		quiet = 0
	}
	if quiet < h.reapAfter {
		s.reaper.Load().Reset(h.reapAfter - quiet)
		return
	}
	h.g.audit("reap", sid, "session", nil, "quiet", quiet.Round(time.Second).String(), "attachments", len(s.att.Attachments()))
	h.endSession(host, sid)
}

// endSession has the server end the session sid as a DELETE of its
// client's, to host, would: the server's hooks end its attachments.
func (h *HTTP) endSession(host, sid string) {
	req, err := http.NewRequestWithContext(context.Background(), http.MethodDelete, "/mcp", nil)
	if err != nil {
		return
	}
	req.Host = host // checked against DNS rebinding, as the client's were
	req.Header.Set(server.HeaderKeySessionID, sid)
	w := &pingWriter{header: http.Header{}, status: http.StatusOK}
	serve.Released(h.streamable).ServeHTTP(w, req)
	if w.status != http.StatusOK {
		h.g.log.Warn("the server did not end a quiet session", "session", sid, "status", w.status)
	}
}
