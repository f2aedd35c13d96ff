package attach

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
	"go.uber.org/goleak"

	"github.com/ardgate/ardgate/attach/fault"
	"github.com/ardgate/ardgate/config"
	"github.com/ardgate/ardgate/guard"
	"github.com/ardgate/ardgate/registry"
)

// sameBytes reports whether a and b are one piece of memory.
func sameBytes(a, b []byte) bool {
	return len(a) > 0 && len(a) == len(b) && &a[0] == &b[0]
}

func TestToolDefs(t *testing.T) {
	var d toolDefs
	raw := json.RawMessage(`{"name":"t","description":"d","inputSchema":{"type":"object","properties":{"a":{"type":"string"}}}}`)
	a, ka, err := d.take(raw)
	if err != nil {
		t.Fatal(err)
	}
	b, kb, err := d.take(append(json.RawMessage(nil), raw...)) // the same bytes, read anew
	if err != nil || ka != kb || !sameBytes(a.RawInputSchema, b.RawInputSchema) || a.Description != "d" {
		t.Fatalf("the same listing twice: keys equal %v, schemas shared %v, %v", ka == kb, sameBytes(a.RawInputSchema, b.RawInputSchema), err)
	}
	c, kc, err := d.take(json.RawMessage(`{"name":"t","description":"other","inputSchema":{"type":"object"}}`))
	if err != nil || kc == ka || c.Description != "other" || d.size() != 2 {
		t.Fatalf("another definition: %+v, %d kept, %v", c, d.size(), err)
	}
	if _, _, err := d.take(json.RawMessage(`{"name":1}`)); err == nil || d.size() != 2 {
		t.Errorf("a malformed tool: %v, %d kept", err, d.size())
	}
	d.drop([]toolKey{ka, kc})
	if d.size() != 1 {
		t.Errorf("%d kept after one of two takers gave it back, want 1", d.size())
	}
	d.drop([]toolKey{kb})
	if d.size() != 0 {
		t.Errorf("%d kept after all were given back", d.size())
	}
	var none *toolDefs
	if tool, _, err := none.take(raw); err != nil || tool.Name != "t" {
		t.Errorf("no sharing: %+v, %v", tool, err)
	}
	none.drop([]toolKey{ka})
}

// Two sessions attached to one server share its tools' definitions; a
// definition the server changed goes once every session has listed
// again, and the rest once the sessions end.
func TestToolDefsShared(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) })
	up := server.NewMCPServer("up", "1", server.WithToolCapabilities(true))
	handler := func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultText("ok"), nil
	}
	up.AddTool(mcp.NewTool("a", mcp.WithDescription("first"), mcp.WithString("x")), handler)
	up.AddTool(mcp.NewTool("b", mcp.WithDescription("stays")), handler)
	h := server.NewStreamableHTTPServer(up)
	ts := httptest.NewServer(h)
	defer ts.Close()
	defer func() { _ = h.Shutdown(context.Background()) }()

	const urn = "urn:air:ardgate.test:mcp:up"
	m := remoteManager(urn, ts.URL)
	defer m.HTTP.CloseIdleConnections()
	defer m.Shutdown()
	sessions := []*Session{m.NewSession("one"), m.NewSession("two")}
	for _, s := range sessions {
		if _, _, err := s.Attach(context.Background(), Request{URN: urn}); err != nil {
			t.Fatal(err)
		}
	}
	tool := func(s *Session, name string) mcp.Tool {
		for _, t := range s.Tools() {
			if t.Name == name {
				return t.Upstream.Tool
			}
		}
		return mcp.Tool{}
	}
	one, two := tool(sessions[0], "mcp_up__a"), tool(sessions[1], "mcp_up__a")
	if !sameBytes(one.RawInputSchema, two.RawInputSchema) || m.tools.size() != 2 {
		t.Fatalf("two sessions: schemas shared %v, %d definitions kept, want 2", sameBytes(one.RawInputSchema, two.RawInputSchema), m.tools.size())
	}

	up.AddTool(mcp.NewTool("a", mcp.WithDescription("second"), mcp.WithString("x")), handler) // says its list changed
	waitFor(t, "both sessions to list the new definition", func() bool {
		return tool(sessions[0], "mcp_up__a").Description == "second" && tool(sessions[1], "mcp_up__a").Description == "second"
	})
	waitFor(t, "the old definition to go", func() bool { return m.tools.size() == 2 })

	for _, s := range sessions {
		s.Close()
	}
	if n := m.tools.size(); n != 0 {
		t.Errorf("%d definitions kept after the sessions ended", n)
	}
}

// A tool appends itself as mcp-go's server would list it under its
// exposed name, whatever its definition holds: a schema with a property
// called "name" (before the tool's own name in the encoding), members
// after it, text that the encoder escapes.
func TestAppendListed(t *testing.T) {
	cases := map[string]string{
		"bare":            `{"name":"t"}`,
		"named property":  `{"name":"t","inputSchema":{"type":"object","properties":{"name":{"type":"string"}}}}`,
		"members after":   `{"name":"t","title":"T <b>","outputSchema":{"type":"object"},"description":"a & b"}`,
		"everything":      `{"name":"t\u00e9","title":"x","description":"d","inputSchema":{"type":"object","required":["name"]},"annotations":{"readOnlyHint":true,"title":"name"},"_meta":{"name":"m"},"icons":[{"src":"https://example.com/i.png"}],"execution":{"taskSupport":"optional"}}`,
		"spaced schema":   `{"name":"t","inputSchema": { "type" : "object" }}`,
		"unknown members": `{"name":"t","x-vendor":{"name":"v"}}`,
	}
	var d toolDefs
	for name, raw := range cases {
		t.Run(name, func(t *testing.T) {
			def, _, err := d.take(json.RawMessage(raw))
			if err != nil {
				t.Fatal(err)
			}
			exposed := def.Tool
			exposed.Name = "mcp_srv__t"
			want, err := json.Marshal(exposed)
			if err != nil {
				t.Fatal(err)
			}
			tool := Tool{Name: exposed.Name, Upstream: def}
			for range 2 { // made once, then copied
				got, err := tool.AppendListed([]byte("["))
				if err != nil || string(got) != "["+string(want) {
					t.Fatalf("got %s, %v\nwant [%s", got, err, want)
				}
				if size, err := tool.ListedSize(); size != len(want) || err != nil {
					t.Errorf("ListedSize %d, %v; appended %d bytes", size, err, len(want))
				}
			}
		})
	}
}

// remoteManager is a manager whose one registry holds urn, a remote MCP
// server at url; close its idle connections and shut it down after.
func remoteManager(urn, url string) *Manager {
	data, _ := json.Marshal(map[string]any{"name": "up", "remotes": []any{map[string]any{"type": "streamable-http", "url": url}}})
	entry := registry.Entry{Identifier: urn, DisplayName: "up", Type: config.MediaMCPServerCard, Data: data}
	return &Manager{
		Registries:     []registry.Registry{registry.NewLocal("test", registry.NewIndex("test", []registry.Entry{entry}))},
		HTTP:           (&guard.Dialer{AllowLocal: true}).Client(),
		AllowTypes:     config.DefaultAllowAttachTypes,
		MaxAttachments: 5,
		CallTimeout:    10 * time.Second,
		StartTimeout:   10 * time.Second,
		Log:            slog.New(slog.NewTextHandler(io.Discard, nil)),
	}
}

// An attach whose caller gives up while its server starts says so, not
// that the server did not start.
func TestAttachGivenUp(t *testing.T) {
	ts := httptest.NewServer(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body) // net/http watches for the client leaving only once the body is read
		<-r.Context().Done()
	}))
	defer ts.Close()
	const urn = "urn:air:ardgate.test:mcp:hangs"
	m := remoteManager(urn, ts.URL)
	defer m.HTTP.CloseIdleConnections()
	defer m.Shutdown()
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	_, _, err := m.NewSession("s").Attach(ctx, Request{URN: urn})
	if err == nil || !strings.Contains(err.Error(), "its request ended before the server started: context deadline exceeded") || errors.Is(err, ErrStartFailed) {
		t.Fatalf("an attach given up: %v", err)
	}
	// Cancelled (its client gone: a stdio client closed its input), it
	// says so in words, still a cancellation: it ended "context
	// canceled", and the gateway told it as the upstream's error.
	ctx, cancel = context.WithCancel(context.Background())
	time.AfterFunc(200*time.Millisecond, cancel)
	_, _, err = m.NewSession("s2").Attach(ctx, Request{URN: urn})
	if want := "its request ended before the server started: " + fault.ClientGone; err == nil || !strings.HasSuffix(err.Error(), want) || !errors.Is(err, context.Canceled) {
		t.Fatalf("an attach cancelled: %v; want it to end %q", err, want)
	}
}

// A detach finds an attach either under way, which it stops, or done,
// which it detaches: never neither, and never stopped while the attach
// goes on to stay attached (a detach as the attach ended said "detached",
// and the server stayed, its tools listed). A stopped start is listed and
// counted no more, though its server may take a moment to end.
func TestDetachAsAttachEnds(t *testing.T) {
	release := make(chan struct{})
	var hold atomic.Bool
	up := server.NewStreamableHTTPServer(server.NewMCPServer("up", "1", server.WithToolCapabilities(true)))
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if hold.Load() {
			_, _ = io.Copy(io.Discard, r.Body)
			select {
			case <-release:
			case <-r.Context().Done():
			}
			return
		}
		up.ServeHTTP(w, r)
	}))
	defer ts.Close()
	defer close(release)
	defer func() { _ = up.Shutdown(context.Background()) }()
	const urn = "urn:air:ardgate.test:mcp:up"
	m := remoteManager(urn, ts.URL)
	defer m.HTTP.CloseIdleConnections()
	defer m.Shutdown()

	// As the attach ends: the session's change is said while the attach
	// still holds its record.
	s := m.NewSession("ending")
	var first atomic.Bool // the detach says its change too
	var detached *Attachment
	var stopped *Underway
	s.OnChange = func() {
		if first.CompareAndSwap(false, true) {
			detached, _, stopped, _ = s.Detach(urn)
		}
	}
	a, _, err := s.Attach(context.Background(), Request{URN: urn})
	switch {
	case detached == nil && stopped == nil:
		t.Fatal("a detach as the attach ended found it neither attached nor under way")
	case stopped != nil && (err == nil || a != nil):
		t.Fatalf("stopped, yet the attach ended with %v, %v", a, err)
	}
	if n := len(s.Attachments()); n != 0 {
		t.Fatalf("%d attachments after the detach", n)
	}

	// Under way: stopped, and no longer listed nor counted at once.
	hold.Store(true)
	s2 := m.NewSession("starting")
	ended := make(chan error, 1)
	go func() { _, _, err := s2.Attach(context.Background(), Request{URN: urn}); ended <- err }()
	for deadline := time.Now().Add(5 * time.Second); len(s2.Underway()) == 0; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the attach was never under way")
		}
	}
	if a, _, stopped, err := s2.Detach("up"); a != nil || stopped == nil || stopped.URN != urn || err != nil {
		t.Fatalf("a detach of a start: %v %v %v", a, stopped, err)
	}
	if n := len(s2.Underway()); n != 0 {
		t.Errorf("a stopped start is still listed (%d)", n)
	}
	if err := <-ended; !errors.Is(err, ErrNotAttached) || !strings.Contains(err.Error(), "detach_resource stopped it while it was starting") {
		t.Fatalf("the stopped attach ended with %v", err)
	}
}

// waitFor polls cond for up to 5 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for end := time.Now().Add(5 * time.Second); !cond(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("waited 5 s for %s", what)
		}
	}
}
