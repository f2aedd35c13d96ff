package tools

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// attach_resource's result gives what a model needs to call the tools in
// the run that attached them, which a framework that fixed its tools at
// the run's start never lists: their input schemas, compacted and within
// bounds, a sentence saying so, and a call of call_attached_tool to copy,
// which works as given once its placeholders are filled in.
func TestAttachSaysHowToCall(t *testing.T) {
	t.Parallel()
	schema := func(pad int) string {
		return fmt.Sprintf(`{"type":"object","properties":{"p":{"type":"string","description":"%s"}}}`, strings.Repeat("x", pad))
	}
	tools := []string{`{"name":"echo","description":"Echoes","inputSchema":{ "type": "object",
		"properties": {"message": {"type": "string"}, "times": {"type": "integer"}, "n": {}},
		"required": ["message", "n", "missing", "` + strings.Repeat("l", 65) + `"] }}`,
		`{"name":"big","inputSchema":` + schema(maxAttachedSchema) + `}`}
	for i := range 9 { // 8 fit what is left of the budget of them all, the 9th does not
		tools = append(tools, fmt.Sprintf(`{"name":"medium%d","inputSchema":%s}`, i, schema(3900)))
	}
	up := rawToolsUpstream(t, func(string) string { return `{"tools":[` + strings.Join(tools, ",") + `]}` })
	s, res := attachAt(t, up.URL)
	if res.IsError {
		t.Fatalf("attach: %s", firstText(res))
	}
	var out struct {
		Tools []struct {
			Name        string
			InputSchema json.RawMessage `json:"inputSchema"`
		}
		HowToCall   string          `json:"how_to_call"`
		CallExample json.RawMessage `json:"call_example"`
	}
	if err := json.Unmarshal(res.RawStructuredContent, &out); err != nil {
		t.Fatal(err)
	}
	schemed := map[string]string{}
	for _, tl := range out.Tools {
		schemed[tl.Name] = string(tl.InputSchema)
	}
	const echo = `{"type":"object","properties":{"message":{"type":"string"},"times":{"type":"integer"},"n":{}},"required":["message","n","missing","` +
		`lllllllllllllllllllllllllllllllllllllllllllllllllllllllllllllllll"]}`
	if len(out.Tools) != 11 || schemed["mcp_remote__echo"] != echo || schemed["mcp_remote__big"] != "" ||
		schemed["mcp_remote__medium7"] == "" || schemed["mcp_remote__medium8"] != "" {
		t.Errorf("the tools' input schemas: %v", schemed)
	}
	for _, want := range []string{"a framework that fixes a run's tools at its start lists them only in its next run", "call_attached_tool",
		"The input schemas of 2 of them are left out for size: tool_search gives them."} {
		if !strings.Contains(out.HowToCall, want) {
			t.Errorf("how_to_call %q does not say %q", out.HowToCall, want)
		}
	}
	const example = `{"tool":"call_attached_tool","arguments":{"name":"mcp_remote__echo","arguments":{"message":"\u003cstring\u003e","missing":"\u003cvalue\u003e","n":"\u003cvalue\u003e"}}}`
	if string(out.CallExample) != example {
		t.Fatalf("call_example %s, want %s", out.CallExample, example)
	}
	var call struct {
		Tool      string
		Arguments map[string]any
	}
	_ = json.Unmarshal(out.CallExample, &call)
	if res := s.call(call.Tool, call.Arguments); res.IsError || firstText(res) != "ok" {
		t.Errorf("the example call: %s", firstText(res))
	}
}
