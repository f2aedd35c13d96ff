package mcpfixture

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// The fixture's prompts and resources, for the gateway's relay of them:
//
//   - prompt greet {name (required)}: one user message, "Hello, <name>!";
//     its argument name completes from Greetable (completion/complete).
//   - resource fixture://readme: text, "The fixture's readme.".
//   - resource template fixture://items/{id}: text, "item <id>".
//   - resource template fixture://slow/{ms}: answers after ms
//     milliseconds, or not at all when the request is cancelled first.
//   - the resources the MCP conformance suite's resource scenarios read:
//     test://static-text, test://static-binary (a PNG),
//     test://watched-resource and the template test://template/{id}/data.
//   - resource test://watched-resource, and subscriptions to any resource:
//     tool touch {uri} says uri was updated (notifications/resources/
//     updated) to the calling session if it subscribed to uri, and answers
//     "updated"; else it answers "not subscribed".
//   - tool offer {name}: adds the prompt <name> and the resource
//     fixture://extra/<name> at run time; the server then says its prompts
//     and resources changed (notifications/*/list_changed).

// ReadmeText is the text of the resource fixture://readme.
const ReadmeText = "The fixture's readme."

func addOffers(s *server.MCPServer, subs *subscriptions) {
	s.AddPrompt(mcp.NewPrompt("greet",
		mcp.WithPromptDescription("Greets someone by name."),
		mcp.WithArgument("name", mcp.RequiredArgument(), mcp.ArgumentDescription("Who to greet.")),
	), greet)
	s.AddResource(mcp.NewResource("fixture://readme", "readme",
		mcp.WithResourceDescription("The fixture's readme."), mcp.WithMIMEType("text/plain")), readme)
	s.AddResourceTemplate(mcp.NewResourceTemplate("fixture://items/{id}", "item",
		mcp.WithTemplateDescription("One item, by id."), mcp.WithTemplateMIMEType("text/plain")), item)
	s.AddResourceTemplate(mcp.NewResourceTemplate("fixture://slow/{ms}", "slow",
		mcp.WithTemplateDescription("Answers after ms milliseconds.")), slowRead)
	addConformanceResources(s)
	s.AddTool(mcp.NewTool("touch",
		mcp.WithDescription("Says the resource at uri was updated, to the calling session if it subscribed to it."),
		mcp.WithString("uri", mcp.Required()),
	), subs.touch(s))
	s.AddTool(mcp.NewTool("offer",
		mcp.WithDescription("Adds the prompt <name> and the resource fixture://extra/<name>; the server then says its prompts and resources changed."),
		mcp.WithString("name", mcp.Required()),
	), offer(s))
}

// Greetable are the names greet's argument completes from.
var Greetable = []string{"Ann", "Bea", "Bob"}

// completions complete greet's argument name: the Greetable names that
// start with what was typed.
type completions struct{}

func (completions) CompletePromptArgument(_ context.Context, prompt string, arg mcp.CompleteArgument, _ mcp.CompleteContext) (*mcp.Completion, error) {
	if prompt != "greet" || arg.Name != "name" {
		return nil, fmt.Errorf("no completions for %s's argument %s", prompt, arg.Name)
	}
	values := []string{}
	for _, n := range Greetable {
		if strings.HasPrefix(n, arg.Value) {
			values = append(values, n)
		}
	}
	return &mcp.Completion{Values: values}, nil
}

func greet(_ context.Context, req mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
	name := req.Params.Arguments["name"]
	if name == "" {
		return nil, errors.New("greet needs the argument name")
	}
	return mcp.NewGetPromptResult("A greeting", []mcp.PromptMessage{
		mcp.NewPromptMessage(mcp.RoleUser, mcp.NewTextContent("Hello, "+name+"!")),
	}), nil
}

func readme(_ context.Context, req mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
	return []mcp.ResourceContents{mcp.TextResourceContents{URI: req.Params.URI, MIMEType: "text/plain", Text: ReadmeText}}, nil
}

func item(_ context.Context, req mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
	id := strings.TrimPrefix(req.Params.URI, "fixture://items/")
	return []mcp.ResourceContents{mcp.TextResourceContents{URI: req.Params.URI, MIMEType: "text/plain", Text: "item " + id}}, nil
}

func slowRead(ctx context.Context, req mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
	ms, err := strconv.Atoi(strings.TrimPrefix(req.Params.URI, "fixture://slow/"))
	if err != nil {
		return nil, fmt.Errorf("%s: the milliseconds are not a number", req.Params.URI)
	}
	select {
	case <-time.After(time.Duration(ms) * time.Millisecond):
		return []mcp.ResourceContents{mcp.TextResourceContents{URI: req.Params.URI, Text: "slept"}}, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func offer(s *server.MCPServer) server.ToolHandlerFunc {
	return func(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		name := req.GetString("name", "")
		if name == "" {
			return mcp.NewToolResultError("offer needs a name"), nil
		}
		s.AddPrompt(mcp.NewPrompt(name, mcp.WithPromptDescription("Added by offer.")),
			func(context.Context, mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
				return mcp.NewGetPromptResult("added", []mcp.PromptMessage{
					mcp.NewPromptMessage(mcp.RoleUser, mcp.NewTextContent("added prompt "+name)),
				}), nil
			})
		uri := "fixture://extra/" + name
		s.AddResource(mcp.NewResource(uri, name), func(context.Context, mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
			return []mcp.ResourceContents{mcp.TextResourceContents{URI: uri, Text: "extra " + name}}, nil
		})
		return mcp.NewToolResultText("offered " + name), nil
	}
}

// addConformanceResources adds the resources that the conformance suite's
// scenarios resources-read-text, resources-read-binary,
// resources-templates-read and resources-(un)subscribe ask for, as they
// ask for them.
func addConformanceResources(s *server.MCPServer) {
	s.AddResource(mcp.NewResource("test://static-text", "static text",
		mcp.WithResourceDescription("A static text resource."), mcp.WithMIMEType("text/plain")),
		func(context.Context, mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
			return []mcp.ResourceContents{mcp.TextResourceContents{URI: "test://static-text", MIMEType: "text/plain",
				Text: "This is the content of the static text resource."}}, nil
		})
	s.AddResource(mcp.NewResource("test://static-binary", "static binary",
		mcp.WithResourceDescription("A static PNG."), mcp.WithMIMEType("image/png")),
		func(context.Context, mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
			return []mcp.ResourceContents{mcp.BlobResourceContents{URI: "test://static-binary", MIMEType: "image/png", Blob: onePixelPNG}}, nil
		})
	s.AddResource(mcp.NewResource("test://watched-resource", "watched",
		mcp.WithResourceDescription("A resource to subscribe to."), mcp.WithMIMEType("text/plain")),
		func(context.Context, mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
			return []mcp.ResourceContents{mcp.TextResourceContents{URI: "test://watched-resource", MIMEType: "text/plain", Text: "watched"}}, nil
		})
	s.AddResourceTemplate(mcp.NewResourceTemplate("test://template/{id}/data", "template data",
		mcp.WithTemplateDescription("Data for an id."), mcp.WithTemplateMIMEType("application/json")),
		func(_ context.Context, req mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
			id := strings.TrimSuffix(strings.TrimPrefix(req.Params.URI, "test://template/"), "/data")
			text, _ := json.Marshal(map[string]any{"id": id, "templateTest": true, "data": "Data for ID: " + id})
			return []mcp.ResourceContents{mcp.TextResourceContents{URI: req.Params.URI, MIMEType: "application/json", Text: string(text)}}, nil
		})
}

// onePixelPNG is a 1×1 PNG, base64.
const onePixelPNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR42mNkYAAAAAYAAjCB0C8AAAAASUVORK5CYII="

// subscriptions are the resources each session subscribed to, by
// session id.
type subscriptions struct {
	mu sync.Mutex
	by map[string]map[string]bool
}

func (subs *subscriptions) hooks() *server.Hooks {
	h := &server.Hooks{}
	h.AddAfterSubscribe(func(ctx context.Context, _ any, req *mcp.SubscribeRequest, _ *mcp.EmptyResult) {
		subs.set(ctx, req.Params.URI, true)
	})
	h.AddAfterUnsubscribe(func(ctx context.Context, _ any, req *mcp.UnsubscribeRequest, _ *mcp.EmptyResult) {
		subs.set(ctx, req.Params.URI, false)
	})
	return h
}

func (subs *subscriptions) set(ctx context.Context, uri string, on bool) {
	id := sessionID(ctx)
	subs.mu.Lock()
	defer subs.mu.Unlock()
	if subs.by[id] == nil {
		subs.by[id] = map[string]bool{}
	}
	subs.by[id][uri] = on
}

func sessionID(ctx context.Context) string {
	if cs := server.ClientSessionFromContext(ctx); cs != nil {
		return cs.SessionID()
	}
	return ""
}

func (subs *subscriptions) touch(s *server.MCPServer) server.ToolHandlerFunc {
	return func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		uri := req.GetString("uri", "")
		subs.mu.Lock()
		on := subs.by[sessionID(ctx)][uri]
		subs.mu.Unlock()
		if !on {
			return mcp.NewToolResultText("not subscribed"), nil
		}
		if err := s.SendNotificationToClient(ctx, mcp.MethodNotificationResourceUpdated, map[string]any{"uri": uri}); err != nil {
			return mcp.NewToolResultError(err.Error()), nil
		}
		return mcp.NewToolResultText("updated"), nil
	}
}
