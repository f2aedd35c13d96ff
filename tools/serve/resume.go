package serve

import (
	"encoding/json"
	"errors"
	"net/http"
	"sync"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/ardgate/ardgate/guard"
)

// resumeAnew readies a GET of session s that resumes its stream after an
// event the store no longer holds, or whose followers it no longer holds
// (256 events on, or kept past 2 minutes), and returns the writer to
// serve it with; any other GET is left as it is. mcp-go answered it 400
// "Unknown Last-Event-ID", after which the TypeScript SDK gave up its
// listening stream for good, and with it every notification. It is
// served the session's listening stream anew instead, and, once that is
// open, told that its tools, prompts and resources changed, so that it
// lists again what it may have missed being told.
//
// Only when no other GET of the session is open: then the lost stream
// may have been a POST's, whose answer no listening stream brings, and
// mcp-go's server gives the listening stream to the newest GET, so the
// two would take it from each other, each reconnecting, without end (as
// the TypeScript SDK did, once a second). Such a resume is refused as
// before.
func (h *HTTP[C]) resumeAnew(w http.ResponseWriter, r *http.Request, s *Session) http.ResponseWriter {
	last := r.Header.Get("Last-Event-ID")
	if last == "" || s.Streams.Load() > 1 { // this GET is counted
		return w
	}
	sid := r.Header.Get(server.HeaderKeySessionID)
	_, err := h.events.ReplayEventsAfter(r.Context(), sid, last, func(string, json.RawMessage) error { return nil })
	if !errors.Is(err, server.ErrUnknownEventID) {
		return w
	}
	r.Header.Del("Last-Event-ID")
	h.srv.Log.Info("stream resumed after events no longer kept: opened anew, its lists announced changed", "session", sid, "last_event_id", guard.Text(last, 40))
	return &announcer{ResponseWriter: w, announce: func() {
		for _, m := range []mcp.MCPMethod{mcp.MethodNotificationToolsListChanged, mcp.MethodNotificationPromptsListChanged, mcp.MethodNotificationResourcesListChanged} {
			if err := h.srv.MCP.SendNotificationToSpecificClient(sid, string(m), nil); err != nil {
				h.srv.Log.Debug("list_changed not sent", "session", sid, "method", m, "err", err)
			}
		}
	}}
}

// announcer runs announce once the response's head is flushed: mcp-go's
// server attaches a listening stream before, and a notification sent
// sooner was kept for a resume, not sent.
type announcer struct {
	http.ResponseWriter
	once     sync.Once
	announce func()
}

func (a *announcer) Flush() {
	if f, ok := a.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
	a.once.Do(a.announce)
}

func (a *announcer) Unwrap() http.ResponseWriter { return a.ResponseWriter }
