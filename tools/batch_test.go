package tools

import (
	"bytes"
	"net/http"
	"testing"
	"time"
)

var batches = []string{
	`[{"jsonrpc":"2.0","id":1,"method":"ping"}]`,
	` [{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"mcp_fx__echo","arguments":{"message":"hi"}}},{"jsonrpc":"2.0","method":"notifications/initialized"}]`,
	`[]`,
	`[{"jsonrpc":"2.0","id":3,"method":`, // not even JSON: still not read as one message
}

// A JSON-RPC batch over stdio gets one error that says batches are not
// taken, not a parse error, and the session goes on.
func TestBatchRefusedStdio(t *testing.T) {
	c := rawStdio(t, New(pinnedFixture(buildFixture(t), 10*time.Second), quietLog, Options{Version: "test"}))
	echo := c.caller(t, `"mcp_fx__echo","arguments":{"message":"ready?"}`, `"text":"ready?"`)
	for _, b := range batches {
		line := c.roundTrip(t, []byte(b+"\n"))
		if !bytes.Equal(bytes.TrimSpace(line), batchRefusal) {
			t.Errorf("%s: %s", b, line)
		}
		echo()
	}
}

// The same over HTTP, with a session and without: 400 and the error.
func TestBatchRefusedHTTP(t *testing.T) {
	tg, _, sid := keptGateway(t, HTTPOptions{})
	for _, id := range []string{sid, ""} {
		c := dialRaw(t, tg, id)
		for _, b := range batches {
			c.send(c.request(b))
			if code, body := c.answer(); code != http.StatusBadRequest || body != string(batchRefusal) {
				t.Errorf("session %q, %s: %d %s", id, b, code, body)
			}
		}
		if id != "" {
			c.echo(7, "after the batches")
		}
	}
}
