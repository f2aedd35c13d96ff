package serve

import (
	"context"
	"net/http"
	"time"

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

// Serving counts r, a request of session s, as under way until the
// function it returns runs, and starts the session's reaper.
func (h *Clocks) Serving(r *http.Request, s *Session) (done func()) {
	h.reapClock(r, s)
	s.Requests.Add(1)
	return func() {
		s.Heard.Store(time.Now().UnixNano())
		s.Requests.Add(-1)
	}
}

// reapClock starts, once per session, the timer that ends s, the session
// of r, once it has shown no sign of life for ReapAfter.
func (h *Clocks) reapClock(r *http.Request, s *Session) {
	s.ReapOnce.Do(func() {
		host, sid := r.Host, r.Header.Get(server.HeaderKeySessionID)
		t := time.AfterFunc(time.Hour, func() { h.reapIfQuiet(s, host, sid) })
		s.Reaper.Store(t)
		t.Reset(h.ReapAfter) // set only once stored, for the func to find it
	})
}

// reapIfQuiet ends s, whose id is sid and whose client came to host, when
// it has shown no sign of life for ReapAfter, or looks again when it
// could have.
func (h *Clocks) reapIfQuiet(s *Session, host, sid string) {
	if !h.Sessions.Live(sid, s) {
		return // ended meanwhile
	}
	quiet := time.Since(time.Unix(0, s.Heard.Load()))
	if s.Requests.Load() > 0 || s.Fast.Busy() {
		quiet = 0
	}
	if quiet < h.ReapAfter {
		s.Reaper.Load().Reset(h.ReapAfter - quiet)
		return
	}
	h.Sessions.Reaping(sid, quiet)
	h.endSession(host, sid)
}

// endSession has the server end the session sid as a DELETE of its
// client's, to host, would: the server's hooks end its attachments.
func (h *Clocks) endSession(host, sid string) {
	req, err := http.NewRequestWithContext(context.Background(), http.MethodDelete, "/mcp", nil)
	if err != nil {
		return
	}
	req.Host = host // checked against DNS rebinding, as the client's were
	req.Header.Set(server.HeaderKeySessionID, sid)
	w := &pingWriter{header: http.Header{}, status: http.StatusOK}
	Released(h.Server).ServeHTTP(w, req)
	if w.status != http.StatusOK {
		h.Log.Warn("the server did not end a quiet session", "session", sid, "status", w.status)
	}
}
