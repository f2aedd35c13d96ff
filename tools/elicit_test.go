package tools

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/ardgate/ardgate/testdata/tsoauth"
)

// acceptingUser is a client's side of URL-mode elicitation that accepts
// at once, handing the URL on: the test plays the user's browser later.
type acceptingUser struct{ urls chan string }

func (u acceptingUser) Elicit(_ context.Context, req mcp.ElicitationRequest) (*mcp.ElicitationResult, error) {
	u.urls <- req.Params.URL
	return &mcp.ElicitationResult{ElicitationResponse: mcp.ElicitationResponse{Action: mcp.ElicitationResponseActionAccept}}, nil
}

// urlClient connects to tg as a client that declared URL-mode
// elicitation, answered by user, over real streamable HTTP with its
// event stream open; heard hears each notification.
func urlClient(t *testing.T, tg *testGateway, user client.ElicitationHandler, heard func(mcp.JSONRPCNotification)) *client.Client {
	t.Helper()
	tr, err := transport.NewStreamableHTTP(tg.url, transport.WithContinuousListening())
	if err != nil {
		t.Fatal(err)
	}
	c := client.NewClient(tr, client.WithProtocolVersion(mcp.ProtocolVersion20251125), client.WithElicitationHandler(user),
		client.WithClientCapabilities(mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapability{URL: &struct{}{}}}))
	t.Cleanup(func() { _ = c.Close() })
	c.OnNotification(heard)
	ctx := context.Background()
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Initialize(ctx, mcp.InitializeRequest{}); err != nil {
		t.Fatal(err)
	}
	return c
}

// attachRunning starts attach_resource of urn under token; its result
// comes on the channel.
func attachRunning(c *client.Client, urn, token string) <-chan *mcp.CallToolResult {
	done := make(chan *mcp.CallToolResult, 1)
	go func() {
		req := mcp.CallToolRequest{}
		req.Params.Name, req.Params.Arguments = "attach_resource", map[string]any{"urn": urn}
		req.Params.Meta = &mcp.Meta{ProgressToken: token}
		res, err := c.CallTool(context.Background(), req)
		if err != nil {
			res = failure("test", "%v", err)
		}
		done <- res
	}()
	return done
}

// While the user takes their time in the browser after accepting a URL
// elicitation, attach_resource keeps beating progress, as the stage
// "waiting for the user"; once the redirect back came it attaches in the
// same call. The progress of the whole call rises, the attach again
// included: it does not report the stages it passed before again.
func TestURLElicitationProgress(t *testing.T) {
	const urn = "urn:air:test:oauth"
	tg := newGatewayWith(t, 10*time.Second, Options{Version: "test", ProgressBeat: 20 * time.Millisecond}, HTTPOptions{}, nil,
		remoteEntry(urn, tsoauth.Start(t, "../testdata/ts-client")))
	user := acceptingUser{urls: make(chan string, 1)}
	const token = "elicit"
	var mu sync.Mutex
	var progress []map[string]any
	beats := make(chan struct{}, 64) // a beat of the user's stage
	c := urlClient(t, tg, user, func(n mcp.JSONRPCNotification) {
		f := n.Params.AdditionalFields
		if n.Method != string(mcp.MethodNotificationProgress) || f["progressToken"] != token {
			return
		}
		mu.Lock()
		progress = append(progress, f)
		mu.Unlock()
		if msg, _ := f["message"].(string); strings.HasPrefix(msg, userStage) && strings.HasSuffix(msg, "s)") {
			select {
			case beats <- struct{}{}:
			default: // the test has heard enough
			}
		}
	})
	done := attachRunning(c, urn, token)
	authURL := <-user.urls
	<-beats
	<-beats // two beats after the user accepted, before the browser goes
	status, page, _ := get(t, &http.Client{}, authURL)
	if status != http.StatusOK || !strings.Contains(page, "ardgate is authorized") {
		t.Fatalf("the redirect back: HTTP %d %q", status, page)
	}
	if res := <-done; res.IsError {
		t.Fatalf("attach through URL elicitation: %s", firstText(res))
	}
	mu.Lock()
	defer mu.Unlock()
	last := -1.0
	for _, f := range progress {
		p, _ := f["progress"].(float64)
		if p <= last || f["total"] != float64(len(attachStages)) || p >= float64(len(attachStages)) {
			t.Fatalf("progress %v after %v, total %v: %v", p, last, f["total"], progress)
		}
		last = p
	}
	if last < float64(len(attachStages)-1) {
		t.Errorf("the attach again reported no %q: %v", attachStages[len(attachStages)-1], progress)
	}
}

// A user who accepts the URL elicitation, then declines at the
// authorization server, ends the step too: the call fails as cancelled,
// naming what was declined, and the client is told the elicitation
// completed.
func TestURLElicitationDeclinedAtServer(t *testing.T) {
	const urn = "urn:air:test:oauth"
	tg := newGateway(t, 10*time.Second, remoteEntry(urn, tsoauth.Start(t, "../testdata/ts-client")))
	user := acceptingUser{urls: make(chan string, 1)}
	completed := make(chan any, 1)
	c := urlClient(t, tg, user, func(n mcp.JSONRPCNotification) {
		if n.Method == string(mcp.MethodNotificationElicitationComplete) {
			completed <- n.Params.AdditionalFields["elicitationId"]
		}
	})
	done := attachRunning(c, urn, "declined")
	u, err := url.Parse(<-user.urls)
	if err != nil {
		t.Fatal(err)
	}
	declined := u.Query().Get("redirect_uri") + "?" + url.Values{"state": {u.Query().Get("state")}, "error": {"access_denied"}}.Encode()
	if status, page, _ := get(t, &http.Client{}, declined); status != http.StatusOK || !strings.Contains(page, "declined") {
		t.Fatalf("the redirect back of a decline: HTTP %d %q", status, page)
	}
	res := <-done
	var f failureBody
	if err := json.Unmarshal(res.RawStructuredContent, &f); err != nil || f.Code != "cancelled" || !strings.Contains(f.Error, "declined") || !strings.Contains(f.Error, urn) {
		t.Fatalf("attach declined at the authorization server: %s", firstText(res))
	}
	if id := <-completed; id == "" || id == nil {
		t.Fatalf("notifications/elicitation/complete without its elicitationId: %v", id)
	}
}
