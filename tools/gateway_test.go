package tools

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/ardgate/ardgate/attach"
	"github.com/ardgate/ardgate/config"
	"github.com/ardgate/ardgate/guard"
	"github.com/ardgate/ardgate/registry"
	"github.com/ardgate/ardgate/testdata/mcpfixture"
)

func TestReproHTTP(t *testing.T) {
	up := httptest.NewServer(server.NewStreamableHTTPServer(mcpfixture.New("remote")))
	defer up.Close()
	data, _ := json.Marshal(map[string]any{"name": "remote", "remotes": []any{map[string]any{"type": "streamable-http", "url": up.URL}}})
	idx := registry.NewIndex("test", []registry.Entry{{Identifier: "urn:air:ardgate.test:mcp:remote", DisplayName: "Remote", Type: config.MediaMCPServerCard, Data: data}})
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	d := &guard.Dialer{AllowLocal: true}
	m := &attach.Manager{Registries: []registry.Registry{registry.NewLocal("test", idx)}, HTTP: d.Client(), AllowTypes: config.DefaultAllowAttachTypes,
		MaxAttachments: 5, CallTimeout: 10 * time.Second, StartTimeout: 10 * time.Second, Log: log}
	g := New(m, log, "test")
	defer g.Close()
	gw := httptest.NewServer(g.NewHTTP(HTTPOptions{}))
	defer gw.Close()

	tr, _ := transport.NewStreamableHTTP(gw.URL + "/mcp")
	c := client.NewClient(tr, client.WithProtocolVersion("2025-11-25"))
	ctx := context.Background()
	c.Start(ctx)
	defer c.Close()
	got := make(chan string, 10)
	c.OnNotification(func(n mcp.JSONRPCNotification) { got <- n.Method })
	if _, err := c.Initialize(ctx, mcp.InitializeRequest{}); err != nil {
		t.Fatal(err)
	}
	req := mcp.CallToolRequest{}
	req.Params.Name = "attach_resource"
	req.Params.Arguments = map[string]any{"urn": "urn:air:ardgate.test:mcp:remote"}
	r, err := c.CallTool(ctx, req)
	t.Log(r.IsError, err)
	select {
	case m := <-got:
		t.Log("notification", m)
	case <-time.After(2 * time.Second):
		t.Fatal("no notification")
	}
}
