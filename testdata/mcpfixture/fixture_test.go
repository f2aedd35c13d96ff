package mcpfixture

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

func TestFixtureOverStreamableHTTP(t *testing.T) {
	ts := httptest.NewServer(server.NewStreamableHTTPServer(New("t")))
	t.Cleanup(ts.Close)

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)

	// client.NewStreamableHttpClient only takes transport options, so build
	// the client by hand to pass WithProtocolVersion.
	trans, err := transport.NewStreamableHTTP(ts.URL + "/mcp")
	if err != nil {
		t.Fatal(err)
	}
	c := client.NewClient(trans, client.WithProtocolVersion(mcp.ProtocolVersion20251125))
	t.Cleanup(func() { c.Close() })
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	var progress atomic.Int32
	c.OnNotification(func(n mcp.JSONRPCNotification) {
		if n.Method == string(mcp.MethodNotificationProgress) {
			progress.Add(1)
		}
	})

	ir, err := c.Initialize(ctx, mcp.InitializeRequest{Params: mcp.InitializeParams{
		ClientInfo: mcp.Implementation{Name: "fixture-test", Version: "0"},
	}})
	if err != nil {
		t.Fatal(err)
	}
	if ir.ProtocolVersion != "2025-11-25" || ir.ServerInfo.Name != "t" || ir.ServerInfo.Version != Version {
		t.Fatalf("initialize: got version %q, server %+v", ir.ProtocolVersion, ir.ServerInfo)
	}
	if ir.Capabilities.Tools == nil || !ir.Capabilities.Tools.ListChanged {
		t.Fatalf("tools capability without listChanged: %+v", ir.Capabilities.Tools)
	}

	// mcp.Tool.InputSchema drops anyOf, description, etc., so read tools/list
	// as raw JSON through the transport, which keeps the session headers.
	resp, err := trans.SendRequest(ctx, transport.JSONRPCRequest{
		JSONRPC: mcp.JSONRPC_VERSION, ID: mcp.NewRequestId(int64(1000)), Method: string(mcp.MethodToolsList),
	})
	if err != nil || resp.Error != nil {
		t.Fatalf("tools/list: %v %+v", err, resp)
	}
	var list struct {
		Tools []struct {
			Name        string          `json:"name"`
			InputSchema json.RawMessage `json:"inputSchema"`
			Annotations map[string]any  `json:"annotations"`
		} `json:"tools"`
	}
	if err := json.Unmarshal(resp.Result, &list); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range list.Tools {
		names = append(names, tool.Name)
		if tool.Name != "schema_probe" {
			continue
		}
		var got, want any
		if err := json.Unmarshal(tool.InputSchema, &got); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal([]byte(SchemaProbeInputSchema), &want); err != nil {
			t.Fatal(err)
		}
		gotJSON, _ := json.Marshal(got)
		wantJSON, _ := json.Marshal(want)
		if string(gotJSON) != string(wantJSON) {
			t.Errorf("schema_probe inputSchema changed on the wire:\n got %s\nwant %s", gotJSON, wantJSON)
		}
		for _, kw := range []string{`"anyOf"`, `"oneOf"`, `"$defs"`, `"default"`, `"enum"`} {
			if !strings.Contains(string(tool.InputSchema), kw) {
				t.Errorf("schema_probe inputSchema lost %s", kw)
			}
		}
		if tool.Annotations["readOnlyHint"] != true || tool.Annotations["title"] != "Schema probe" {
			t.Errorf("schema_probe annotations: %v", tool.Annotations)
		}
	}
	if len(names) != 18 {
		t.Errorf("tools: got %v, want 18 tools", names)
	}

	call := func(name string, args map[string]any, meta *mcp.Meta) *mcp.CallToolResult {
		t.Helper()
		req := mcp.CallToolRequest{}
		req.Params.Name, req.Params.Arguments, req.Params.Meta = name, args, meta
		res, err := c.CallTool(ctx, req)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		return res
	}
	text := func(res *mcp.CallToolResult) string {
		t.Helper()
		if len(res.Content) != 1 {
			t.Fatalf("want one content, got %+v", res.Content)
		}
		return mcp.GetTextFromContent(res.Content[0])
	}

	if res := call("echo", map[string]any{"message": "héllo  world\n"}, nil); res.IsError || text(res) != "héllo  world\n" {
		t.Errorf("echo: %+v", res)
	}
	if res := call("echo", nil, nil); !res.IsError {
		t.Errorf("echo without message should be an error result: %+v", res)
	}

	res := call("add", map[string]any{"a": 2, "b": 3.5}, nil)
	if res.IsError || text(res) != "5.5" || string(res.RawStructuredContent) != `{"sum":5.5}` {
		t.Errorf("add: %+v (structured %s)", res, res.RawStructuredContent)
	}
	if res := call("add", map[string]any{"a": "2", "b": 3}, nil); !res.IsError {
		t.Errorf("add with a string should be an error result: %+v", res)
	}

	// Progress must reach the client over the POST's SSE stream.
	res = call("slow", map[string]any{"ms": 180}, &mcp.Meta{ProgressToken: "p1"})
	if res.IsError || progress.Load() == 0 {
		t.Errorf("slow: %+v, %d progress notifications", res, progress.Load())
	}
}
