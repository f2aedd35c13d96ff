package serve

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"io"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/ardgate/ardgate/guard"
)

// Cancelling fast calls.
//
// A client cancels a call with notifications/cancelled, naming its id. The
// MCP server stops the calls it runs itself; the fast path's calls are
// stopped here, from one record of the calls in flight per session: over
// stdio the reader of the client's frames keeps it, and stops them all
// when the client goes; over HTTP the session does, as the notice may come
// on any connection of the session (the TypeScript SDK sends it and
// leaves the call's request open).

// Inflight is the fast calls in flight of one session, by the JSON of
// their ids (unique in the session while a call is in flight): what a
// notifications/cancelled naming one stops, as the MCP server stops its
// own calls. Its zero value is ready.
type Inflight struct {
	mu    sync.Mutex
	calls map[string]Stopper
}

// Stopper stops a call in flight: cancel when the client cancelled it,
// for the reason it gave, stop when its session ends.
type Stopper interface {
	Cancel(reason string)
	Stop()
}

// StopCause stops a call by ending its context: with a clientCancel as
// the cause when the client cancelled it, so that the call can tell.
type StopCause context.CancelCauseFunc

func (f StopCause) Cancel(reason string) { f(clientCancel{reason}) }
func (f StopCause) Stop()                { f(nil) }

// clientCancel is the cause a call's context ends with when the client
// cancelled the call. It is the reason the upstream is told: the client's
// own, if it gave one.
type clientCancel struct{ reason string }

func (c clientCancel) Error() string { return cmp.Or(c.reason, "the client cancelled the call") }

// Unwrap makes it a context.Canceled, as any call stopped early is.
func (clientCancel) Unwrap() error { return context.Canceled }

// ByClient is the cause that stops a call the client cancelled, for
// reason, the client's own if it gave one (clientCancel).
func ByClient(reason string) error { return clientCancel{reason} }

// CancelledByClient reports whether ctx ended because the client cancelled
// its call.
func CancelledByClient(ctx context.Context) bool {
	_, ok := context.Cause(ctx).(clientCancel)
	return ok
}

// Add records c under id, the JSON of its request's id.
func (in *Inflight) Add(id string, c Stopper) {
	key, ok := idKey(id)
	if !ok {
		return
	}
	in.mu.Lock()
	if in.calls == nil {
		in.calls = map[string]Stopper{}
	}
	in.calls[key] = c
	in.mu.Unlock()
}

// Busy tells whether a call is in flight.
func (in *Inflight) Busy() bool {
	in.mu.Lock()
	defer in.mu.Unlock()
	return len(in.calls) > 0
}

// Remove forgets the call recorded under id.
func (in *Inflight) Remove(id string) {
	key, _ := idKey(id)
	in.mu.Lock()
	delete(in.calls, key)
	in.mu.Unlock()
}

// removeServerCall forgets c, recorded under id, unless another call has
// taken the id since: c's request ends after the server wrote its answer,
// by when the client may have sent another request with the same id.
func (in *Inflight) removeServerCall(id string, c *ServerCall) {
	key, _ := idKey(id)
	in.mu.Lock()
	if cur, ok := in.calls[key].(*ServerCall); ok && cur == c {
		delete(in.calls, key)
	}
	in.mu.Unlock()
}

// Cancel stops the call that frame, a notifications/cancelled, names, if
// it is in flight, and returns the id named, if frame is such a notice.
func (in *Inflight) Cancel(frame []byte) (id string, stopped bool) {
	id, reason, ok := cancelledID(frame)
	if !ok {
		return "", false
	}
	key, ok := idKey(id)
	if !ok {
		return "", false
	}
	in.mu.Lock()
	c := in.calls[key]
	in.mu.Unlock()
	if c != nil {
		c.Cancel(reason)
	}
	return id, c != nil
}

// StopAll stops every call in flight: the session is ending.
func (in *Inflight) StopAll() {
	in.mu.Lock()
	calls := make([]Stopper, 0, len(in.calls))
	for _, c := range in.calls {
		calls = append(calls, c)
	}
	in.mu.Unlock()
	for _, c := range calls {
		c.Stop()
	}
}

var cancelledMethod = []byte(`"notifications/cancelled"`)

// cancelledID returns the JSON of the request id that frame, a
// notifications/cancelled, names, and the reason it gives, if any.
func cancelledID(frame []byte) (id, reason string, ok bool) {
	if !bytes.Contains(frame, cancelledMethod) {
		return "", "", false
	}
	var n struct {
		Method string
		Params struct {
			RequestID json.RawMessage `json:"requestId"`
			Reason    any             `json:"reason"`
		} `json:"params"`
	}
	if json.Unmarshal(frame, &n) != nil || n.Method != "notifications/cancelled" || n.Params.RequestID == nil {
		return "", "", false
	}
	reason, _ = n.Params.Reason.(string) // a reason of another type is no reason
	return string(n.Params.RequestID), guard.Text(reason, 200), true
}

// A request the client cancelled gets no answer, as the MCP spec asks:
// the client forgot the id when it cancelled, and the TypeScript SDK
// reports an answer to it as an error. Over stdio a fast call stopped by
// the client writes none (tools' stdioCall), and as the MCP server answers its
// own calls, cancelled or not, its answers to cancelled requests are
// dropped on their way out (dropAnswers). Over HTTP the call's request is
// still open and must end: a fast call's ends as an event stream with no
// message (EndUnanswered), which the client reads to its end; so does a
// request the MCP server answers (ServerCall).

// maxUnanswered bounds the ids kept: a notice that comes after the answer
// leaves its id behind.
const maxUnanswered = 64

// unanswered are the ids of requests on the server's path that the client
// cancelled, by idKey, oldest first. An id goes when its answer is
// dropped, when a new request reuses it, or when more than maxUnanswered
// are kept. Its zero value is ready.
type unanswered struct {
	n   atomic.Int32 // len(ids): frames are not read while none is kept
	mu  sync.Mutex
	ids []string
}

// Add keeps the id that raw, a request id's JSON, is.
func (u *unanswered) Add(raw string) {
	key, ok := idKey(raw)
	if !ok {
		return
	}
	u.mu.Lock()
	if len(u.ids) == maxUnanswered {
		u.ids = slices.Delete(u.ids, 0, 1)
	}
	u.ids = append(u.ids, key)
	u.n.Store(int32(len(u.ids)))
	u.mu.Unlock()
}

// Forget forgets the id of frame, a request from the client, if it is
// kept: the id is in use again.
func (u *unanswered) Forget(frame []byte) {
	if u.n.Load() == 0 {
		return
	}
	if m := ReadMessage(frame); m.Request() {
		u.remove(m.ID)
	}
}

// remove forgets the id whose JSON is raw, and reports whether it was
// kept.
func (u *unanswered) remove(raw []byte) bool {
	key, ok := idKey(string(raw))
	if !ok {
		return false
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	i := slices.Index(u.ids, key)
	if i < 0 {
		return false
	}
	u.ids = slices.Delete(u.ids, i, i+1)
	u.n.Store(int32(len(u.ids)))
	return true
}

// idKey is the key of the request id whose JSON is raw: one for every
// spelling of an id that mcp-go takes for the same (7 and 7.0, a string
// with escapes or without), and raw itself for the plain spellings that
// nearly every client sends, so that a fast call's id costs no allocation.
func idKey(raw string) (string, bool) {
	if canonicalID(raw) {
		return raw, true
	}
	var id mcp.RequestId
	if id.UnmarshalJSON([]byte(raw)) != nil {
		return "", false
	}
	switch v := id.Value().(type) {
	case string:
		return `"` + v + `"`, true
	case int64:
		return strconv.FormatInt(v, 10), true
	case float64:
		return strconv.FormatFloat(v, 'g', -1, 64), true
	}
	return "", false // null
}

// canonicalID reports whether raw is a string without escapes or an
// integer spelled as strconv.FormatInt spells it, short enough to be
// exact: the spellings idKey keeps as they are.
func canonicalID(raw string) bool {
	n := len(raw)
	if n >= 2 && raw[0] == '"' && raw[n-1] == '"' {
		return !strings.ContainsAny(raw[1:n-1], `"\`)
	}
	digits := strings.TrimPrefix(raw, "-")
	if digits == "" || len(digits) > 15 || (digits[0] == '0' && raw != "0") {
		return false
	}
	for _, b := range []byte(digits) {
		if b < '0' || b > '9' {
			return false
		}
	}
	return true
}

// dropAnswers writes the MCP server's frames to w, but for its answers to
// requests the client cancelled. The server writes a frame per Write.
type dropAnswers struct {
	w io.Writer
	u *unanswered
}

func (d dropAnswers) Write(frame []byte) (int, error) {
	if d.u.n.Load() > 0 {
		if id, ok := answerID(frame); ok && d.u.remove(id) {
			return len(frame), nil
		}
	}
	return d.w.Write(frame)
}

// answerID returns the id of frame when it is an answer as mcp-go's
// server encodes one, {"jsonrpc":"2.0","id":ID,"result" or "error"...:
// only its head is read, however large the result.
func answerID(frame []byte) ([]byte, bool) {
	rest, ok := bytes.CutPrefix(frame, []byte(`{"jsonrpc":"2.0","id":`))
	if !ok || len(rest) == 0 {
		return nil, false
	}
	end := bytes.IndexByte(rest, ',')
	if rest[0] == '"' {
		end = -1
		for i := 1; i < len(rest); i++ {
			if rest[i] == '\\' {
				i++
			} else if rest[i] == '"' {
				end = i + 1
				break
			}
		}
	}
	if end <= 0 {
		return nil, false
	}
	tail := rest[end:]
	if !bytes.HasPrefix(tail, []byte(`,"result":`)) && !bytes.HasPrefix(tail, []byte(`,"error":`)) {
		return nil, false
	}
	return rest[:end], true
}

// EndUnanswered ends the answer to a fast call the client cancelled over
// HTTP: the event stream of its progress ends with no message, or, when
// none began, an empty one is written to out.
func EndUnanswered(stream *ProgressStream, out EventOut) error {
	if streamed, err := stream.cut(); streamed {
		return err
	}
	if err := out.Begin(); err != nil {
		return err
	}
	return out.End()
}

// EndEmpty answers a request the client cancelled over HTTP before
// anything of its answer was written: an event stream with no message.
func EndEmpty(w http.ResponseWriter) {
	out := &ResponseEvents{W: w}
	if out.Begin() == nil {
		_ = out.End()
	}
}

// ServerCall is a request of an HTTP session that the MCP server answers,
// while the server runs it. A notifications/cancelled naming it cancels
// its answer: mcp-go's server answers every request (its cancellation
// only ends the handler's context, https://github.com/mark3labs/mcp-go/pull/756),
// so the answer is neither kept for a resumed stream (EventStore) nor written (callWriter),
// and the request ends as an event stream with no message, as a fast
// call's does. The server stops the call itself.
type ServerCall struct {
	cancelled atomic.Bool
	w         *callWriter // its response; set before the server runs it
}

func (c *ServerCall) Cancel(string) { c.cancelled.Store(true) } // mcp-go's server keeps the reason
func (c *ServerCall) Stop()         {}                          // the server ends its own calls

// drops reports whether msg, a message the server sends on the request's
// stream, is the answer to it, cancelled by the client.
func (c *ServerCall) drops(msg []byte) bool {
	if c == nil || !c.cancelled.Load() {
		return false
	}
	_, ok := answerID(msg)
	return ok
}

// Notify writes msg, a notification of the call's own (its progress), on
// the call's stream, and reports whether it took it. mcp-go's server
// queues a notification for whichever of the session's streams reads
// first, the GET stream or another request's: a call's progress came out
// of order, split between streams, or where the client never looked.
func (c *ServerCall) Notify(msg []byte) bool {
	return c != nil && c.w != nil && c.w.event(msg)
}

type serverCallKey struct{}

// ServerCallOf returns the ServerCall of a request's context, if any.
func ServerCallOf(ctx context.Context) *ServerCall {
	c, _ := ctx.Value(serverCallKey{}).(*ServerCall)
	return c
}

// TrackServerCall records m, when it is a request, in calls, its
// session's, as a call that the server answers, until done is called, and gives the server the
// call's writer (callWriter). An answer still to come after every
// becomes an event stream, with a comment every every while quiet, when
// the client asks for one (MayGoQuiet).
func TrackServerCall(calls *Inflight, w http.ResponseWriter, r *http.Request, m Message, every time.Duration) (http.ResponseWriter, *http.Request, func()) {
	if !m.Request() {
		return w, r, func() {}
	}
	id := string(m.ID)
	c := &ServerCall{}
	c.w = &callWriter{ResponseWriter: w, call: c}
	if MayGoQuiet(AcceptOf(r.Header), every) {
		c.w.mu.Lock() // the first beat may come before the timer is set
		c.w.pace = newPace(every)
		c.w.timer = time.AfterFunc(every, c.w.beat)
		c.w.mu.Unlock()
	}
	calls.Add(id, c)
	r = r.WithContext(context.WithValue(r.Context(), serverCallKey{}, c))
	return c.w, r, func() {
		c.w.end()
		calls.removeServerCall(id, c)
	}
}

// callWriter is the response writer of a ServerCall. It drops the answer
// once the call is cancelled, and writes the call's own notifications
// (ServerCall.Notify) and comments on a quiet answer (beat) on its stream,
// which they begin when the server has not: the server's headers then
// come too late, and its answer, meant as JSON, is written as the stream's
// last event. The server sets its headers in a map of its own, handed on
// when it writes its head: a stream begun meanwhile, from another
// goroutine, would otherwise race it for net/http's.
type callWriter struct {
	http.ResponseWriter
	call *ServerCall

	header http.Header // the server's, made by Header

	mu sync.Mutex // the server's writes and the call's own events
	// empty: the answer was to be JSON, and the request ends instead as an
	// event stream with nothing in it.
	empty bool
	// streaming: the response is an event stream; ours: begun by the
	// call's own events; json: the server, after them, meant to answer
	// in JSON.
	streaming, ours, json bool
	headed                bool // the server wrote its head
	ended                 bool // the server is done with the request
	pace                  pace
	timer                 *time.Timer // of the beats; nil for none
}

// Header is the server's header map.
func (w *callWriter) Header() http.Header {
	if w.header == nil {
		w.header = http.Header{}
	}
	return w.header
}

// begin begins the call's event stream.
func (w *callWriter) begin() {
	beginEvents(w.ResponseWriter)
	w.streaming, w.ours = true, true
}

// event writes msg as an event of the call's stream, beginning it if
// need be, and reports whether the call took it: after the answer, or
// once the call is cancelled, it is dropped.
func (w *callWriter) event(msg []byte) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.ended || w.empty || w.call.cancelled.Load() || w.headed && !w.streaming {
		return true // answered, or being answered in JSON: too late
	}
	if !w.streaming {
		w.begin()
	}
	ev := slices.Concat(sseMessage, msg, []byte("\n\n"))
	_, _ = w.ResponseWriter.Write(ev)
	w.pace.wrote(ev)
	w.flush()
	return true
}

// beat begins the call's event stream, when the server has begun no
// answer, and writes a comment on it when one is due; then it arms the
// next.
func (w *callWriter) beat() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.ended || w.empty || w.call.cancelled.Load() || w.headed && !w.streaming {
		return // answered, or being answered in JSON
	}
	if !w.streaming {
		w.begin() // quiet since the call began: a comment is due
	}
	w.pace.beat(w.ResponseWriter, w.timer)
}

// end marks the request done with: what the call sends after goes nowhere.
func (w *callWriter) end() {
	w.mu.Lock()
	w.ended = true
	if w.timer != nil {
		w.timer.Stop()
	}
	w.mu.Unlock()
}

func (w *callWriter) WriteHeader(code int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.writeHeader(code)
}

// writeHeader writes the server's head, unless the stream is begun.
func (w *callWriter) writeHeader(code int) {
	if w.headed {
		return
	}
	w.headed = true
	h := w.Header()
	if w.ours {
		w.json = h.Get("Content-Type") == "application/json"
		return // sent already, as an event stream's
	}
	if code == http.StatusOK && w.call.cancelled.Load() && h.Get("Content-Type") == "application/json" {
		eventHeaders(h)
		w.empty = true
	}
	w.streaming = h.Get("Content-Type") == "text/event-stream"
	maps.Copy(w.ResponseWriter.Header(), h)
	w.ResponseWriter.WriteHeader(code)
}

// sseMessage is how mcp-go's server writes an event, in one Write. Its
// answer has no id line: the event store kept no event for it.
var sseMessage = []byte("event: message\ndata: ")

func (w *callWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.writeHeader(http.StatusOK)
	if w.empty {
		return len(p), nil
	}
	if w.json { // the answer, in one Write (json.Encoder)
		if answer := bytes.TrimSpace(p); !w.call.drops(answer) {
			_, err := w.ResponseWriter.Write(slices.Concat(sseMessage, answer, []byte("\n\n")))
			return len(p), err
		}
		return len(p), nil
	}
	if data, ok := bytes.CutPrefix(p, sseMessage); ok && w.call.drops(data) {
		return len(p), nil
	}
	w.pace.wrote(p)
	return w.ResponseWriter.Write(p)
}

// Flush passes on to net/http's writer, which can always flush.
func (w *callWriter) Flush() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.flush()
}

func (w *callWriter) flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap serves http.ResponseController (mcp-go sets write deadlines).
func (w *callWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
