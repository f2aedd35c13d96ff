package tools

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
)

// Results over max_result_bytes are cut: text to the budget, other
// content dropped, and a note says how much went.
func TestCapResult(t *testing.T) {
	small := &mcp.CallToolResult{Content: []mcp.Content{mcp.NewTextContent("hello")}}
	if got := capResult(small, 1024); got != small {
		t.Fatal("a small result was changed")
	}
	big := &mcp.CallToolResult{Content: []mcp.Content{
		mcp.NewTextContent(strings.Repeat("a", 600)),
		mcp.NewTextContent(strings.Repeat("b", 600)),
		mcp.NewImageContent(strings.Repeat("i", 600), "image/png"),
	}}
	got := capResult(big, 1000)
	if len(got.Content) != 3 {
		t.Fatalf("%d content items, want two texts and the note", len(got.Content))
	}
	first, second := got.Content[0].(mcp.TextContent), got.Content[1].(mcp.TextContent)
	note := got.Content[2].(mcp.TextContent)
	if len(first.Text) != 600 || len(second.Text) != 400 {
		t.Fatalf("cut to %d and %d bytes, want 600 and 400", len(first.Text), len(second.Text))
	}
	if !strings.Contains(note.Text, "1800 bytes") || !strings.Contains(note.Text, "800 bytes were cut or left out") {
		t.Fatalf("note %q", note.Text)
	}
	if m := got.Meta.AdditionalFields[truncatedMeta]; !reflect.DeepEqual(m, map[string]int{"bytes": 1800, "max_result_bytes": 1000, "cut_bytes": 800}) {
		t.Fatalf("_meta %s = %v", truncatedMeta, m)
	}
	// A structured result's text copy, JSON, is left out whole: cut, it
	// was JSON no parser read, and nothing but the note's words said so.
	structured := `{"data":"` + strings.Repeat("s", 600) + `"}`
	sc := &mcp.CallToolResult{RawStructuredContent: json.RawMessage(structured), Content: []mcp.Content{mcp.NewTextContent(structured)}}
	sc.Meta = mcp.NewMetaFromMap(map[string]any{"upstream/key": "kept"})
	got = capResult(sc, 1000)
	if len(got.Content) != 1 || string(got.RawStructuredContent) != structured || got.Meta.AdditionalFields["upstream/key"] != "kept" {
		t.Fatalf("a structured result cut to %+v", got)
	}
	if note := got.Content[0].(mcp.TextContent).Text; !strings.Contains(note, "its text copy, JSON, was left out whole, not cut: structuredContent holds the result") {
		t.Fatalf("note %q", note)
	}
	// JSON text with no structured content is cut as any text: part of
	// it a model still reads, where none of it was given.
	list := &mcp.CallToolResult{Content: []mcp.Content{mcp.NewTextContent(`[` + strings.Repeat(`{"id":1},`, 200) + `{"id":1}]`)}}
	if got := capResult(list, 1000).Content[0].(mcp.TextContent).Text; len(got) != 1000 || !strings.HasPrefix(got, `[{"id":1},`) {
		t.Fatalf("JSON text alone cut to %d bytes: %.40q", len(got), got)
	}
	// A cut never splits a UTF-8 character.
	utf := &mcp.CallToolResult{Content: []mcp.Content{mcp.NewTextContent(strings.Repeat("é", 600))}}
	cut := capResult(utf, 1001).Content[0].(mcp.TextContent).Text
	if !strings.HasSuffix(cut, "é") || len(cut)%2 != 0 {
		t.Fatalf("UTF-8 split: %d bytes", len(cut))
	}
}

// A failure the gateway makes for a call of a proxied tool that declares
// an outputSchema carries its body in _meta, not as structuredContent,
// which a client checks against the tool's schema (the fixture's add
// declares one, echo none): on the fast path and the server's, by name;
// through call_attached_tool, which declares none, it stays.
func TestFailureFitsOutputSchema(t *testing.T) {
	c := rawStdio(t, New(pinnedFixture(buildFixture(t), 20*time.Second), quietLog, Options{Version: "test"}))
	c.caller(t, `"mcp_fx__echo","arguments":{"message":"ready?"}`, `"text":"ready?"`)
	if got := c.roundTrip(t, []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"mcp_fx__add","arguments":"1+2"}}`+"\n")); !bytes.Contains(got, []byte(`"_meta":{"ardgate/failure":{"error":"mcp_fx__add: \"arguments\" must be an object`)) ||
		bytes.Contains(got, []byte(`"structuredContent"`)) {
		t.Errorf("arguments not an object, on the server's path: %s", got)
	}
	// Down, and then down again within 5 s of the next call's start, so
	// that calls are not started again.
	c.roundTrip(t, []byte(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"mcp_fx__crash","arguments":{}}}`+"\n"))
	c.caller(t, `"mcp_fx__echo","arguments":{"message":"again"}`, `"text":"again"`)
	c.roundTrip(t, []byte(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"mcp_fx__crash","arguments":{}}}`+"\n"))
	for _, tc := range []struct{ name, frame, want string }{
		{"by name", `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"mcp_fx__add","arguments":{"a":1,"b":2}}}`, `"_meta":{"ardgate/failure":{"error":"fx: upstream is down`},
		{"a tool without one", `{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"mcp_fx__echo","arguments":{"message":"x"}}}`, `"structuredContent":{"error":"fx: upstream is down`},
		{"through call_attached_tool", `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"call_attached_tool","arguments":{"name":"mcp_fx__add","arguments":{"a":1,"b":2}}}}`, `"structuredContent":{"error":"fx: upstream is down`},
	} {
		got := c.roundTrip(t, []byte(tc.frame+"\n"))
		if !bytes.Contains(got, []byte(tc.want)) || !bytes.Contains(got, []byte(`"isError":true`)) {
			t.Errorf("%s: %s; want %s", tc.name, got, tc.want)
		}
		if tc.name == "by name" && bytes.Contains(got, []byte(`"structuredContent"`)) {
			t.Errorf("%s: structuredContent beside _meta: %s", tc.name, got)
		}
		// Every failure the gateway makes has its code in _meta: a
		// program reads it there whichever tool failed.
		if !bytes.Contains(got, []byte(`"_meta":{"ardgate/failure":{"error":"fx: upstream is down`)) || !bytes.Contains(got, []byte(`"code":"upstream_down"}}`)) {
			t.Errorf("%s: no failure in _meta: %s", tc.name, got)
		}
	}
}

// A stdio server that died, and starts slower than call_timeout, is
// started again by the next call all the same: the start ran on the
// call's clock, and such a server never came back.
func TestRevivedSlowerThanCallTimeout(t *testing.T) {
	t.Parallel()
	m := pinnedFixture(buildFixture(t), time.Second)
	m.Pinned[0].Args = append(m.Pinned[0].Args, "--start-delay=1500ms")
	c := rawStdio(t, New(m, quietLog, Options{Version: "test"}))
	c.caller(t, `"mcp_fx__echo","arguments":{"message":"up"}`, `"text":"up"`)
	c.roundTrip(t, []byte(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"mcp_fx__crash","arguments":{}}}`+"\n"))
	if got := c.roundTrip(t, []byte(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"mcp_fx__echo","arguments":{"message":"again"}}}`+"\n")); !bytes.Contains(got, []byte(`"text":"again"`)) {
		t.Fatalf("the call after the crash: %s", got)
	}
}

// Every tool call is logged at debug level, with its session, its time
// and whether it failed; at info, none is.
func TestCallsLogged(t *testing.T) {
	fixture := buildFixture(t)
	for _, level := range []slog.Level{slog.LevelDebug, slog.LevelInfo} {
		var mu sync.Mutex
		var buf bytes.Buffer
		log := slog.New(slog.NewTextHandler(writerFunc(func(p []byte) (int, error) {
			mu.Lock()
			defer mu.Unlock()
			return buf.Write(p)
		}), &slog.HandlerOptions{Level: level}))
		c := rawStdio(t, New(pinnedFixture(fixture, 10*time.Second), log, Options{Version: "test"}))
		c.caller(t, `"mcp_fx__echo","arguments":{"message":"logged"}`, `"text":"logged"`)()
		c.caller(t, `"mcp_fx__slow","arguments":{"ms":-1}`, `"isError":true`)()
		mu.Lock()
		got := buf.String()
		mu.Unlock()
		logged := strings.Contains(got, `msg="tool call" session=stdio tool=mcp_fx__echo`) && strings.Contains(got, "tool=mcp_fx__slow") && strings.Contains(got, "failed=true")
		if logged != (level == slog.LevelDebug) {
			t.Errorf("at %s, calls logged: %v\n%s", level, logged, got)
		}
	}
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

// A call of a pinned server still starting, held until it is up, ends as
// it would have: an answer over the cap says so. It was said to be
// cancelled, its client gone, the wait's context ending as the call went
// on on the fast path.
func TestHeldCallEndsAsItWould(t *testing.T) {
	m := pinnedFixture(buildFixture(t), 10*time.Second)
	m.Pinned[0].Args = append(m.Pinned[0].Args, "--start-delay=300ms")
	c := rawStdio(t, New(m, quietLog, Options{Version: "test"}))
	got := c.roundTrip(t, []byte(`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"mcp_fx__big","arguments":{"bytes":11534336}}}`+"\n"))
	if !bytes.Contains(got, []byte(`fx: its answer to big: the answer is larger than the 10 MiB cap`)) {
		t.Fatalf("a held call answered over the cap: %.300s", got)
	}
}
