package tools

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/ardgate/ardgate/attach"
	"github.com/ardgate/ardgate/guard/jsonrpc"
	"github.com/ardgate/ardgate/tools/serve"
)

// The fast path answers a plain tools/list too. Through the server, every
// listing copies each tool's struct into a map and a slice, sorts them,
// and encodes each tool anew through a map of its members, compacting its
// schemas, and over HTTP answers as an event stream that the session's
// event store keeps: 2.3 ms for a session with a 99-tool server attached
// (BenchmarkToolsList), and clients list again after every
// tools/list_changed. Here the gateway's
// own tools are encoded once, at start, and each proxied tool once per
// shared definition (attach.Tool.AppendListed): a listing is the copy of
// those bytes, in the server's order (by name) and as the server encodes
// them, byte for byte (TestFastListMatchesServer).
//
// Only a listing that needs nothing else takes it: no cursor, tracing off (the server traces every method), and
// the session's pinned servers no longer starting (the server's listing
// waits for them).

var toolsListMethod = []byte(`"tools/list"`)

// ownTool is one of the gateway's own tools, encoded as a tools/list
// result lists it.
type ownTool struct {
	name    string
	encoded []byte
}

// addOwnTools registers the gateway's own tools with the MCP server, and
// keeps their encodings for the fast path's listings, by name.
func (g *Gateway) addOwnTools(tools ...server.ServerTool) {
	g.mcp.AddTools(tools...)
	for _, t := range tools {
		encoded, err := json.Marshal(t.Tool)
		if err != nil {
			panic("tools: " + t.Tool.Name + " cannot be encoded: " + err.Error()) // the gateway's own definitions
		}
		g.own = append(g.own, ownTool{name: t.Tool.Name, encoded: encoded})
	}
	slices.SortFunc(g.own, func(a, b ownTool) int { return strings.Compare(a.name, b.name) })
}

// isOwn tells whether name, a JSON string as a frame holds it, names one
// of the gateway's own tools.
func (g *Gateway) isOwn(name []byte) bool {
	if len(name) < 2 || name[0] != '"' || bytes.IndexByte(name, '\\') >= 0 {
		return false // not a string, or escaped: not looked into
	}
	return g.ownName(name[1 : len(name)-1])
}

// ownName tells whether name, as it reads, is one of the gateway's own
// tools.
func (g *Gateway) ownName(name []byte) bool {
	_, found := slices.BinarySearchFunc(g.own, name, func(t ownTool, name []byte) int {
		return strings.Compare(t.name, string(name))
	})
	return found
}

// fastList answers line when it is a tools/list the fast path takes; ok
// is false for anything else, which the MCP server then answers.
func (g *Gateway) fastList(s *session, line []byte) (f serve.Frame, ok bool) {
	if s == nil || g.opts.Tracing != nil || g.opts.NoFastPath || !bytes.Contains(line, toolsListMethod) {
		return f, false
	}
	id, method, params, ok := request(line)
	if !ok || !bytes.Equal(method, toolsListMethod) || !firstPage(params, false) {
		return f, false
	}
	if s.att.PinnedPending(g.opts.PinnedListWait) {
		return f, false // the server's listing waits for them
	}
	listed := s.listedTools()
	size, ok := g.listSize(listed)
	if !ok {
		return f, false // left to the server's path
	}
	b := append(make([]byte, 0, size), `{"tools":[`...)
	own := g.own
	for i := 0; len(own) > 0 || len(listed) > 0; i++ {
		if i > 0 {
			b = append(b, ',')
		}
		if len(listed) == 0 || len(own) > 0 && own[0].name < listed[0].Name {
			b = append(b, own[0].encoded...)
			own = own[1:]
			continue
		}
		b, _ = listed[0].AppendListed(b) // sized above, without an error
		listed = listed[1:]
	}
	b = append(b, "]}"...)
	g.metrics.fastLists.Inc()
	return serve.Frame{ID: string(id), Result: b}, true
}

// listSize is the size of the listing of the gateway's own tools and of
// listed; ok is false when a definition cannot be listed as encoded.
func (g *Gateway) listSize(listed []attach.Tool) (size int, ok bool) {
	size = len(`{"tools":[]}`) + len(g.own) + len(listed)
	for _, t := range g.own {
		size += len(t.encoded)
	}
	for _, t := range listed {
		n, err := t.ListedSize()
		if err != nil {
			return 0, false
		}
		size += n
	}
	return size, true
}

// onePage refuses a list request with a cursor of its own: the gateway's
// lists have no pages.
const onePage = "this gateway lists all of them in one page: send the list request without a cursor"

// toolsListRefusal answers frame when it is a tools/list with a cursor
// of its own, which the gateway's lists, one page, never give
// (prompts/list and the others are refused so in offers.go). mcp-go's
// server read a cursor as a tool's name in base64 and listed the tools
// after it, or said "illegal base64 data at input byte 4".
func toolsListRefusal(frame []byte) []byte {
	id, method, params, ok := request(frame)
	if !ok || serve.JSONString(method) != string(mcp.MethodToolsList) || !jsonrpc.ObjectOrAbsent(params) || firstPage(params, true) {
		return nil
	}
	return serve.Message{Message: jsonrpc.Message{ID: id}}.RefusedAs(mcp.INVALID_PARAMS, onePage)
}

// firstPage tells whether a list request's params ask for the first page,
// which is all there is: absent or null, or an object whose _meta, if any, is an
// object or null as the server reads it (the server refuses any other
// _meta), and, with cursor, whose cursor asks for the first page (null or
// ""); without cursor, with no cursor at all. Other params are ignored,
// as the server ignores them: clients send their own (Mastra sends its
// timeout, {"timeout":60000}). One spelt as _meta or cursor in another
// case is refused at the door (serve.FrameRefusal).
func firstPage(params []byte, cursor bool) bool {
	if params == nil || string(params) == "null" { // null: no params, as the server reads it
		return true
	}
	if params[0] != '{' {
		return false
	}
	ok := true
	_ = jsonrpc.ScanCheckedObject(params, func(name, value []byte) { // checked with the frame
		switch {
		case string(name) == "_meta":
			ok = ok && (value[0] == '{' || string(value) == "null")
		case string(name) == "cursor":
			ok = ok && cursor && (string(value) == "null" || string(value) == `""`)
		}
	})
	return ok
}
