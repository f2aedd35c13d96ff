package serve

import (
	"bytes"
	"testing"
)

// The door reads a frame's members exactly, and refuses one named twice
// or, among those that encoding/json would take for a member the gateway
// or mcp-go's server reads, in another case; deeper down, or unknown,
// a name is the client's own.
func TestMemberRefusal(t *testing.T) {
	for _, c := range []struct {
		frame string
		path  string // in the refusal; "" for none
	}{
		{`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, ""},
		{`{"jsonrpc":"2.0","id":1,"method":"tools/list","Method":"ping"}`, "Method"},
		{`{"jsonrpc":"2.0","id":1,"method":"tools/list","Params":{"cursor":"!!"}}`, "Params"},
		{`{"jsonrpc":"2.0","id":1,"method":"tools/list","paramſ":{"cursor":"!!"}}`, "paramſ"},
		{`{"jsonrpc":"2.0","id":1,"ID":2,"method":"tools/list"}`, "ID"},
		{`{"JSONRPC":"1.0","jsonrpc":"2.0","id":1,"method":"tools/list"}`, "JSONRPC"},
		{`{"jsonrpc":"2.0","id":1,"method":"tools/list","other":{"Method":"x"}}`, ""},
		{`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"Name":"x"}}`, ""}, // no member of tools/list's
		{`{"jsonrpc":"2.0","id":1,"method":"prompts/get","params":{"Name":"x"}}`, "params.Name"},
		{`{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"URI":"x"}}`, "params.URI"},
		{`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"ProtocolVersion":"2025-11-25"}}`, "params.ProtocolVersion"},
		{`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"RequestId":1}}`, "params.RequestId"},
		{`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"mcp_fx__echo","arguments":{"Message":"a","message":"b"}}}`, ""},
		{`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"call_attached_tool","arguments":{"Name":"mcp_fx__echo"}}}`, "params.arguments.Name"},
		{`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"mcp_fx__echo","arguments":{"Name":"a"}}}`, ""},
		{`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"mcp_fx__echo","_meta":{"ProgressToken":1}}}`, "params._meta.ProgressToken"},
		{`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"mcp_fx__echo","arguments":{"a":{"b":1,"b":2}}}}`, "params.arguments.a.b"},
	} {
		got := memberRefusal([]byte(c.frame))
		if c.path == "" {
			if got != nil {
				t.Errorf("%s: refused: %s", c.frame, got)
			}
			continue
		}
		if !bytes.Contains(got, []byte(`"code":-32600`)) || !bytes.Contains(got, []byte(`\"`+c.path+`\"`)) {
			t.Errorf("%s: %s; want a refusal naming %s", c.frame, got, c.path)
		}
	}
}
