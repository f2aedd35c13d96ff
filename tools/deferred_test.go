package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/ardgate/ardgate/attach"
	"github.com/ardgate/ardgate/config"
	"github.com/ardgate/ardgate/guard"
	"github.com/ardgate/ardgate/registry"
	"github.com/ardgate/ardgate/testdata/mcpfixture"
)

// tenServers serves a gateway whose catalog has ten fixture servers.
func tenServers(t *testing.T, deferred bool) (*clientSession, []string) {
	t.Helper()
	up := upstream(t)
	var entries []registry.Entry
	var urns []string
	for i := range 10 {
		urn := fmt.Sprintf("urn:air:ardgate.test:mcp:server%d", i)
		entries = append(entries, remoteEntry(urn, up.URL))
		urns = append(urns, urn)
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	hc := (&guard.Dialer{AllowLocal: true}).Client()
	m := &attach.Manager{
		Registries: []registry.Registry{registry.NewLocal("test", registry.NewIndex("test", entries))},
		HTTP:       hc, AllowTypes: config.DefaultAllowAttachTypes, MaxAttachments: 20, CallTimeout: 10 * time.Second,
		StartTimeout: 10 * time.Second, Log: log, Deferred: deferred,
	}
	g := New(m, log, Options{Version: "test"})
	h := g.NewHTTP(HTTPOptions{})
	ts := httptest.NewServer(h)
	t.Cleanup(func() { _ = h.Shutdown(context.Background()); ts.Close(); g.Close(); hc.CloseIdleConnections() })
	s := (&testGateway{g: g, h: h, url: ts.URL + "/mcp"}).connect(t)
	for _, urn := range urns {
		if res := s.call("attach_resource", map[string]any{"urn": urn}); res.IsError {
			t.Fatalf("attach %s: %s", urn, firstText(res))
		}
	}
	return s, urns
}

func toolsListBytes(t *testing.T, s *clientSession) int {
	t.Helper()
	res, err := s.c.ListTools(context.Background(), mcp.ListToolsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(res)
	return len(b)
}

// In deferred mode attached tools stay out of tools/list, tool_search
// finds them, and call_attached_tool calls them. The sizes of tools/list
// with ten attached servers are logged for BENCHMARKS.md.
func TestDeferredToolMode(t *testing.T) {
	listed, _ := tenServers(t, false)
	deferred, _ := tenServers(t, true)

	each := len(mcpfixture.New("x").ListTools())
	if n := len(listed.tools()); n != 12+10*each {
		t.Fatalf("listed mode lists %d tools, want 12 gateway + 10 × %d attached", n, each)
	}
	names := deferred.tools()
	if slices.ContainsFunc(names, func(n string) bool { return strings.HasPrefix(n, "mcp_") }) || len(names) != 12 {
		t.Fatalf("deferred mode lists attached tools: %v", names)
	}
	lb, db := toolsListBytes(t, listed), toolsListBytes(t, deferred)
	t.Logf("tools/list with 10 attached servers (%d tools each): listed %d bytes (~%d tokens), deferred %d bytes (~%d tokens), %.1fx smaller",
		each, lb, lb/4, db, db/4, float64(lb)/float64(db))
	if db*5 > lb {
		t.Fatalf("deferred tools/list (%d bytes) is not much smaller than listed (%d bytes)", db, lb)
	}

	var found struct {
		Tools []struct {
			Name        string
			InputSchema json.RawMessage
		}
	}
	res := deferred.call("tool_search", map[string]any{"query": "add two numbers", "limit": 3})
	if err := json.Unmarshal(res.RawStructuredContent, &found); err != nil || len(found.Tools) == 0 {
		t.Fatalf("tool_search: %v %s", err, firstText(res))
	}
	if !strings.HasSuffix(found.Tools[0].Name, "__add") || !strings.Contains(string(found.Tools[0].InputSchema), `"a"`) {
		t.Fatalf("tool_search first result %+v", found.Tools[0])
	}
	res = deferred.call("call_attached_tool", map[string]any{"name": found.Tools[0].Name, "arguments": map[string]any{"a": 2, "b": 3}})
	if res.IsError || !strings.Contains(string(res.RawStructuredContent), `"sum":5`) {
		t.Fatalf("calling a deferred tool: %s", firstText(res))
	}
}

// A framework lists every tool of the session through tool_search, page
// by page (five at a time, and 50 at most, it could not), and gets what
// tools/list would give of each: its title, its own or its annotations',
// and its output schema.
func TestToolSearchPages(t *testing.T) {
	m := pinnedFixture(buildFixture(t), 10*time.Second)
	m.Pinned[0].Args = append(m.Pinned[0].Args, "--many-tools=70")
	m.Deferred = true
	c := serveStdio(t, New(m, quietLog, Options{Version: "test"}))
	type found struct {
		Count, Matched int
		Tools          []struct {
			Name, Title  string
			OutputSchema json.RawMessage
		}
		PageToken string `json:"page_token"`
		Note      string
	}
	search := func(args map[string]any) (out found, res *mcp.CallToolResult) {
		t.Helper()
		req := mcp.CallToolRequest{}
		req.Params.Name, req.Params.Arguments = "tool_search", args
		res, err := c.CallTool(context.Background(), req)
		if err != nil {
			t.Fatal(err)
		}
		_ = json.Unmarshal(res.RawStructuredContent, &out)
		return out, res
	}
	all := 70 + len(mcpfixture.New("x").ListTools())
	seen := map[string]bool{}
	token := ""
	for pages := 0; ; pages++ {
		args := map[string]any{"query": "what tools do I have", "limit": 50}
		if token != "" {
			args["page_token"] = token
		}
		got, res := search(args)
		if res.IsError || got.Matched != all || got.Count != len(got.Tools) {
			t.Fatalf("page %d: %s", pages, firstText(res))
		}
		for _, tool := range got.Tools {
			if seen[tool.Name] {
				t.Fatalf("%s listed twice", tool.Name)
			}
			seen[tool.Name] = true
		}
		if token = got.PageToken; token == "" {
			break
		}
		if !strings.Contains(got.Note, fmt.Sprintf("%d tools matched in all: pass page_token", all)) {
			t.Errorf("page %d's note: %q", pages, got.Note)
		}
	}
	if len(seen) != all {
		t.Fatalf("listed %d tools of %d", len(seen), all)
	}
	got, _ := search(map[string]any{"query": "add two numbers", "limit": 1})
	if got.Tools[0].Name != "mcp_fx__add" || got.Tools[0].Title != "Add two numbers" || !strings.Contains(string(got.Tools[0].OutputSchema), `"sum"`) {
		t.Errorf("add as found: %+v", got.Tools[0])
	}
	got, _ = search(map[string]any{"query": "schema probe", "limit": 1})
	if got.Tools[0].Title != "Schema probe" || got.Tools[0].OutputSchema != nil {
		t.Errorf("schema_probe as found: %+v", got.Tools[0])
	}
	first, _ := search(map[string]any{"query": "what tools do I have", "limit": 5})
	if _, res := search(map[string]any{"query": "add two numbers", "page_token": first.PageToken}); !res.IsError || !strings.Contains(firstText(res), `"page_token" is not one tool_search returned for this query`) {
		t.Errorf("a page token of another query: %s", firstText(res))
	}
}

// tool_search as a model in deferred mode reads it: right after
// initialize it waits for a pinned server still starting, as a call of
// its tools does (it found none, and pointed at discover_resources); it
// gives a tool's title and annotations; "tools" and "mcp", in every
// tool's synthetic identifier, match none by themselves; a query of no
// searchable word says so. The gateway's instructions and attach_resource
// say where deferred tools are, and call_attached_tool given a tool's
// arguments beside its name says where they go.
func TestToolSearchAsAModelSeesIt(t *testing.T) {
	m := pinnedFixture(buildFixture(t), 10*time.Second)
	m.Pinned[0].Args = append(m.Pinned[0].Args, "--start-delay=700ms")
	m.Deferred = true
	c := serveStdio(t, New(m, quietLog, Options{Version: "test"}))
	ctx := context.Background()
	search := func(query string) (out struct {
		Count int
		Tools []struct {
			Name, Title string
			Score       int
			Annotations *mcp.ToolAnnotation
		}
		Note string
	}) {
		t.Helper()
		req := mcp.CallToolRequest{}
		req.Params.Name, req.Params.Arguments = "tool_search", map[string]any{"query": query, "limit": 50}
		res, err := c.CallTool(ctx, req)
		if err != nil || res.IsError || json.Unmarshal([]byte(firstText(res)), &out) != nil {
			t.Fatalf("tool_search %q: %v %+v", query, err, res)
		}
		return out
	}
	if got := search("add two numbers"); got.Count == 0 || got.Tools[0].Name != "mcp_fx__add" {
		t.Fatalf("right after initialize: %+v", got)
	}
	if got := search("schema probe"); got.Count == 0 || got.Tools[0].Title != "Schema probe" || got.Tools[0].Annotations == nil || got.Tools[0].Annotations.ReadOnlyHint == nil || !*got.Tools[0].Annotations.ReadOnlyHint {
		t.Errorf("title and annotations: %+v", got)
	}
	all := len(search("the").Tools)
	if got := search("the"); !strings.Contains(got.Note, "holds no word to search on") {
		t.Errorf("no searchable word: %+v", got)
	}
	// Words that every tool is are not searched on: asked what tools it
	// has, a model gets them all, said to be a listing; "tools" matched
	// none, and before that every tool, alike.
	for _, q := range []string{"tools", "mcp", "tool", "what tools do I have?"} {
		if got := search(q); got.Count != all || !strings.Contains(got.Note, "listing by name") || got.Tools[0].Score != 0 {
			t.Errorf("%q: %d tools of %d, note %q", q, got.Count, all, got.Note)
		}
	}
	if got := search("add tool"); got.Count == 0 || got.Tools[0].Name != "mcp_fx__add" || strings.Contains(got.Note, "listing") {
		t.Errorf("a query with a word to search on besides: %+v", got)
	}
	list, err := c.ListTools(ctx, mcp.ListToolsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tool := range list.Tools {
		if tool.Name == "attach_resource" && !strings.Contains(tool.Description, "tool_search") {
			t.Errorf("attach_resource in deferred mode: %s", tool.Description)
		}
	}
	req := mcp.CallToolRequest{}
	req.Params.Name, req.Params.Arguments = "call_attached_tool", map[string]any{"name": "mcp_fx__add", "a": 1, "b": 2}
	if res, err := c.CallTool(ctx, req); err != nil || !res.IsError || !strings.Contains(firstText(res), `the tool's own arguments go in "arguments"`) {
		t.Errorf("arguments beside the name: %v %+v", err, res)
	}
	if !strings.Contains(instructionsFor(true), "tool_search") || strings.Contains(instructionsFor(false), "tool_search") {
		t.Errorf("instructions: %q / %q", instructionsFor(true), instructionsFor(false))
	}
}
