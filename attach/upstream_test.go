package attach

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/ardgate/ardgate/guard/jsonrpc"
)

// A listed tool keeps its schemas byte for byte, whatever keywords they
// use, and the rest of its definition decoded; a tool that cannot be used
// is refused with a reason.
func TestDecodeTool(t *testing.T) {
	schema := `{"type":"object","$defs":{"p":{"type":"number"}},"properties":{"x":{"$ref":"#/$defs/p"}},"additionalProperties":false}`
	cases := []struct {
		name, raw     string
		input, output string // the raw schemas decodeTool keeps
		title, fails  string
		readOnly      bool
	}{
		{name: "whole", raw: `{"name":"t","title":"T","description":"d","inputSchema":` + schema + `,"outputSchema":{"type":"object"},"annotations":{"readOnlyHint":true}}`,
			input: schema, output: `{"type":"object"}`, title: "T", readOnly: true},
		{name: "no input schema", raw: `{"name":"t"}`, input: `{"type":"object"}`},
		{name: "null schemas", raw: `{"name":"t","inputSchema":null,"outputSchema":null}`, input: `{"type":"object"}`},
		{name: "no name", raw: `{"inputSchema":{}}`, fails: "tool without a name"},
		{name: "mistyped member", raw: `{"name":"t","annotations":{"readOnlyHint":"yes"}}`, fails: "tool t: json:"},
		{name: "not an object", raw: `["t"]`, fails: "malformed tool"},
		{name: "x-mcp-header on an object", raw: `{"name":"t","inputSchema":{"type":"object","properties":{"o":{"type":"object","x-mcp-header":"O"}}}}`,
			fails: "tool t: invalid x-mcp-header annotations"},
		// encoding/json matches keys in any case, and reads escapes.
		{name: "X-MCP-Header on an object", raw: `{"name":"t","inputSchema":{"type":"object","properties":{"o":{"type":"object","X-MCP-Header":"O"}}}}`,
			fails: "tool t: invalid x-mcp-header annotations"},
		{name: "escaped x-mcp-header on an object", raw: `{"name":"t","inputSchema":{"type":"object","properties":{"o":{"type":"object","x-mcp-\u0068eader":"O"}}}}`,
			fails: "tool t: invalid x-mcp-header annotations"},
		{name: "x-mcp-header on a string", raw: `{"name":"t","inputSchema":{"type":"object","properties":{"region":{"type":"string","x-mcp-header":"Region"}}}}`,
			input: `{"type":"object","properties":{"region":{"type":"string","x-mcp-header":"Region"}}}`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tool, err := decodeTool(json.RawMessage(c.raw))
			if c.fails != "" {
				if err == nil || !strings.Contains(err.Error(), c.fails) {
					t.Fatalf("err %v, want %q", err, c.fails)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if string(tool.RawInputSchema) != c.input || string(tool.RawOutputSchema) != c.output {
				t.Errorf("schemas %s and %s, want %s and %s", tool.RawInputSchema, tool.RawOutputSchema, c.input, c.output)
			}
			if tool.Title != c.title || (tool.Annotations.ReadOnlyHint != nil && *tool.Annotations.ReadOnlyHint) != c.readOnly {
				t.Errorf("title %q, annotations %+v", tool.Title, tool.Annotations)
			}
			// What the gateway lists is the schema as it came.
			out, _ := json.Marshal(tool)
			if c.name == "whole" && !strings.Contains(string(out), `"inputSchema":`+schema) {
				t.Errorf("listed as %s", out)
			}
		})
	}
}

// A schema mayAnnotateHeaders passes over is one mcp-go's check accepts.
func FuzzMayAnnotateHeaders(f *testing.F) {
	for _, seed := range []string{
		`{"type":"object","properties":{"o":{"type":"object","x-mcp-header":"O"}}}`,
		`{"type":"object","properties":{"o":{"type":"object","X-Mcp-Header":"O"}}}`,
		`{"type":"object","properties":{"o":{"type":"object","x-mcp-\u0068eader":"O"}}}`,
		`{"type":"object","properties":{"a":{"type":"string","x-mcp-header":"A"},"b":{"type":"string","x-mcp-header":"a"}}}`,
		`{"type":"object","properties":{"o":{"type":"object","properties":{"p":{"type":"array","x-mcp-header":"P"}}}}}`,
		`{"type":"object","properties":{"o":{"type":"object","x-mcp-headeré":"O"}}}`,
		`{"type":"object","properties":{"name":{"type":"string"}}}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, schema []byte) {
		if !json.Valid(schema) || mayAnnotateHeaders(schema) {
			return
		}
		if err := mcp.ValidateParamHeaderAnnotations(&mcp.Tool{Name: "t", RawInputSchema: schema}); err != nil {
			t.Fatalf("%s: passed over, but mcp-go refuses it: %v", schema, err)
		}
	})
}

// A tools/list result is read as encoding/json would decode it: a null
// result has no tools; members match in any case, the last one winning;
// tools an array or null or absent, the cursor a string (escapes resolved)
// or null or absent; anything else is refused.
func TestListPage(t *testing.T) {
	cases := []struct {
		result, tools, next, fails string
	}{
		{result: `{"tools":[{"name":"a"},{"name":"b"}],"nextCursor":"c2"}`, tools: `[{"name":"a"},{"name":"b"}]`, next: "c2"},
		{result: `{"nextCursor":null,"tools":[]}`, tools: `[]`},
		{result: `{}`, tools: `[]`},
		{result: `{"tools":null}`, tools: `[]`},
		{result: `{"tools":[],"nextCursor":"a\u002fb"}`, tools: `[]`, next: "a/b"},
		{result: `null`, tools: `[]`},
		{result: `{"Tools":[{"name":"a"}],"NEXTCURSOR":"c"}`, tools: `[{"name":"a"}]`, next: "c"},
		{result: `{"tools":[{"name":"a"}],"Tools":[]}`, tools: `[]`},
		{result: `{"tools":{"name":"a"}}`, fails: "not an array"},
		{result: `{"tools":[],"nextCursor":5}`, fails: "nextCursor"},
		{result: `["tools"]`, fails: "not a JSON object"},
	}
	for _, c := range cases {
		tools, next, err := listPage(json.RawMessage(c.result), "tools")
		if c.fails != "" {
			if err == nil || !strings.Contains(err.Error(), c.fails) {
				t.Errorf("%s: %v, want an error saying %q", c.result, err, c.fails)
			}
			continue
		}
		if err != nil || string(tools) != c.tools || string(next) != c.next {
			t.Errorf("%s: tools %s, next %q, %v; want %s and %q", c.result, tools, next, err, c.tools, c.next)
		}
		// The oracle: what encoding/json decodes.
		var decoded struct {
			Tools      []json.RawMessage `json:"tools"`
			NextCursor mcp.Cursor        `json:"nextCursor"`
		}
		var split []json.RawMessage
		_ = jsonrpc.ScanCheckedArray(tools, func(v []byte) { split = append(split, v) })
		if err := json.Unmarshal([]byte(c.result), &decoded); err != nil || len(decoded.Tools) != len(split) || decoded.NextCursor != next {
			t.Errorf("%s: encoding/json decodes %d tools and cursor %q (%v); listPage %d and %q", c.result, len(decoded.Tools), decoded.NextCursor, err, len(split), next)
		}
	}
}

// A server that has not answered its initialize (npx may be installing
// it) is given time to end after SIGTERM before SIGKILL: npm killed while
// it installed left npx's cache entry broken, and every later npx of the
// package failed. Here a shell takes 2 s to clean up, as npm took 3.
func TestCloseGivesAnInstallTime(t *testing.T) {
	marker := filepath.Join(t.TempDir(), "cleaned up")
	script := `trap 'sleep 2; touch "$0"; exit 0' TERM; while :; do sleep 0.1; done`
	m := &Manager{}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	plan := Plan{Transport: TransportStdio, Program: "/bin/sh", Args: []string{"-c", script, marker}, Env: []string{"PATH=" + os.Getenv("PATH")}}
	if _, err := m.dial(ctx, plan, log, nil, nil); err == nil {
		t.Fatal("a server that never answers its initialize started")
	}
	if _, err := os.Stat(marker); err != nil {
		t.Fatalf("the server was killed before it had ended (2 s after SIGTERM): %v", err)
	}
}

// Why a transport failed is said once: mcp-go's transports say "failed to
// send request" twice over, and a dial's failure at the end of a chain.
func TestTransportWhy(t *testing.T) {
	refused := &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}
	for _, c := range []struct {
		err  error
		want string
	}{
		{fmt.Errorf("failed to send request: failed to send request: Post \"http://127.0.0.1:1/mcp\": %w", io.ErrUnexpectedEOF),
			`failed to send request: Post "http://127.0.0.1:1/mcp": unexpected EOF`},
		{fmt.Errorf("transport error: failed to send request: failed to send request: %w", refused), "cannot reach it: dial tcp: connection refused"},
		{io.EOF, "EOF"},
	} {
		if got := transportWhy(c.err); got != c.want {
			t.Errorf("transportWhy(%v) = %q, want %q", c.err, got, c.want)
		}
	}
}
