package mcpfixture

import (
	"context"
	"errors"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// The fixture's prompts and resources, for the gateway's relay of them:
//
//   - prompt greet {name (required)}: one user message, "Hello, <name>!".
//   - resource fixture://readme: text, "The fixture's readme.".
//   - resource template fixture://items/{id}: text, "item <id>".
//   - tool offer {name}: adds the prompt <name> and the resource
//     fixture://extra/<name> at run time; the server then says its prompts
//     and resources changed (notifications/*/list_changed).

// ReadmeText is the text of the resource fixture://readme.
const ReadmeText = "The fixture's readme."

func addOffers(s *server.MCPServer) {
	s.AddPrompt(mcp.NewPrompt("greet",
		mcp.WithPromptDescription("Greets someone by name."),
		mcp.WithArgument("name", mcp.RequiredArgument(), mcp.ArgumentDescription("Who to greet.")),
	), greet)
	s.AddResource(mcp.NewResource("fixture://readme", "readme",
		mcp.WithResourceDescription("The fixture's readme."), mcp.WithMIMEType("text/plain")), readme)
	s.AddResourceTemplate(mcp.NewResourceTemplate("fixture://items/{id}", "item",
		mcp.WithTemplateDescription("One item, by id."), mcp.WithTemplateMIMEType("text/plain")), item)
	s.AddTool(mcp.NewTool("offer",
		mcp.WithDescription("Adds the prompt <name> and the resource fixture://extra/<name>; the server then says its prompts and resources changed."),
		mcp.WithString("name", mcp.Required()),
	), offer(s))
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
