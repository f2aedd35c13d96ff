package tools

import (
	"strings"
	"testing"

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
	if !strings.Contains(note.Text, "1800 bytes") || !strings.Contains(note.Text, "800 bytes were cut") {
		t.Fatalf("note %q", note.Text)
	}
	// A cut never splits a UTF-8 character.
	utf := &mcp.CallToolResult{Content: []mcp.Content{mcp.NewTextContent(strings.Repeat("é", 600))}}
	cut := capResult(utf, 1001).Content[0].(mcp.TextContent).Text
	if !strings.HasSuffix(cut, "é") || len(cut)%2 != 0 {
		t.Fatalf("UTF-8 split: %d bytes", len(cut))
	}
}
