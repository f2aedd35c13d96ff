package tools

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/ardgate/ardgate/attach"
	"github.com/ardgate/ardgate/guard"
	"github.com/ardgate/ardgate/registry"
)

const toolSearchSchema = `{
  "type": "object",
  "properties": {
    "query": {"type": "string", "description": "What the tool should do."},
    "limit": {"type": "integer", "minimum": 1, "maximum": 50, "description": "How many tools to return (default 5)."},
    "page_token": {"type": "string", "description": "page_token from the previous result, for the next tools of the same query."}
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
	Name         string              `json:"name"`
	Title        string              `json:"title,omitempty"`
	Attachment   string              `json:"attachment"`
	Description  string              `json:"description,omitempty" shown:"2000,lines"`
	Score        int                 `json:"score"`
	InputSchema  json.RawMessage     `json:"inputSchema"`
	OutputSchema json.RawMessage     `json:"outputSchema,omitempty"`
	Annotations  *mcp.ToolAnnotation `json:"annotations,omitempty"`
	// Down says why its attachment is down: a call tries to start or
	// reach it again.
	Down string `json:"attachment_down,omitempty"`
}

// maxFoundDescription bounds a found tool's description: in deferred
// mode tool_search is all a model reads of a tool, and a cut at 500 lost
// the sentence saying how to call it.
const maxFoundDescription = 2000

// everyTool matches the words that say of every tool what it is, which
// a query does not search on: "what tools do I have" matched none, where
// "the" listed them all.
var everyTool = regexp.MustCompile(`(?i)\b(tools?|mcp)\b`)

// toolSearch ranks the session's tools with the same BM25F index as
// discovery: name, description, and the schema's property names.
func (g *Gateway) toolSearch(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	var a struct {
		Query     string                `json:"query"`
		Limit     *registry.WholeNumber `json:"limit"`
		PageToken string                `json:"page_token"`
	}
	s, fail := g.begin(ctx, req, "tool_search", &a)
	if fail != nil {
		return fail, nil
	}
	if a.Query == "" {
		return invalid("tool_search", errors.New(`"query" is required`)), nil
	}
	limit, err := searchLimit(a.Limit)
	if err != nil {
		return invalid("tool_search", err), nil
	}
	atts := s.att.Attachments()
	g.waitStarting(ctx, s, atts)
	tools := s.att.Tools()
	entries, byURN := toolEntries(tools)
	query := everyTool.ReplaceAllString(a.Query, " ")
	page, err := registry.NewIndex("session", entries).Search(registry.Query{Text: query, PageSize: limit, PageToken: a.PageToken})
	if errors.Is(err, registry.ErrInvalidArgument) && a.PageToken != "" {
		return invalid("tool_search", errors.New(`"page_token" is not one tool_search returned for this query: give the query of the call that returned it, or leave page_token out to begin again`)), nil
	}
	if err != nil {
		return fromError(err), nil
	}
	// Matched and the page token let a client list every tool of the
	// session, a framework its whole budget: five at a time, it could not.
	out := struct {
		Count     int         `json:"count"`
		Matched   int         `json:"matched"`
		Tools     []foundTool `json:"tools"`
		PageToken string      `json:"page_token,omitempty"`
		Note      string      `json:"note,omitempty" shown:"4000"`
	}{Matched: page.Matched, PageToken: page.PageToken}
	down, notUp := serversNotUp(atts)
	out.Tools = foundTools(page.Results, tools, byURN, down)
	out.Count = len(out.Tools)
	out.Note = searchNote(query, a.PageToken, page, out.Count, len(tools), notUp)
	return result(out), nil
}

// searchLimit is how many tools a search returns: limit, or 5.
func searchLimit(limit *registry.WholeNumber) (int, error) {
	if limit == nil {
		return 5, nil
	}
	if n := int(*limit); n >= 1 && n <= 50 {
		return n, nil
	}
	return 0, errors.New(`"limit" must be between 1 and 50`)
}

// waitStarting waits for the pinned servers of atts still starting, as a
// call of their tools does: the first search, right after initialize,
// found none.
func (g *Gateway) waitStarting(ctx context.Context, s *session, atts []*attach.Attachment) {
	for _, att := range atts {
		if att.Pinned && att.Kind == attach.KindMCPServer {
			s.att.WaitStarted(ctx, att, g.opts.PinnedListWait)
		}
	}
}

// toolEntries are tools as entries of an index, with the index in tools
// of each entry's identifier.
func toolEntries(tools []attach.Tool) ([]registry.Entry, map[string]int) {
	byURN := map[string]int{}
	entries := make([]registry.Entry, 0, len(tools))
	for i, t := range tools {
		// An identifier of no searchable word: "tool", "tools" and "mcp"
		// in it matched every tool.
		urn := "urn:air:x.invalid:t" + strconv.Itoa(i)
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
	return entries, byURN
}

// serversNotUp returns why each server of atts that is not up is not, by
// name, and their names with their status.
func serversNotUp(atts []*attach.Attachment) (down map[string]string, notUp []string) {
	down = map[string]string{}
	for _, att := range atts {
		if status, why := att.Status(); status != attach.StatusUp && att.Kind == attach.KindMCPServer {
			down[att.Name] = guard.Text(why, 300)
			notUp = append(notUp, att.Name+" ("+status+")")
		}
	}
	return down, notUp
}

// foundTools are the tools of results, found in tools by byURN, with why
// their attachment is down if it is.
func foundTools(results []registry.Result, tools []attach.Tool, byURN map[string]int, down map[string]string) []foundTool {
	out := []foundTool{}
	for _, r := range results {
		t := tools[byURN[r.Identifier]]
		f := foundTool{Name: t.Name, Title: guard.Text(cmp.Or(t.Upstream.Title, t.Upstream.Annotations.Title), 120), Attachment: t.Attachment, Score: r.Score,
			Description: guard.Body(t.Upstream.Description, maxFoundDescription), InputSchema: t.Upstream.RawInputSchema,
			OutputSchema: t.Upstream.RawOutputSchema, Down: down[t.Attachment]}
		if a := t.Upstream.Annotations; a != (mcp.ToolAnnotation{}) {
			f.Annotations = &a
			f.Annotations.Title = ""
		}
		out = append(out, f)
	}
	return out
}

// searchNote is the note of a search for query that found count tools
// of all the session has, on page; notUp are the servers not up.
func searchNote(query, pageToken string, page registry.Page, count, all int, notUp []string) string {
	var note string
	switch {
	case !registry.Searchable(query):
		note = "The query holds no word to search on " + skippedWords + `, nor "tool", "tools" or "mcp", which every tool is: these tools are a listing by name, score 0, not matches; say what the tool should do.`
	case count == 0 && pageToken == "":
		note = fmt.Sprintf("No tool of the %d this session has attached matched: try other words, or find a capability it lacks with discover_resources.", all)
	}
	if page.PageToken != "" {
		note = strings.TrimPrefix(note+" "+fmt.Sprintf("%d tools matched in all: pass page_token for the next ones.", page.Matched), " ")
	}
	if len(notUp) > 0 {
		note = strings.TrimPrefix(note+" "+fmt.Sprintf("Not up, their tools perhaps not all searched: %s.", strings.Join(notUp, ", ")), " ")
	}
	return note
}
