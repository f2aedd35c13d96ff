package serve

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// An event carries one message on one data line: the line breaks of an
// upstream's indented JSON become spaces, and the message stays the same
// JSON.
func TestAppendEvent(t *testing.T) {
	for _, msg := range []string{
		`{"jsonrpc":"2.0","id":1,"result":{}}`,
		"{\n  \"jsonrpc\": \"2.0\",\r\n  \"id\": 1,\r  \"result\": {\"text\": \"a\\nb\"}\n}",
	} {
		ev := string(appendEvent(nil, []byte(msg)))
		data, ok := strings.CutPrefix(ev, "event: message\ndata: ")
		if !ok || !strings.HasSuffix(data, "\n\n") || strings.ContainsAny(strings.TrimSuffix(data, "\n\n"), "\r\n") {
			t.Fatalf("event %q", ev)
		}
		var want, got any
		if json.Unmarshal([]byte(msg), &want) != nil || json.Unmarshal([]byte(strings.TrimSuffix(data, "\n\n")), &got) != nil || fmt.Sprint(want) != fmt.Sprint(got) {
			t.Fatalf("event %q does not carry %q", ev, msg)
		}
		// In parts, as a result is written, it is the same event.
		if parts := string(appendEvent(nil, []byte(msg[:7]), []byte(msg[7:20]), []byte(msg[20:]))); parts != ev {
			t.Fatalf("in parts: %q, whole: %q", parts, ev)
		}
	}
}
