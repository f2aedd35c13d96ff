package attach

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ardgate/ardgate/attach/mcpwire"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"go.uber.org/goleak"
)

// A server's requests to the client: relayed while the client is told
// it may be asked, refused past maxRelaying waiting, and stopped when the
// server cancels one; a method the client did not declare is refused.
func TestAnswerRequest(t *testing.T) {
	defer goleak.VerifyNone(t)
	release := make(chan struct{})
	u := &upstream{log: slog.New(slog.NewTextHandler(io.Discard, nil)), requests: &clientRequests{
		caps: mcp.ClientCapabilities{Sampling: &mcp.SamplingCapability{}},
		relay: func(ctx context.Context, _ string, params json.RawMessage) (json.RawMessage, error) {
			select {
			case <-release:
				return params, nil
			case <-ctx.Done():
				return nil, &RelayError{Code: -32800, Message: "cancelled: " + context.Cause(ctx).Error()}
			}
		},
		wait: time.Minute,
	}}
	req := func(id int, method string) transport.JSONRPCRequest {
		return transport.JSONRPCRequest{JSONRPC: "2.0", ID: mcp.NewRequestId(int64(id)), Method: method, Params: map[string]any{"n": id}}
	}
	if r := u.answerRequest(context.Background(), req(0, string(mcp.MethodElicitationCreate))); r.Error == nil || r.Error.Code != mcp.METHOD_NOT_FOUND {
		t.Fatalf("a method the client did not declare: %+v", r)
	}

	var wg sync.WaitGroup
	answers := make([]*transport.JSONRPCResponse, maxRelaying+1)
	first := make(chan *transport.JSONRPCResponse, 1)
	go func() {
		first <- u.answerRequest(context.Background(), req(1, string(mcp.MethodSamplingCreateMessage)))
	}()
	for i := 2; i <= maxRelaying; i++ {
		wg.Go(func() {
			answers[i] = u.answerRequest(context.Background(), req(i, string(mcp.MethodSamplingCreateMessage)))
		})
	}
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		u.mu.Lock()
		n := len(u.relaying)
		u.mu.Unlock()
		if n == maxRelaying {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d requests waiting, want %d", n, maxRelaying)
		}
	}
	if r := u.answerRequest(context.Background(), req(99, string(mcp.MethodSamplingCreateMessage))); r.Error == nil || !strings.Contains(r.Error.Message, "to answer already") {
		t.Fatalf("a request past maxRelaying: %+v", r)
	}
	// The server gives up on request 1: it ends, unanswered (a cancelled
	// request gets no answer), the others wait on.
	cancelOf := func(id int) {
		u.onNotification(mcp.JSONRPCNotification{Notification: mcp.Notification{Method: string(mcp.MethodNotificationCancelled),
			Params: mcp.NotificationParams{AdditionalFields: map[string]any{"requestId": id}}}})
	}
	// unanswered says whether the request answering on ch ended, within 5
	// s, with no answer, as a request the server cancelled must.
	unanswered := func(ch <-chan *transport.JSONRPCResponse, what string) {
		t.Helper()
		select {
		case r := <-ch:
			if r != nil {
				t.Errorf("%s was answered: %+v", what, r)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("%s went on", what)
		}
	}
	cancelOf(1)
	unanswered(first, "the request the server cancelled")
	// A cancellation read before its request reached the relay (requests
	// are answered off the reader) still stops it.
	cancelOf(50)
	early := make(chan *transport.JSONRPCResponse, 1)
	go func() {
		early <- u.answerRequest(context.Background(), req(50, string(mcp.MethodSamplingCreateMessage)))
	}()
	unanswered(early, "the request cancelled before it came")
	close(release)
	wg.Wait()
	for i := 2; i <= maxRelaying; i++ {
		if r := answers[i]; r.Error != nil || fmt.Sprintf("%s", r.Result) != fmt.Sprintf(`{"n":%d}`, i) {
			t.Errorf("request %d: %+v", i, r)
		}
	}
}

// A stdio server's request reaches the relay with its params as they
// came: members in the server's order (an elicitation form's fields),
// numbers with all their digits.
func TestRelayedParamsAsTheyCame(t *testing.T) {
	defer goleak.VerifyNone(t)
	p, toServerR, fromServerW := scriptedServer()
	defer p.Close()
	defer fromServerW.Close() // the server's stdout ends: the reader stops
	got := make(chan json.RawMessage, 1)
	u := &upstream{log: quiet, requests: &clientRequests{caps: mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapability{}}, wait: time.Minute,
		relay: func(_ context.Context, _ string, params json.RawMessage) (json.RawMessage, error) {
			got <- params
			return json.RawMessage(`{"action":"decline"}`), nil
		}}}
	p.SetRequestHandler(func(ctx context.Context, req transport.JSONRPCRequest) (*transport.JSONRPCResponse, error) {
		return u.answerRequest(ctx, req), nil
	})
	const params = `{"message":"who?","requestedSchema":{"type":"object","properties":{"zeta":{"type":"string"},"alpha":{"type":"integer","default":12345678901234567890}}}}`
	if _, err := io.WriteString(fromServerW, `{"jsonrpc":"2.0","id":7,"method":"elicitation/create","params":`+params+"}\n"); err != nil {
		t.Fatal(err)
	}
	select {
	case p := <-got:
		if string(p) != params {
			t.Errorf("relayed params %s; want %s", p, params)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the request was not relayed")
	}
	answer, err := bufio.NewReader(toServerR).ReadString('\n')
	if err != nil || !strings.Contains(answer, `"id":7`) || !strings.Contains(answer, `"decline"`) {
		t.Errorf("the answer to the server: %q %v", answer, err)
	}
}

// scriptedServer is a pipe to a server the test plays: it reads what
// the gateway writes to toServer and writes the server's lines to
// fromServer.
func scriptedServer() (p *mcpwire.Pipe, toServer *io.PipeReader, fromServer *io.PipeWriter) {
	toServerR, toServerW := io.Pipe()
	fromServerR, fromServerW := io.Pipe()
	p = mcpwire.NewPipe(fromServerR, toServerW, quiet, nil)
	_ = p.Start(context.Background())
	return p, toServerR, fromServerW
}

// quiet is a logger that writes nothing.
var quiet = slog.New(slog.DiscardHandler)
