package mcpwire

import (
	"bufio"
	"context"
	"errors"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
	"go.uber.org/goleak"

	"github.com/ardgate/ardgate/attach/fault"
	"github.com/ardgate/ardgate/guard/jsonrpc"
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

type rootsOf []mcp.Root

func (r rootsOf) ListRoots(context.Context, mcp.ListRootsRequest) (*mcp.ListRootsResult, error) {
	return &mcp.ListRootsResult{Roots: r}, nil
}

// An mcp-go client on Pipe against mcp-go's stdio server, on
// pipes, in-process: the handshake, a result many times the read buffer,
// a request from the server (roots/list) answered by the client, and a
// clean end.
func TestPipeTransportWithMCPServer(t *testing.T) {
	defer goleak.VerifyNone(t)
	s := server.NewMCPServer("pipe-test", "1")
	s.AddTool(mcp.NewTool("big"), func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultText(strings.Repeat("é", 300<<10)), nil // 600 KiB, and escapes nothing
	})
	s.AddTool(mcp.NewTool("roots"), func(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		res, err := s.RequestRoots(ctx, mcp.ListRootsRequest{})
		if err != nil {
			return nil, err
		}
		return mcp.NewToolResultText(res.Roots[0].URI), nil
	})
	toServerR, toServerW := io.Pipe()
	fromServerR, fromServerW := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan struct{})
	go func() {
		defer close(served)
		_ = server.NewStdioServer(s).Listen(ctx, toServerR, fromServerW)
	}()
	c := client.NewClient(NewPipe(fromServerR, toServerW, quiet, nil),
		client.WithRootsHandler(rootsOf{{URI: "file:///work", Name: "work"}}))
	defer func() {
		_ = c.Close()
		cancel()
		_ = fromServerW.Close()
		_ = toServerR.Close()
		<-served
	}()
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	init := mcp.InitializeRequest{}
	init.Params.ProtocolVersion = mcp.LATEST_LEGACY_PROTOCOL_VERSION
	if _, err := c.Initialize(ctx, init); err != nil {
		t.Fatalf("initialize: %v", err)
	}
	call := func(name string) string {
		t.Helper()
		req := mcp.CallToolRequest{}
		req.Params.Name = name
		ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		res, err := c.CallTool(ctx, req)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if res.IsError || len(res.Content) != 1 {
			t.Fatalf("%s: %+v", name, res)
		}
		return res.Content[0].(mcp.TextContent).Text
	}
	if got := call("big"); got != strings.Repeat("é", 300<<10) {
		t.Errorf("big: %d bytes came back, not the %d sent", len(got), 600<<10)
	}
	if got := call("roots"); got != "file:///work" {
		t.Errorf("roots: %q", got)
	}
}

// scriptedServer is a pipe transport, started, whose server is the test:
// it reads what the transport writes from toServer and writes its lines
// to fromServer.
func scriptedServer() (p *Pipe, toServer *io.PipeReader, fromServer *io.PipeWriter) {
	toServerR, toServerW := io.Pipe()
	fromServerR, fromServerW := io.Pipe()
	p = NewPipe(fromServerR, toServerW, quiet, nil)
	_ = p.Start(context.Background())
	return p, toServerR, fromServerW
}

// A scripted server writes what real ones sometimes do: a line that is not
// JSON, a reply nobody asked for, a late reply to a request its caller gave
// up on. Each is skipped and the next reply reaches its caller. When the
// server's stdout ends, a call waiting gets ErrTransportClosed.
func TestPipeTransportSkipsWhatItCannotRoute(t *testing.T) {
	defer goleak.VerifyNone(t)
	p, toServerR, fromServerW := scriptedServer()
	defer p.Close()
	requests := bufio.NewReader(toServerR)
	next := func() string {
		line, err := requests.ReadString('\n')
		if err != nil {
			t.Fatalf("the request never came: %v", err)
		}
		return line
	}
	send := func(lines ...string) {
		for _, l := range lines {
			if _, err := io.WriteString(fromServerW, l+"\n"); err != nil {
				t.Fatal(err)
			}
		}
	}

	// The caller of request 1 gives up before its reply.
	ctx, cancel := context.WithCancel(context.Background())
	gaveUp := make(chan error, 1)
	go func() {
		_, err := p.SendRequest(ctx, transport.JSONRPCRequest{JSONRPC: "2.0", ID: mcp.NewRequestId(int64(1)), Method: "slow"})
		gaveUp <- err
	}()
	next()
	cancel()
	if err := <-gaveUp; !errors.Is(err, context.Canceled) {
		t.Fatalf("request 1: %v, want context.Canceled", err)
	}

	got := make(chan *transport.JSONRPCResponse, 1)
	go func() {
		resp, err := p.SendRequest(context.Background(), transport.JSONRPCRequest{JSONRPC: "2.0", ID: mcp.NewRequestId("ardgate-2"), Method: "tools/call"})
		if err != nil {
			t.Errorf("request 2: %v", err)
		}
		got <- resp
	}()
	if line := next(); !strings.Contains(line, `"id":"ardgate-2"`) {
		t.Fatalf("request 2 went out as %q", line)
	}
	send(
		"this is not json",
		`{"jsonrpc":"2.0","id":"nobody-asked","result":{}}`,
		`{"jsonrpc":"2.0","id":1,"result":{"late":true}}`,
		`{"jsonrpc":"2.0","id":"ardgate-2","result":{"content":[`, // cut short
		`{"jsonrpc":"2.0","id":"ardgate-2","result":{"content":[{"type":"text","text":"ok"}]}}`,
	)
	select {
	case resp := <-got:
		if resp == nil || string(resp.Result) != `{"content":[{"type":"text","text":"ok"}]}` || resp.ID.String() != "string:ardgate-2" {
			t.Fatalf("request 2 got %+v", resp)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("request 2's reply never reached it")
	}

	// An error reply, then the server's stdout ends under a waiting call.
	go func() {
		resp, err := p.SendRequest(context.Background(), transport.JSONRPCRequest{JSONRPC: "2.0", ID: mcp.NewRequestId(int64(3)), Method: "nope"})
		if err != nil || resp.Error == nil || resp.Error.Code != mcp.METHOD_NOT_FOUND {
			t.Errorf("request 3: %+v, %v", resp, err)
		}
		got <- resp
	}()
	next()
	send(`{"jsonrpc":"2.0","id":3,"error":{"code":-32601,"message":"no such method"}}`)
	<-got
	ended := make(chan error, 1)
	go func() {
		_, err := p.SendRequest(context.Background(), transport.JSONRPCRequest{JSONRPC: "2.0", ID: mcp.NewRequestId(int64(4)), Method: "hang"})
		ended <- err
	}()
	next()
	_ = fromServerW.Close()
	select {
	case err := <-ended:
		if !errors.Is(err, transport.ErrTransportClosed) {
			t.Fatalf("request 4 after the end: %v, want ErrTransportClosed", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a call waiting when the server's stdout ended never returned")
	}
	if _, err := p.SendRequest(context.Background(), transport.JSONRPCRequest{JSONRPC: "2.0", ID: mcp.NewRequestId(int64(5)), Method: "x"}); !errors.Is(err, transport.ErrTransportClosed) {
		t.Fatalf("a call after the end: %v, want ErrTransportClosed", err)
	}
	go io.Copy(io.Discard, toServerR) // Close writes nothing, but must not block if it did
}

// Calls started with their own timeouts, out of order, share one deadline
// timer: each ends at its own deadline, never before it, and a call
// answered in time or started without a timeout is not ended by it.
func TestPipeTransportDeadlines(t *testing.T) {
	defer goleak.VerifyNone(t)
	p, toServerR, fromServerW := scriptedServer()
	go io.Copy(io.Discard, toServerR) // the server reads, and never answers unless told

	type end struct {
		name    string
		err     error
		elapsed time.Duration
	}
	ends := make(chan end, 8)
	start := func(name string, timeout time.Duration) {
		began := time.Now()
		line := `{"jsonrpc":"2.0","id":"` + name + `","method":"x"}`
		err := p.Send("string:"+name, endsWith(func(err error) {
			ends <- end{name, err, time.Since(began)}
		}), Limits{Timeout: timeout}, nil, nil, []byte(line), "\n")
		if err != nil {
			t.Fatal(err)
		}
	}
	timeouts := map[string]time.Duration{"slow": 600 * time.Millisecond, "quick": 100 * time.Millisecond, "middle": 300 * time.Millisecond}
	start("slow", timeouts["slow"])
	start("quick", timeouts["quick"])
	start("answered", 150*time.Millisecond)
	start("patient", 0)
	start("middle", timeouts["middle"])
	if _, err := io.WriteString(fromServerW, `{"jsonrpc":"2.0","id":"answered","result":{}}`+"\n"); err != nil {
		t.Fatal(err)
	}
	if e := <-ends; e.name != "answered" || e.err != nil {
		t.Fatalf("first to end: %+v, want the answered call", e)
	}
	for _, want := range []string{"quick", "middle", "slow"} {
		e := <-ends
		if e.name != want || !errors.Is(e.err, fault.ErrTimeout) {
			t.Fatalf("ended %s (%v), want %s with fault.ErrTimeout", e.name, e.err, want)
		}
		if e.elapsed < timeouts[want] {
			t.Errorf("%s ended after %v, before its timeout of %v", want, e.elapsed, timeouts[want])
		}
	}
	// The timer went quiet with no deadline left; a new one sets it again.
	start("later", 50*time.Millisecond)
	if e := <-ends; e.name != "later" || !errors.Is(e.err, fault.ErrTimeout) {
		t.Fatalf("after the timer went quiet: %+v", e)
	}
	select {
	case e := <-ends:
		t.Fatalf("%s ended: %v; it has no timeout", e.name, e.err)
	default:
	}
	_ = fromServerW.Close()
	if e := <-ends; e.name != "patient" || !errors.Is(e.err, transport.ErrTransportClosed) {
		t.Fatalf("at the end: %+v, want the patient call with ErrTransportClosed", e)
	}
	_ = p.Close()
}

// endsWith is a Waiter that tells only whether the request was answered
// (nil) or why not.
type endsWith func(err error)

func (e endsWith) Answered(Frame, *jsonrpc.Batch) { e(nil) }
func (e endsWith) Failed(err error)               { e(err) }

// A line over the message cap from the server is read through and
// dropped, and what it was is ended by its id wherever the id lies: the
// call it answers fails saying so (the TypeScript SDK's servers write the
// id after the result), a request of the server's is refused, and a
// notification is only dropped. The calls after it are answered as usual.
func TestPipeTransportLongLines(t *testing.T) {
	defer goleak.VerifyNone(t)
	p, toServerR, fromServerW := scriptedServer()
	requests := make(chan string, 4) // what the server reads
	go func() {
		defer close(requests)
		r := bufio.NewReader(toServerR)
		for {
			line, err := r.ReadString('\n')
			if err != nil {
				return
			}
			requests <- line
		}
	}()
	huge := strings.Repeat("x", jsonrpc.MaxMessage)
	call := func(id string) chan error {
		ended := make(chan error, 1)
		if err := p.Send("string:"+id, endsWith(func(err error) { ended <- err }), Limits{}, nil, nil,
			[]byte(`{"jsonrpc":"2.0","id":"`+id+`","method":"tools/call"}`), "\n"); err != nil {
			t.Fatal(err)
		}
		<-requests
		return ended
	}
	write := func(line string) {
		t.Helper()
		go io.WriteString(fromServerW, line+"\n")
	}

	big := call("big")
	write(`{"jsonrpc":"2.0","method":"notifications/message","params":{"data":"` + huge + `"}}`)
	write(`{"jsonrpc":"2.0","id":7,"method":"sampling/createMessage","params":{"x":"` + huge + `"}}`)
	if refusal := <-requests; !strings.Contains(refusal, `"id":7`) || !strings.Contains(refusal, "larger than the gateway's 10 MiB cap") {
		t.Fatalf("the server's request over the cap got %q", refusal)
	}
	write(`{"result":{"content":[{"type":"text","text":"` + huge + `"}]},"jsonrpc":"2.0","id":"big"}`)
	ended := func(c chan error) error {
		select {
		case err := <-c:
			return err
		case <-time.After(10 * time.Second):
			return errors.New("not ended after 10 s")
		}
	}
	if err := ended(big); !errors.Is(err, fault.ErrAnswerTooLarge) {
		t.Fatalf("a call answered over the cap ended with %v", err)
	}
	small := call("small")
	write(`{"jsonrpc":"2.0","id":"small","result":{}}`)
	if err := ended(small); err != nil {
		t.Fatalf("the call after: %v", err)
	}
	_ = fromServerW.Close()
	_ = p.Close()
	for range requests {
	}
}
