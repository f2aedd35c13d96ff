package tools

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// stdioPipes serves g's stdio transport in-process on real pipes: the
// client's ends, and what ServeStdio returned, once it has.
type stdioPipes struct {
	in     *os.File // the client writes here
	out    *os.File // and reads here
	served chan error
}

func newStdioPipes(t *testing.T, ctx context.Context, g *Gateway) *stdioPipes {
	t.Helper()
	inR, inW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	p := &stdioPipes{in: inW, out: outR, served: make(chan error, 1)}
	t.Cleanup(func() { // what still waits on the client ends
		_ = inW.Close()
		_ = outR.Close()
	})
	go func() {
		err := g.ServeStdio(ctx, inR, outW)
		_ = inR.Close()
		_ = outW.Close()
		p.served <- err
	}()
	return p
}

// pings writes n pings, ids from 1, in writes of 256, and says how many
// it has written; done hears how the writing ended.
func (p *stdioPipes) pings(n int, written *atomic.Int64, done chan<- error) {
	var buf []byte
	for i := 1; i <= n; i++ {
		buf = fmt.Appendf(buf, `{"jsonrpc":"2.0","id":%d,"method":"ping"}`+"\n", i)
		if i%256 == 0 || i == n {
			if _, err := p.in.Write(buf); err != nil {
				done <- err
				return
			}
			written.Store(int64(i))
			buf = buf[:0]
		}
	}
	done <- nil
}

// stdioWriter waits for ServeStdio to have set up its writer.
func stdioWriter(t *testing.T, g *Gateway) *stdioReader {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
		if r := g.stdioOut.Load(); r != nil {
			return r
		}
		if time.Now().After(deadline) {
			t.Fatal("ServeStdio set up no writer in 10 s")
		}
	}
}

// fillBacklog writes n pings and reads nothing until the gateway holds
// its backlog of unread answers. It fails if the gateway read every ping
// first: it then held all their answers.
func fillBacklog(t *testing.T, p *stdioPipes, r *stdioReader, bound, n int) (*atomic.Int64, chan error) {
	t.Helper()
	var written atomic.Int64
	done := make(chan error, 1)
	go p.pings(n, &written, done)
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(time.Millisecond) {
		// Asked aside: a writer that waits on the client may hold it.
		waiting := make(chan int, 1)
		go func() { waiting <- r.w.Waiting() }()
		select {
		case err := <-done:
			t.Fatalf("the gateway read all %d pings (%v) while the client read nothing", n, err)
		case held := <-waiting:
			if held >= bound {
				return &written, done
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("20 s on, %d of %d pings written, %d bytes of answers held: the backlog never reached %d bytes", written.Load(), n, r.w.Waiting(), bound)
		}
	}
}

// A stdio client that writes and does not read stops being read once its
// unread answers reach the backlog's bound: what the gateway holds stays
// there, answers on mcp-go's path included (ping), and once the client
// reads again every answer comes, none lost. The gateway read every
// request, and held a goroutine and an answer for each, without bound.
func TestStdioBacklogBounded(t *testing.T) {
	const bound, n = 256 << 10, 30000
	// Over the bound by at most a frame: a writer that finds room puts
	// its whole frame in.
	const slack = 4 << 10
	g := stdioGateway(nil, Options{Version: "test", StdioBacklog: bound})
	defer g.Close()
	p := newStdioPipes(t, context.Background(), g)
	r := stdioWriter(t, g)
	written, done := fillBacklog(t, p, r, bound, n)
	if held := r.w.Waiting(); held > bound+slack {
		t.Fatalf("the gateway holds %d bytes of unread answers, bound %d", held, bound)
	}
	if w := written.Load(); w == n {
		t.Fatalf("every ping was written with the backlog full")
	}

	// While the client reads, the backlog drains and fills again, never
	// past its bound.
	var peak atomic.Int64
	stop := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		for {
			if held := int64(r.w.Waiting()); held > peak.Load() {
				peak.Store(held)
			}
			select {
			case <-stop:
				return
			case <-time.After(100 * time.Microsecond):
			}
		}
	}()
	seen := make([]bool, n+1)
	out := bufio.NewReader(p.out)
	for got := 0; got < n; got++ {
		line, err := out.ReadBytes('\n')
		if err != nil {
			t.Fatalf("after %d answers: %v", got, err)
		}
		var a struct {
			ID     json.RawMessage `json:"id"`
			Result json.RawMessage `json:"result"`
		}
		if err := json.Unmarshal(line, &a); err != nil || a.Result == nil {
			t.Fatalf("answer %d: %q (%v)", got, line, err)
		}
		id, err := strconv.Atoi(string(a.ID))
		if err != nil || id < 1 || id > n || seen[id] {
			t.Fatalf("answer %d: id %s unknown or answered twice", got, a.ID)
		}
		seen[id] = true
	}
	close(stop)
	<-sampled
	if err := <-done; err != nil {
		t.Fatalf("writing the pings: %v", err)
	}
	if held := peak.Load(); held > bound+slack {
		t.Errorf("while the client read, the gateway held up to %d bytes unread, bound %d", held, bound)
	}
	_ = p.in.Close()
	if err := <-p.served; err != nil {
		t.Errorf("ServeStdio: %v", err)
	}
	_ = p.out.Close()
}

// A session whose client never reads again still ends when the gateway
// is told to stop and the client's end of stdout goes: what waited on
// the client (the writers, mcp-go's handlers, the backlog's writer) ends,
// no goroutine left behind.
func TestStdioBacklogStop(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	const bound = 64 << 10
	g := stdioGateway(nil, Options{Version: "test", StdioBacklog: bound})
	ctx, cancel := context.WithCancel(context.Background())
	p := newStdioPipes(t, ctx, g)
	r := stdioWriter(t, g)
	_, done := fillBacklog(t, p, r, bound, 20000)
	cancel()
	_ = p.out.Close() // the client goes, its answers unread
	select {
	case err := <-p.served:
		if err != nil && err != context.Canceled {
			t.Errorf("ServeStdio: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("ServeStdio did not return 10 s after the session was told to stop and its client went")
	}
	_ = p.in.Close()
	<-done // the pings' writer: the pipe is closed under it
	g.Close()
}
