package tools

import (
	"bytes"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"
)

// refusals are frames the gateway answers at the door, and how.
var refusals = []struct {
	frame string
	want  []byte
}{
	{`[{"jsonrpc":"2.0","id":1,"method":"ping"}]`, batchRefusal},
	{` [{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"mcp_fx__echo","arguments":{"message":"hi"}}},{"jsonrpc":"2.0","method":"notifications/initialized"}]`, batchRefusal},
	{`[]`, batchRefusal},
	{`[{"jsonrpc":"2.0","id":3,"method":`, batchRefusal}, // not even JSON: still not read as one message
	{`{"jsonrpc":"2.0","id":null,"method":"ping"}`, nullIDRefusal},
	{`{"method":"tools/call","params":{"name":"mcp_fx__echo","arguments":{"message":null}},"id":null,"jsonrpc":"2.0"}`, nullIDRefusal},
	{`{"jsonrpc":"2.0","id":true,"method":"ping"}`, idTypeRefusal},
	{`{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}`, idTypeRefusal},
	{`{"jsonrpc":"2.0","id":[1],"method":"tools/call","params":{"name":"mcp_fx__echo","arguments":{"message":"hi"}}}`, idTypeRefusal},
	{`{"jsonrpc":"2.0","id":9007199254740993,"method":"ping"}`, bigIDRefusal},
	{`{"jsonrpc":"2.0","id":-9007199254740993,"method":"ping"}`, bigIDRefusal},
	{`{"jsonrpc":"2.0","id":123456789012345678901234567890,"method":"ping"}`, bigIDRefusal},
	{`{"jsonrpc":"2.0","id":1e300,"method":"ping"}`, bigIDRefusal},
	{`{"jsonrpc":"2.0"}`, []byte(`{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"a message must have a method (a request or a notification), or an id with a result or an error (a response)"}}`)},
	{`{}`, []byte(`{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"a message must have a method (a request or a notification), or an id with a result or an error (a response)"}}`)},
	{`{"jsonrpc":"2.0","id":10}`, []byte(`{"jsonrpc":"2.0","id":10,"error":{"code":-32600,"message":"a message with an id must have a method (a request), or a result or an error (a response)"}}`)},
	{`{"jsonrpc":"2.0","id":"m","method":5}`, []byte(`{"jsonrpc":"2.0","id":"m","error":{"code":-32600,"message":"a request's method must be a string"}}`)},
	{`{"jsonrpc":"2.0","id":true,"method":5}`, []byte(`{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"a request's method must be a string"}}`)},
	{`{"jsonrpc":"2.0","id":11,"method":"tools/call","params":"mcp_fx__echo"}`, paramsRefusal(11)},
	{`{"jsonrpc":"2.0","id":12,"method":"ping","params":[1]}`, paramsRefusal(12)},
	{`{"jsonrpc":"2.0","id":13,"method":"tools/list","params":5}`, paramsRefusal(13)},
	// JSON, but no object: an invalid request, not a parse error.
	{`"str"`, notObjectRefusal},
	{`42`, notObjectRefusal},
	{`null`, notObjectRefusal},
}

var notObjectRefusal = []byte(`{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"a JSON-RPC message is an object"}}`)

func paramsRefusal(id int) []byte {
	return []byte(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"error":{"code":-32602,"message":"a request's params must be an object"}}`, id))
}

// paramRefusals are requests whose params the gateway refuses in a
// session, and how they are answered: calls that name no tool, and levels
// that are none of MCP's.
var paramRefusals = func() (out []struct{ frame, want string }) {
	for _, f := range []string{
		`{"jsonrpc":"2.0","id":21,"method":"tools/call","params":{"name":5,"arguments":{}}}`,
		`{"jsonrpc":"2.0","id":21,"method":"tools/call","params":{"arguments":{"message":"x"}}}`,
		`{"jsonrpc":"2.0","id":21,"method":"tools/call","params":{"name":""}}`,
		`{"jsonrpc":"2.0","id":21,"method":"tools/call","params":null}`,
		`{"jsonrpc":"2.0","id":21,"method":"tools/call"}`,
	} {
		out = append(out, struct{ frame, want string }{f, `{"jsonrpc":"2.0","id":21,"error":{"code":-32602,"message":"tools/call needs params.name, the name of the tool to call, as a string (tools/list lists them)"}}`})
	}
	for params, got := range map[string]string{`{"level":3}`: "3", `{}`: "none", `{"level":null}`: "none", `{"level":"verbose"}`: `\"verbose\"`, `{"level":"Debug"}`: `\"Debug\"`} {
		out = append(out, struct{ frame, want string }{`{"jsonrpc":"2.0","id":22,"method":"logging/setLevel","params":` + params + `}`,
			`{"jsonrpc":"2.0","id":22,"error":{"code":-32602,"message":"logging/setLevel needs params.level, one of debug, info, notice, warning, error, critical, alert, emergency; got ` + got + `"}}`})
	}
	out = append(out, struct{ frame, want string }{`{"jsonrpc":"2.0","id":23,"method":"logging/setLevel"}`,
		`{"jsonrpc":"2.0","id":23,"error":{"code":-32602,"message":"logging/setLevel needs params.level, one of debug, info, notice, warning, error, critical, alert, emergency; got none"}}`})
	for _, f := range initsRefused {
		out = append(out, struct{ frame, want string }{f, initRefused})
	}
	// A tools/list cursor the gateway never gave: mcp-go's server read it
	// as a tool's name in base64 and listed the tools after it ("Zm9v":
	// "foo"), or said "illegal base64 data at input byte 4".
	for _, params := range []string{`{"cursor":"Zm9v"}`, `{"cursor":"bogus"}`, `{"cursor":5}`, `{"limit":2}`} {
		for _, method := range []string{`"tools/list"`, `"tools\/list"`} {
			out = append(out, struct{ frame, want string }{`{"jsonrpc":"2.0","id":25,"method":` + method + `,"params":` + params + `}`,
				`{"jsonrpc":"2.0","id":25,"error":{"code":-32602,"message":"` + onePage + `"}}`})
		}
		// Params of another case, which the server reads as params.
		out = append(out, struct{ frame, want string }{`{"jsonrpc":"2.0","id":25,"method":"tools/list","Params":` + params + `}`,
			`{"jsonrpc":"2.0","id":25,"error":{"code":-32602,"message":"` + onePage + `"}}`})
	}
	return out
}()

// initsRefused are initialize requests without params.protocolVersion,
// refused with initRefused with a session or without (mcp-go's server
// answered them with 2025-03-26, a version the client never asked for).
var initsRefused = []string{
	`{"jsonrpc":"2.0","id":24,"method":"initialize"}`,
	`{"jsonrpc":"2.0","id":24,"method":"initialize","params":{}}`,
	`{"jsonrpc":"2.0","id":24,"method":"initialize","params":{"protocolVersion":20251125,"capabilities":{},"clientInfo":{"name":"c","version":"1"}}}`,
}

const initRefused = `{"jsonrpc":"2.0","id":24,"error":{"code":-32602,"message":"initialize needs params.protocolVersion, the newest MCP version the client speaks (such as 2025-11-25), with params.capabilities and params.clientInfo"}}`

// dropped are frames the gateway takes no further and leaves unanswered:
// an error answering a request of the gateway's, which makes none of its
// clients (mcp-go's server answered it with "Method not found").
var dropped = []string{`{"jsonrpc":"2.0","id":"x","error":{"code":1,"message":"m"}}`}

// escapedNames are calls of tools the session has, their names escaped:
// served, not refused as unknown.
var escapedNames = []string{
	`{"jsonrpc":"2.0","id":"e1","method":"tools/call","params":{"name":"\u006cist_attached_resources","arguments":{}}}`,
	`{"jsonrpc":"2.0","id":"e2","method":"tools/call","params":{"name":"mcp_fx__\u0065cho","arguments":{"message":"escaped"}}}`,
}

// idsKept are request ids the gateway takes on mcp-go's path, and answers
// with the same value.
var idsKept = []string{`9007199254740992`, `-9007199254740992`, `"9007199254740993"`, `0`, `1.5`}

// A JSON-RPC batch, or a request with an id refused, over stdio gets one error
// that says what is wrong, not a parse error or silence, and the session
// goes on; a notification with a null in it is not refused.
func TestRefusedStdio(t *testing.T) {
	c := rawStdio(t, New(pinnedFixture(buildFixture(t), 10*time.Second), quietLog, Options{Version: "test"}))
	echo := c.caller(t, `"mcp_fx__echo","arguments":{"message":"ready?"}`, `"text":"ready?"`)
	// Each frame goes with a ping, so that a frame left unanswered shows
	// as the ping's answer coming first.
	ping := `{"jsonrpc":"2.0","id":"next","method":"ping"}` + "\n"
	for _, r := range refusals {
		line := c.roundTrip(t, []byte(r.frame+"\n"+ping))
		if !bytes.Equal(bytes.TrimSpace(line), r.want) {
			t.Fatalf("%s: %s", r.frame, line)
		}
		if line := c.next(t); !bytes.Contains(line, []byte(`"id":"next"`)) {
			t.Fatalf("after %s: %s", r.frame, line)
		}
	}
	for _, frame := range dropped {
		if line := c.roundTrip(t, []byte(frame+"\n"+ping)); !bytes.Contains(line, []byte(`"id":"next"`)) {
			t.Fatalf("after %s: %s", frame, line)
		}
	}
	for _, id := range idsKept {
		if line := c.roundTrip(t, []byte(`{"jsonrpc":"2.0","id":`+id+`,"method":"ping"}`+"\n")); !bytes.Contains(line, []byte(`"id":`+id+`,"result":{}`)) {
			t.Fatalf("ping %s: %s", id, line)
		}
	}
	for _, r := range paramRefusals {
		if line := c.roundTrip(t, []byte(r.frame+"\n")); string(bytes.TrimSpace(line)) != r.want {
			t.Fatalf("%s: %s", r.frame, line)
		}
	}
	for _, frame := range escapedNames {
		if line := c.roundTrip(t, []byte(frame+"\n")); !bytes.Contains(line, []byte(`"result"`)) || bytes.Contains(line, []byte(`"isError":true`)) {
			t.Fatalf("%s: %s", frame, line)
		}
	}
	// A notification with a null in it is not refused: the ping's answer
	// is the next frame.
	line := c.roundTrip(t, []byte(`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"x","progress":1,"message":null}}`+"\n"+ping))
	if !bytes.Contains(line, []byte(`"id":"next"`)) {
		t.Fatalf("after a notification: %s", line)
	}
	echo()
}

// The same over HTTP, with a session and without: 400 and the error; 413
// for a body over the cap.
func TestRefusedHTTP(t *testing.T) {
	tg, _, sid := keptGateway(t, HTTPOptions{})
	for _, id := range []string{sid, ""} {
		c := dialRaw(t, tg, id)
		for _, r := range refusals {
			c.send(c.request(strings.ReplaceAll(r.frame, "mcp_fx__", "mcp_remote__")))
			if code, body := c.answer(); code != http.StatusBadRequest || body != string(r.want) {
				t.Errorf("session %q, %s: %d %s", id, r.frame, code, body)
			}
		}
		for _, frame := range dropped {
			c.send(c.request(frame))
			if code, body := c.answer(); code != http.StatusAccepted || body != "" {
				t.Errorf("session %q, %s: %d %s", id, frame, code, body)
			}
		}
		for _, frame := range initsRefused {
			if id != "" {
				break // in paramRefusals
			}
			c.send(c.request(frame))
			if code, body := c.answer(); code != http.StatusOK || body != initRefused {
				t.Errorf("no session, %s: %d %s", frame, code, body)
			}
		}
		for _, r := range paramRefusals {
			if id == "" {
				break // the server says first that there is no session
			}
			c.send(c.request(r.frame))
			if code, body := c.answer(); code != http.StatusOK || body != r.want {
				t.Errorf("%s: %d %s", r.frame, code, body)
			}
		}
		for _, frame := range escapedNames {
			if id == "" {
				break
			}
			c.send(c.request(strings.ReplaceAll(frame, "mcp_fx__", "mcp_remote__")))
			if code, body := c.answer(); code != http.StatusOK || !strings.Contains(body, `"result"`) || strings.Contains(body, `"isError":true`) {
				t.Errorf("%s: %d %s", frame, code, body)
			}
		}
		// A body over the cap: 413, saying so (it was 400, "read request
		// body error").
		c.send(c.request(`{"jsonrpc":"2.0","id":9,"method":"ping","params":{"_meta":{"pad":"` + strings.Repeat("x", 11<<20) + `"}}}`))
		if code, body := c.answer(); code != http.StatusRequestEntityTooLarge || body != string(tooLargeRefusal) {
			t.Errorf("session %q, an 11 MiB body: %d %.200s", id, code, body)
		}
		if id != "" {
			c = dialRaw(t, tg, id) // net/http closes a connection whose body it did not read
			c.echo(7, "after the refusals")
		}
	}
}

// Over stdio, lines of nothing but white space are skipped, a byte order
// mark before a frame is dropped, on the fast path and the server's, and
// a last frame that the stream ends instead of a newline is answered.
// Before, each blank line got a parse error, and the other frames were
// lost.
func TestStdioFraming(t *testing.T) {
	c := rawStdio(t, New(pinnedFixture(buildFixture(t), 10*time.Second), quietLog, Options{Version: "test"}))
	c.caller(t, `"mcp_fx__echo","arguments":{"message":"ready?"}`, `"text":"ready?"`)
	bom := "\xef\xbb\xbf"
	for _, tc := range []struct{ frame, want string }{
		{"\n\r\n \t \n" + bom + `{"jsonrpc":"2.0","id":"bom","method":"ping"}` + "\n", `{"jsonrpc":"2.0","id":"bom","result":{}}`},
		{bom + `{"jsonrpc":"2.0","id":"fast","method":"tools/call","params":{"name":"mcp_fx__echo","arguments":{"message":"after a mark"}}}` + "\r\n", `"text":"after a mark"`},
	} {
		if line := c.roundTrip(t, []byte(tc.frame)); !bytes.Contains(line, []byte(tc.want)) {
			t.Fatalf("%q: answered %s", tc.frame, line)
		}
	}
	if _, err := c.w.Write([]byte(`{"jsonrpc":"2.0","id":"last","method":"ping"}`)); err != nil {
		t.Fatal(err)
	}
	_ = c.w.Close()
	if line := c.next(t); !bytes.Contains(line, []byte(`"id":"last","result":{}`)) {
		t.Fatalf("the last frame, ended by the stream: %s", line)
	}
}
