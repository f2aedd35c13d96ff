package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
)

// A call's _meta goes on to the upstream as the client sent it, but for
// its progress token, for which the gateway's own goes: on every path, over
// HTTP (the fast path on net/http's connections and on one the gateway
// keeps, the server's path, call_attached_tool) and over stdio (the fast
// path to a stdio server, and mcp-go's server). It went no further than
// the gateway: trace context, an app's keys, a related task's id were lost.
func TestCallMetaPassesOn(t *testing.T) {
	// wantMeta checks the _meta the fixture's meta tool reports in res.
	wantMeta := func(t *testing.T, how string, res []byte, token bool) {
		t.Helper()
		var out struct {
			Result struct {
				StructuredContent struct {
					Meta map[string]any `json:"meta"`
				} `json:"structuredContent"`
			} `json:"result"`
		}
		if err := json.Unmarshal(res, &out); err != nil {
			t.Fatalf("%s: %v in %s", how, err, res)
		}
		m := out.Result.StructuredContent.Meta
		related, _ := m["io.modelcontextprotocol/related-task"].(map[string]any)
		tok, hasToken := m["progressToken"].(string)
		if m["app/key"] != "v" || related["taskId"] != "t-1" || hasToken != token || hasToken && (tok == "p" || !strings.HasPrefix(tok, "ardgate-progress-")) {
			t.Errorf("%s: the upstream got _meta %v", how, m)
		}
	}
	const meta = `"_meta":{"app/key":"v","io.modelcontextprotocol/related-task":{"taskId":"t-1"}%s}`

	up := newRecordingUpstream(t)
	tg := newGateway(t, 10*time.Second, remoteEntry(fastURN, up.URL))
	s := tg.connect(t)
	if res := s.call("attach_resource", map[string]any{"urn": fastURN, "name": "up"}); res.IsError {
		t.Fatal(firstText(res))
	}
	sid := s.c.GetSessionId()
	for i, c := range []struct {
		how, method, name, args string
		token                   bool
	}{
		{"the fast path", "tools/call", "mcp_up__meta", "{}", false},
		{"the fast path, with a token", "tools/call", "mcp_up__meta", "{}", true},
		{"the server's path", `tools\/call`, "mcp_up__meta", "{}", true},
		{"call_attached_tool", "tools/call", "call_attached_tool", `{"name":"mcp_up__meta"}`, true},
	} {
		extra := ""
		if c.token {
			extra = `,"progressToken":"p"`
		}
		body := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"%s","params":{"name":%q,"arguments":%s,`+meta+`}}`, 40+i, c.method, c.name, c.args, extra)
		code, answer := postMCP(t, tg.url, sid, body)
		if code != http.StatusOK {
			t.Fatalf("%s: %d %s", c.how, code, answer)
		}
		if data, ok := strings.CutPrefix(answer[strings.LastIndex(answer, "data: ")+1:], "ata: "); ok {
			answer = data // an event stream's answer, last
		}
		wantMeta(t, c.how, []byte(answer), c.token)
	}
	http.DefaultClient.CloseIdleConnections()

	// Over stdio, as mcp-go's client sends it.
	cs := serveStdio(t, New(pinnedFixture(buildFixture(t), 10*time.Second), quietLog, Options{Version: "test"}))
	for _, name := range []string{"mcp_fx__meta", "call_attached_tool"} {
		req := mcp.CallToolRequest{}
		req.Params.Name, req.Params.Arguments = name, map[string]any{}
		if name == "call_attached_tool" {
			req.Params.Arguments = map[string]any{"name": "mcp_fx__meta"}
		}
		req.Params.Meta = &mcp.Meta{AdditionalFields: map[string]any{"app/key": "v", "io.modelcontextprotocol/related-task": map[string]any{"taskId": "t-1"}}}
		res, err := cs.CallTool(context.Background(), req)
		if err != nil || res.IsError {
			t.Fatalf("%s over stdio: %v %+v", name, err, res)
		}
		b, _ := json.Marshal(map[string]any{"result": map[string]any{"structuredContent": res.StructuredContent}})
		wantMeta(t, name+" over stdio", b, false)
	}
}
