package tools

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/ardgate/ardgate/tools/serve"
)

// refusals are frames the gateway answers at the door, and how.
var refusals = []struct {
	frame string
	want  []byte
}{
	{`[{"jsonrpc":"2.0","id":1,"method":"ping"}]`, serve.BatchRefusal},
	{` [{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"mcp_fx__echo","arguments":{"message":"hi"}}},{"jsonrpc":"2.0","method":"notifications/initialized"}]`, serve.BatchRefusal},
	{`[]`, serve.BatchRefusal},
	{`[{"jsonrpc":"2.0","id":3,"method":`, serve.BatchRefusal}, // not even JSON: still not read as one message
	{`{"jsonrpc":"2.0","id":null,"method":"ping"}`, serve.NullIDRefusal},
	{`{"method":"tools/call","params":{"name":"mcp_fx__echo","arguments":{"message":null}},"id":null,"jsonrpc":"2.0"}`, serve.NullIDRefusal},
	{`{"jsonrpc":"2.0","id":true,"method":"ping"}`, serve.IDTypeRefusal},
	{`{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}`, serve.IDTypeRefusal},
	{`{"jsonrpc":"2.0","id":[1],"method":"tools/call","params":{"name":"mcp_fx__echo","arguments":{"message":"hi"}}}`, serve.IDTypeRefusal},
	{`{"jsonrpc":"2.0","id":9007199254740993,"method":"ping"}`, serve.BigIDRefusal},
	{`{"jsonrpc":"2.0","id":-9007199254740993,"method":"ping"}`, serve.BigIDRefusal},
	{`{"jsonrpc":"2.0","id":123456789012345678901234567890,"method":"ping"}`, serve.BigIDRefusal},
	{`{"jsonrpc":"2.0","id":1e300,"method":"ping"}`, serve.BigIDRefusal},
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
	for _, params := range []string{`{"cursor":"Zm9v"}`, `{"cursor":"bogus"}`, `{"cursor":5}`, `{"cursor":"Zm9v","timeout":1}`} {
		for _, method := range []string{`"tools/list"`, `"tools\/list"`} {
			out = append(out, struct{ frame, want string }{`{"jsonrpc":"2.0","id":25,"method":` + method + `,"params":` + params + `}`,
				`{"jsonrpc":"2.0","id":25,"error":{"code":-32602,"message":"` + onePage + `"}}`})
		}
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

// listParamsIgnored are list requests with params the gateway does not
// know, which it ignores and answers with the list: Mastra sends its
// timeout in every list's params.
var listParamsIgnored = []struct{ frame, want string }{
	{`{"jsonrpc":"2.0","id":"l1","method":"tools/list","params":{"timeout":60000}}`, `"name":"mcp_fx__echo"`},
	{`{"jsonrpc":"2.0","id":"l2","method":"tools/list","params":{"cursor":null,"limit":2,"_meta":{}}}`, `"name":"mcp_fx__echo"`},
	{`{"jsonrpc":"2.0","id":"l3","method":"prompts/list","params":{"timeout":60000}}`, `"result":{"prompts":[`},
	{`{"jsonrpc":"2.0","id":"l4","method":"resources/list","params":{"timeout":60000}}`, `"result":{"resources":[`},
	{`{"jsonrpc":"2.0","id":"l5","method":"resources/templates/list","params":{"timeout":60000}}`, `"result":{"resourceTemplates":[`},
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
	for _, r := range listParamsIgnored {
		if line := c.roundTrip(t, []byte(r.frame+"\n")); !bytes.Contains(line, []byte(r.want)) {
			t.Fatalf("%s: %s", r.frame, line)
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
		for _, r := range listParamsIgnored {
			if id == "" {
				break
			}
			c.send(c.request(r.frame))
			if code, body := c.answer(); code != http.StatusOK || !strings.Contains(body, strings.ReplaceAll(r.want, "mcp_fx__", "mcp_remote__")) {
				t.Errorf("%s: %d %s", r.frame, code, body)
			}
		}
		// A body over the cap: 413, saying so (it was 400, "read request
		// body error").
		c.send(c.request(`{"jsonrpc":"2.0","id":9,"method":"ping","params":{"_meta":{"pad":"` + strings.Repeat("x", 11<<20) + `"}}}`))
		if code, body := c.answer(); code != http.StatusRequestEntityTooLarge || body != string(serve.TooLargeRefusal) {
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

// twoWays are frames that two readers could read as two messages: a
// member named twice, or named in another case as one that encoding/json
// (mcp-go's server) takes for it. Each is refused at the door with
// -32600, naming the member, under its id when that reads one way (null
// otherwise), on every method and path; before, most of them ran, and
// ran what the last member said.
var twoWays = []struct{ name, frame, id, path string }{
	{"prompts/list, id and Id", `{"jsonrpc":"2.0","id":1,"Id":2,"method":"prompts/list"}`, "null", "Id"},
	{"resources/list, id and Id", `{"jsonrpc":"2.0","id":1,"Id":2,"method":"resources/list"}`, "null", "Id"},
	{"tools/list, id and Id", `{"jsonrpc":"2.0","id":1,"Id":2,"method":"tools/list"}`, "null", "Id"},
	{"ping, id and Id", `{"jsonrpc":"2.0","id":1,"Id":2,"method":"ping"}`, "null", "Id"},
	{"tools/call, id and Id", `{"jsonrpc":"2.0","id":1,"Id":2,"method":"tools/call","params":{"name":"gateway_health","arguments":{}}}`, "null", "Id"},
	{"params and Params", `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"gateway_health","arguments":{}},"Params":{"name":"list_attached_resources","arguments":{}}}`, "3", "Params"},
	{"METHOD and method", `{"jsonrpc":"2.0","id":4,"METHOD":"ping","method":"tools/call","params":{"name":"gateway_health","arguments":{}}}`, "4", "METHOD"},
	{"a proxied tool, Params.name", `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"mcp_fx__echo","arguments":{"message":"x"}},"Params":{"name":"mcp_fx__add","arguments":{"a":1,"b":2}}}`, "5", "Params"},
	{"a proxied tool, params.Name", `{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"mcp_fx__echo","Name":"mcp_fx__add","arguments":{"message":"x","a":1,"b":2}}}`, "6", "params.Name"},
	{"id twice", `{"jsonrpc":"2.0","id":7,"id":8,"method":"ping"}`, "null", "id"},
	{"method twice", `{"jsonrpc":"2.0","id":9,"method":"ping","method":"tools/call","params":{"name":"mcp_fx__echo","arguments":{"message":"x"}}}`, "9", "method"},
	{"params.name twice", `{"jsonrpc":"2.0","id":10,"method":"tools/call","params":{"name":"mcp_fx__echo","name":"mcp_fx__add","arguments":{"message":"x","a":1,"b":2}}}`, "10", "params.name"},
	{"params.arguments twice", `{"jsonrpc":"2.0","id":11,"method":"tools/call","params":{"name":"mcp_fx__echo","arguments":{"message":"a"},"arguments":{"message":"b"}}}`, "11", "params.arguments"},
	{"params._meta.progressToken twice", `{"jsonrpc":"2.0","id":12,"method":"tools/call","params":{"name":"mcp_fx__echo","arguments":{"message":"x"},"_meta":{"progressToken":1,"progressToken":2}}}`, "12", "params._meta.progressToken"},
	{"params._meta.ProgressToken", `{"jsonrpc":"2.0","id":13,"method":"tools/call","params":{"name":"mcp_fx__echo","arguments":{"message":"x"},"_meta":{"ProgressToken":1}}}`, "13", "params._meta.ProgressToken"},
	{"call_attached_tool, its name twice", `{"jsonrpc":"2.0","id":14,"method":"tools/call","params":{"name":"call_attached_tool","arguments":{"name":"mcp_fx__echo","name":"mcp_fx__add","arguments":{}}}}`, "14", "params.arguments.name"},
	{"call_attached_tool, its name in another case", `{"jsonrpc":"2.0","id":17,"method":"tools/call","params":{"name":"call_attached_tool","arguments":{"NAME":"mcp_fx__echo","arguments":{"message":"x"}}}}`, "17", "params.arguments.NAME"},
	{"an escaped id twice", `{"jsonrpc":"2.0","id":15,"\u0069d":16,"method":"ping"}`, "null", "id"},
	{"a notification", `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1,"requestId":2}}`, "null", "params.requestId"},
}

// refusedFor checks that answer is the refusal of tc.
func refusedFor(t *testing.T, name, answer, id, path string) {
	t.Helper()
	var m struct {
		ID    json.RawMessage `json:"id"`
		Error struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.Unmarshal([]byte(answer), &m); err != nil || string(m.ID) != id || m.Error.Code != -32600 || !strings.Contains(m.Error.Message, `"`+path+`"`) {
		t.Errorf("%s: answered %.300s; want -32600 naming %q under id %s", name, answer, path, id)
	}
}

// Over stdio, on the fast path's methods and the server's alike.
func TestTwoWaysStdio(t *testing.T) {
	c := rawStdio(t, New(pinnedFixture(buildFixture(t), 10*time.Second), quietLog, Options{Version: "test"}))
	echo := c.caller(t, `"mcp_fx__echo","arguments":{"message":"ready?"}`, `"text":"ready?"`)
	ping := `{"jsonrpc":"2.0","id":"next","method":"ping"}` + "\n"
	for _, tc := range twoWays {
		refusedFor(t, tc.name, string(c.roundTrip(t, []byte(tc.frame+"\n"+ping))), tc.id, tc.path)
		if line := c.next(t); !bytes.Contains(line, []byte(`"id":"next"`)) { // and nothing else
			t.Fatalf("after %s: %s", tc.name, line)
		}
	}
	echo()
}

// Over streamable HTTP, with 400, on a connection the gateway keeps
// (keepalive.go) and on net/http's, and with no session.
func TestTwoWaysHTTP(t *testing.T) {
	tg, _, sid := keptGateway(t, HTTPOptions{})
	c := dialRaw(t, tg, sid)
	noSession := dialRaw(t, tg, "")
	for i, tc := range twoWays {
		frame := strings.ReplaceAll(tc.frame, "mcp_fx__", "mcp_remote__")
		c.echo(100+i, "kept") // the connection is served in place
		for _, conn := range []*rawConn{c, noSession} {
			conn.send(conn.request(frame))
			code, body := conn.answer()
			if code != http.StatusBadRequest {
				t.Errorf("%s, session %q: %d %s", tc.name, conn.sid, code, body)
			}
			refusedFor(t, tc.name, body, tc.id, tc.path)
		}
	}
	c.echo(99, "after them")
}

// nextWithin is the client's next answer, which must come within d.
func (c *rawClient) nextWithin(t *testing.T, d time.Duration) string {
	t.Helper()
	got := make(chan string, 1)
	go func() {
		line, err := c.out.ReadString('\n')
		if err != nil {
			line = "read: " + err.Error()
		}
		got <- line
	}()
	select {
	case line := <-got:
		return strings.TrimSpace(line)
	case <-time.After(d):
		t.Fatalf("no answer within %v", d)
		return ""
	}
}

const notInitializedWhy = "the session is not initialized: send initialize first"

// Over stdio, a request sent before initialize is refused at once,
// saying that initialize comes first; ping, and server/discover, which
// mcp-go's clients send first, are answered, and a notification goes
// unanswered. A call of a pinned server's tool waited for a start that
// never came, for good: 2,000 of them held 31 MB. Now a flood of them is
// answered and holds nothing, and the session opens as usual after it.
func TestBeforeInitialize(t *testing.T) {
	c := rawPipes(t, New(pinnedFixture(buildFixture(t), 10*time.Second), quietLog, Options{Version: "test", PinnedListWait: 20 * time.Second}))
	refused := func(id int) string {
		return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"error":{"code":-32600,"message":"`+notInitializedWhy+`, and notifications/initialized once it is answered; before that only ping is answered"}}`, id)
	}
	for _, tc := range []struct{ name, frame, want string }{
		{"a pinned server's tool", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"mcp_fx__echo","arguments":{"message":"early"}}}`, refused(1)},
		{"a gateway tool", `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"gateway_health","arguments":{}}}`, refused(2)},
		{"tools/list", `{"jsonrpc":"2.0","id":3,"method":"tools/list"}`, refused(3)},
		{"prompts/list", `{"jsonrpc":"2.0","id":4,"method":"prompts/list"}`, refused(4)},
		{"resources/read", `{"jsonrpc":"2.0","id":5,"method":"resources/read","params":{"uri":"fixture://readme"}}`, refused(5)},
		{"logging/setLevel", `{"jsonrpc":"2.0","id":6,"method":"logging/setLevel","params":{"level":"debug"}}`, refused(6)},
		{"a notification, then ping", `{"jsonrpc":"2.0","method":"notifications/roots/list_changed"}` + "\n" + `{"jsonrpc":"2.0","id":7,"method":"ping"}`, `{"jsonrpc":"2.0","id":7,"result":{}}`},
	} {
		if _, err := c.w.Write([]byte(tc.frame + "\n")); err != nil {
			t.Fatal(err)
		}
		if got := c.nextWithin(t, 5*time.Second); got != tc.want {
			t.Errorf("%s: %s", tc.name, got)
		}
	}
	// Answered by the server, or told the versions served.
	for _, tc := range []struct{ frame, want string }{
		{`{"jsonrpc":"2.0","id":8,"method":"server/discover"}`, `"id":8`},
		{`{"jsonrpc":"2.0","id":10,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`, "2025-11-25"},
	} {
		if _, err := c.w.Write([]byte(tc.frame + "\n")); err != nil {
			t.Fatal(err)
		}
		if got := c.nextWithin(t, 5*time.Second); !strings.Contains(got, tc.want) || strings.Contains(got, notInitializedWhy) {
			t.Errorf("%s: %s", tc.frame, got)
		}
	}

	before := runtime.NumGoroutine()
	const flood = 2000
	call := []byte(`{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"mcp_fx__echo","arguments":{"message":"early"}}}` + "\n")
	go func() { _, _ = c.w.Write(bytes.Repeat(call, flood)) }()
	for i := range flood {
		if got := c.nextWithin(t, 10*time.Second); got != refused(9) {
			t.Fatalf("call %d of the flood: %s", i, got)
		}
	}
	if n := runtime.NumGoroutine(); n > before+5 {
		t.Errorf("%d goroutines after a flood of calls answered, %d before", n, before)
	}

	c.roundTrip(t, []byte(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}`+"\n"))
	if _, err := c.w.Write([]byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}` + "\n")); err != nil {
		t.Fatal(err)
	}
	c.caller(t, `"mcp_fx__echo","arguments":{"message":"initialized"}`, `"text":"initialized"`)
}

// A call sent after an initialize that the server refused, which starts
// no pinned server, waits for one at most pinned_list_wait, once; it
// waited again, for good.
func TestAfterFailedInitialize(t *testing.T) {
	c := rawPipes(t, New(pinnedFixture(buildFixture(t), 10*time.Second), quietLog, Options{Version: "test", PinnedListWait: time.Second}))
	init := `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":"none","clientInfo":{"name":"t","version":"0"}}}`
	if got := string(c.roundTrip(t, []byte(init+"\n"))); !strings.Contains(got, `"error"`) {
		t.Fatalf("initialize: %s", got)
	}
	if _, err := c.w.Write([]byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"mcp_fx__echo","arguments":{"message":"late"}}}` + "\n")); err != nil {
		t.Fatal(err)
	}
	if got := c.nextWithin(t, 5*time.Second); !strings.Contains(got, `"id":1`) {
		t.Fatalf("the call: %s", got)
	}
}

// The gateway's own tools read their arguments' names exactly too: one
// named in another case, which encoding/json took for the argument (the
// last of two), is an unknown argument that says so.
func TestArgumentsReadExactly(t *testing.T) {
	s := newGateway(t, 10*time.Second).connect(t)
	for _, tc := range []struct {
		tool string
		args map[string]any
		name string
	}{
		{"attach_resource", map[string]any{"urn": "urn:air:ardgate.test:mcp:a", "URN": "urn:air:ardgate.test:mcp:b"}, "URN"},
		{"discover_resources", map[string]any{"Text": "fixture"}, "Text"},
		{"detach_resource", map[string]any{"NAME": "fixture"}, "NAME"},
	} {
		res := s.call(tc.tool, tc.args)
		if s.code(res) != "invalid_arguments" || !strings.Contains(firstText(res), `unknown argument "`+tc.name+`"`) {
			t.Errorf("%s %v: %s %s", tc.tool, tc.args, s.code(res), firstText(res))
		}
	}
}
