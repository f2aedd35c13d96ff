package attach

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

// A raw call's line is what encoding/json writes, with the argument bytes
// as the client sent them, and the gateway's progress token and trace
// context when it has them; with the client's _meta, its members but
// those the gateway sets (its order is the client's: the same JSON).
func TestRawCallLine(t *testing.T) {
	u := &upstream{}
	trace := map[string]any{"traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", "tracestate": "k=v"}
	const clientMeta = `{"progressToken":"theirs","zeta":{"v":[1]},"traceparent":"00-client-01","tracestate":"client=1","app/key":"x\"y"}`
	for _, c := range []struct {
		tool, args, progress string
		trace                map[string]any
		meta                 string
	}{
		{"echo", `{"message":"hi"}`, "", nil, ""},
		{"weird \"name\" <é>", `{"a":[1,2,{"b":null}]}`, "", nil, ""},
		{"tab\tand\\slash", `{}`, "", nil, ""},
		{"ünïcode", `{}`, "", nil, ""},
		{"no_args", ``, "", nil, ""},
		{"echo", `{"message":"hi"}`, "ardgate-progress-7", nil, ""},
		{"no_args", ``, "ardgate-progress-8", nil, ""},
		{"echo", `{"message":"hi"}`, "", trace, ""},
		{"echo", `{"message":"hi"}`, "ardgate-progress-9", trace, ""},
		{"echo", `{"message":"hi"}`, "", nil, clientMeta},
		{"echo", `{"message":"hi"}`, "ardgate-progress-10", trace, clientMeta},
		{"echo", `{"message":"hi"}`, "", map[string]any{"traceparent": trace["traceparent"]}, clientMeta}, // the client's tracestate goes too
		{"no_args", ``, "ardgate-progress-11", nil, `{"progressToken":"theirs"}`},
	} {
		var args, meta json.RawMessage
		if c.args != "" {
			args = json.RawMessage(c.args)
		}
		if c.meta != "" {
			meta = json.RawMessage(c.meta)
		}
		call := u.rawCall(c.tool, args, meta)
		call.progress, call.trace = c.progress, c.trace
		want, err := json.Marshal(call.request())
		if err != nil {
			t.Fatal(err)
		}
		same := func(got []byte) bool {
			if meta == nil {
				return string(got) == string(want)
			}
			var a, b any
			return json.Unmarshal(got, &a) == nil && json.Unmarshal(want, &b) == nil && reflect.DeepEqual(a, b)
		}
		if got := call.appendLine([]byte("kept")); !bytes.HasPrefix(got, []byte("kept")) || !same(got[4:]) {
			t.Errorf("line = %s\n want kept%s", got, want)
		}
		got := call.line()
		if !same(got) {
			t.Errorf("line() = %s\n want %s", got, want)
		}
		if meta != nil {
			var sent struct {
				Params struct {
					Meta map[string]any `json:"_meta"`
				}
			}
			_ = json.Unmarshal(got, &sent)
			m := sent.Params.Meta
			switch {
			case m["progressToken"] != nilIfEmpty(c.progress):
				t.Errorf("progressToken sent: %v, want the gateway's %q", m["progressToken"], c.progress)
			case c.trace == nil && strings.Contains(c.meta, "traceparent") && (m["traceparent"] != "00-client-01" || m["tracestate"] != "client=1"),
				c.trace != nil && (m["traceparent"] != c.trace["traceparent"] || m["tracestate"] != c.trace["tracestate"]):
				t.Errorf("trace context sent: %v %v", m["traceparent"], m["tracestate"])
			case strings.Contains(c.meta, "zeta") && (m["app/key"] != `x"y` || m["zeta"] == nil):
				t.Errorf("the client's members: %v", m)
			}
		}
		if call.key != call.requestID().String() {
			t.Errorf("key %q, the id's own %q", call.key, call.requestID().String())
		}
	}
	spaced := json.RawMessage(`{ "message" : "hi" }`)
	got := u.rawCall("echo", spaced, nil).appendLine(nil)
	if !strings.Contains(string(got), `"arguments":{ "message" : "hi" }}`) {
		t.Errorf("the arguments were not passed as sent: %s", got)
	}
}

// nilIfEmpty is s, or nil for "", as a decoded _meta holds a member.
func nilIfEmpty(s string) any {
	if s == "" {
		return nil
	}
	return s
}
