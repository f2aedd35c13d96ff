package tools

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/ardgate/ardgate/guard/jsonrpc"
)

// failureCode is the code of res, a failure the gateway made.
func failureCode(t *testing.T, res *mcp.CallToolResult) string {
	t.Helper()
	var f failureBody
	if res == nil || !res.IsError || json.Unmarshal(res.RawStructuredContent, &f) != nil {
		t.Fatalf("not a failure of the gateway's (isError %v)", res != nil && res.IsError)
	}
	return f.Code
}

// No tool result the gateway writes is over the cap it enforces on every
// message: one that would be is a failure saying so. Go's encoder
// writes "<" as \u003c, so a result of 2 MiB of text can encode to 12.
func TestToolResultOverTheFrameCap(t *testing.T) {
	t.Parallel()
	g := newGateway(t, time.Second).g
	for name, text := range map[string]string{
		"over the cap":         strings.Repeat("a", jsonrpc.MaxMessage),
		"over it once encoded": strings.Repeat("<", 2<<20),
	} {
		handler := g.limit(func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return mcp.NewToolResultText(text), nil
		})
		req := mcp.CallToolRequest{}
		req.Params.Name = "discover_resources"
		res, err := handler(context.Background(), req)
		if err != nil {
			t.Fatal(err)
		}
		if code := failureCode(t, res); code != "size_limit" || !strings.Contains(firstText(res), "over the 10 MiB the gateway sends in one message") {
			t.Errorf("%s: code %q: %s", name, code, firstText(res))
		}
	}
	small := mcp.NewToolResultText(strings.Repeat("<", 1<<20))
	if fitFrame("t", small) != small {
		t.Error("a result under the cap was replaced")
	}
}

// On the fast path alike: a result over max_result_bytes is decoded,
// cut and encoded again, and what it encodes to is held to the cap.
func TestFastResultOverTheFrameCap(t *testing.T) {
	t.Parallel()
	g := newGateway(t, time.Second).g
	res := mcp.NewToolResultText(strings.Repeat("<", 9<<20))
	raw, err := json.Marshal(res) // as an upstream that does not escape would send it
	if err != nil {
		t.Fatal(err)
	}
	raw = []byte(strings.ReplaceAll(string(raw), `\u003c`, "<"))
	g.running.Add(1) // what admit adds, and a.end takes off
	f := g.fastResult(context.Background(), nil, callFrame{ID: "7", Name: "mcp_up__big"}, admission{g: g, name: "mcp_up__big", start: time.Now()}, raw, nil)
	if len(f.Result) > maxResultFrame {
		t.Fatalf("a result of %d MiB was written", len(f.Result)>>20)
	}
	out, err := mcp.ParseCallToolResult((*json.RawMessage)(&f.Result))
	if err != nil {
		t.Fatal(err)
	}
	if code := failureCode(t, out); code != "size_limit" {
		t.Errorf("code %q: %s", code, firstText(out))
	}
}
