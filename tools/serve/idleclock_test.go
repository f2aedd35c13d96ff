package serve

import (
	"log/slog"
	"slices"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
)

// What the server sends a session with the answer to the gateway's
// idle-clock ping, which the gateway drops, goes back to the session's
// queue: notifications only, from an event stream or a JSON answer.
func TestRequeue(t *testing.T) {
	log := slog.New(slog.DiscardHandler)
	s := &Session{}
	s.Requeue([]byte("data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/tools/list_changed\"}\n"), log) // no queue yet: nothing
	queue := make(chan mcp.JSONRPCNotification, 4)
	send := (chan<- mcp.JSONRPCNotification)(queue)
	s.Notices.Store(&send)
	s.Requeue([]byte(`id: 1
event: message
data: {"jsonrpc":"2.0","method":"notifications/tools/list_changed"}

id: 2
event: message
data: {"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":{"id":7}}}

id: 3
event: message
data: {"jsonrpc":"2.0","id":"ardgate-idle-clock","result":{}}

`), log)
	s.Requeue([]byte(`{"jsonrpc":"2.0","id":"ardgate-idle-clock","result":{}}`), log)
	close(queue)
	var got []string
	for n := range queue {
		got = append(got, n.Method)
	}
	if want := []string{"notifications/tools/list_changed", "notifications/message"}; !slices.Equal(got, want) {
		t.Errorf("queued again: %v, want %v", got, want)
	}
}
