package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/ardgate/ardgate/guard"
	"github.com/ardgate/ardgate/registry"
)

const toolSearchSchema = `{
  "type": "object",
  "properties": {
    "query": {"type": "string", "description": "What the tool should do."},
    "limit": {"type": "integer", "minimum": 1, "maximum": 50, "description": "How many tools to return (default 5)."}
  },
  "required": ["query"],
  "additionalProperties": false
}`

func (g *Gateway) toolSearchTool() server.ServerTool {
	return newTool("tool_search", "Search attached tools",
		"Search the tools of this session's attachments (including those not in your tool list) by what they do; "+
			"returns their names and input schemas. Call one with call_attached_tool.",
		toolSearchSchema, hints{readOnly: true, idempotent: true}, g.toolSearch)
}

type foundTool struct {
	Name        string          `json:"name"`
	Attachment  string          `json:"attachment"`
	Description string          `json:"description,omitempty"`
	Score       int             `json:"score"`
	InputSchema json.RawMessage `json:"inputSchema"`
}

// toolSearch ranks the session's tools with the same BM25F index as
// discovery: name, description, and the schema's property names.
func (g *Gateway) toolSearch(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	var a struct {
		Query string `json:"query"`
		Limit *int   `json:"limit"`
	}
	s, fail := g.begin(ctx, req, "tool_search", &a)
	if fail != nil {
		return fail, nil
	}
	if a.Query == "" {
		return invalid("tool_search", errors.New(`"query" is required`)), nil
	}
	limit := 5
	if a.Limit != nil {
		if limit = *a.Limit; limit < 1 || limit > 50 {
			return invalid("tool_search", errors.New(`"limit" must be between 1 and 50`)), nil
		}
	}
	tools := s.att.Tools()
	byURN := map[string]int{}
	entries := make([]registry.Entry, 0, len(tools))
	for i, t := range tools {
		urn := "urn:air:tools.ardgate.local:tool:" + t.Name
		byURN[urn] = i
		var schema struct {
			Properties map[string]json.RawMessage `json:"properties"`
		}
		_ = json.Unmarshal(t.Upstream.RawInputSchema, &schema)
		var props []string
		for p := range schema.Properties {
			props = append(props, p)
		}
		entries = append(entries, registry.Entry{Identifier: urn, DisplayName: t.Upstream.Name + " " + t.Upstream.Title,
			Type: "tool", URL: "-", Description: t.Upstream.Description, Tags: []string{t.Attachment}, Capabilities: props})
	}
	page, err := registry.NewIndex("session", entries).Search(registry.Query{Text: a.Query, PageSize: limit})
	if err != nil {
		return fromError(err), nil
	}
	out := struct {
		Count int         `json:"count"`
		Tools []foundTool `json:"tools"`
		Note  string      `json:"note,omitempty"`
	}{Tools: []foundTool{}}
	for _, r := range page.Results {
		t := tools[byURN[r.Identifier]]
		out.Tools = append(out.Tools, foundTool{Name: t.Name, Attachment: t.Attachment, Score: r.Score,
			Description: guard.Text(t.Upstream.Description, 500), InputSchema: t.Upstream.RawInputSchema})
	}
	out.Count = len(out.Tools)
	if out.Count == 0 {
		out.Note = fmt.Sprintf("No tool of the %d this session has attached matched: try other words, or find a capability it lacks with discover_resources.", len(tools))
	}
	return result(out), nil
}
