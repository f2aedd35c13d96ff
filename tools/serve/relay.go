package serve

import (
	"bytes"
	"net/http"
)

// RelayMethod marks, over HTTP, a notification that carries a request
// for the client: requestWriter writes the request in its place.
const RelayMethod = "ardgate/relay"

// relayEvent is how mcp-go's server writes a notification of
// RelayMethod, up to the request in it: an event's data, after any id line.
var relayEvent = []byte(`data: {"jsonrpc":"2.0","method":"` + RelayMethod + `","params":{"request":`)

// requestWriter is the response writer of a request mcp-go's server
// answers over HTTP (a GET's event stream above all). An event carrying
// a request for the client (a notification of RelayMethod, which the tool
// surface sends) is written as that request. mcp-go writes each event in
// one Write, replayed ones too.
type requestWriter struct {
	http.ResponseWriter
}

func (w requestWriter) Write(p []byte) (int, error) {
	i := bytes.Index(p, relayEvent)
	if i < 0 {
		return w.ResponseWriter.Write(p)
	}
	end := bytes.LastIndex(p, []byte("}}\n\n"))
	if end < i+len(relayEvent) {
		return w.ResponseWriter.Write(p)
	}
	out := make([]byte, 0, len(p))
	out = append(append(out, p[:i]...), "data: "...)
	out = append(append(out, p[i+len(relayEvent):end]...), "\n\n"...)
	if _, err := w.ResponseWriter.Write(out); err != nil {
		return 0, err
	}
	return len(p), nil
}

// Flush flushes, as the event stream needs.
func (w requestWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap gives http.ResponseController the writer beneath.
func (w requestWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
