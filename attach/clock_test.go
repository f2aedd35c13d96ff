package attach

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/ardgate/ardgate/attach/mcpwire"
	"github.com/ardgate/ardgate/guard/jsonrpc"
	"go.uber.org/goleak"
)

// Each way a call runs out of time says which it was.
func TestOutOfTime(t *testing.T) {
	a := &Attachment{Name: "fx"}
	reported := &Progress{}
	reported.reported.Store(true)
	long := callLimits{timeout: time.Second, most: 10 * time.Second}
	same := callLimits{timeout: time.Second, most: time.Second}
	for _, c := range []struct {
		name   string
		limits callLimits
		ran    time.Duration
		p      *Progress
		want   string
	}{
		{"no progress asked", long, time.Second, nil, "fx did not answer slow within 1s"},
		{"progress asked, none came", long, time.Second, &Progress{}, "fx did not answer slow, nor report progress on it, within 1s"},
		{"progress, then silence", long, 3 * time.Second, reported, "fx reported progress on slow, then neither answered nor reported more within 1s"},
		{"progress to the most", long, 10 * time.Second, reported, "fx was still working on slow after 10s, the most one call may take (max_call_time), though it reported progress"},
		{"progress, no longer most", same, time.Second, reported, "fx did not answer slow within 1s; its progress gave it no more time, as max_call_time is not longer than that"},
		{"held by the client to the most", long, 10 * time.Second, nil, "fx did not answer slow within 10s, the most one call may take (max_call_time)"},
		{"held to the most, progress asked", long, 10 * time.Second, &Progress{}, "fx did not answer slow within 10s, the most one call may take (max_call_time)"},
	} {
		err := c.limits.outOfTime(a, "slow", c.ran, c.p)
		if !errors.Is(err, ErrTimeout) || !strings.HasSuffix(err.Error(), c.want) {
			t.Errorf("%s: %v; want %q", c.name, err, c.want)
		}
	}
}

// A call whose server asks the client is not cut at its timeout while
// the client has not answered, and is cut a timeout after the answer;
// without an answer, at the most a call may take. The same on a context
// (within) and on a stdio server's pipe.
func TestHeldByTheClient(t *testing.T) {
	defer goleak.VerifyNone(t)
	limits := callLimits{timeout: 200 * time.Millisecond, most: 1500 * time.Millisecond}
	clocks := map[string]func(w *mcpwire.ClientWait) (ended <-chan time.Duration, stop func()){
		"within": func(w *mcpwire.ClientWait) (<-chan time.Duration, func()) {
			began := time.Now()
			ctx, cancel := limits.within(context.Background(), nil, w)
			ended := make(chan time.Duration, 1)
			go func() {
				<-ctx.Done()
				if context.Cause(ctx) == errOutOfTime {
					ended <- time.Since(began)
				}
			}()
			return ended, cancel
		},
		"pipe": func(w *mcpwire.ClientWait) (<-chan time.Duration, func()) {
			toServerR, toServerW := io.Pipe()
			fromServerR, fromServerW := io.Pipe()
			p := mcpwire.NewPipe(fromServerR, toServerW, quiet, w)
			_ = p.Start(context.Background())
			go io.Copy(io.Discard, toServerR)
			began := time.Now()
			ended := make(chan time.Duration, 1)
			if err := p.Send("string:held", endsWith(func(err error) {
				if errors.Is(err, ErrTimeout) {
					ended <- time.Since(began)
				}
			}), limits.wire(), nil, nil, []byte(`{"jsonrpc":"2.0","id":"held","method":"x"}`), "\n"); err != nil {
				t.Fatal(err)
			}
			return ended, func() {
				_ = fromServerW.Close()
				_ = p.Close()
			}
		},
	}
	for name, clock := range clocks {
		t.Run(name+", answered", func(t *testing.T) {
			w := &mcpwire.ClientWait{}
			w.Begin()
			ended, stop := clock(w)
			defer stop()
			select {
			case ran := <-ended:
				t.Fatalf("out of time after %v, its server waiting on the client", ran)
			case <-time.After(3 * limits.timeout):
			}
			answered := time.Now()
			w.End()
			ran := <-ended
			if since := time.Since(answered); since < limits.timeout || ran >= limits.most {
				t.Fatalf("out of time %v after the answer, %v after the start; want a timeout (%v) after the answer", since, ran, limits.timeout)
			}
		})
		t.Run(name+", never answered", func(t *testing.T) {
			w := &mcpwire.ClientWait{}
			w.Begin()
			ended, stop := clock(w)
			defer stop()
			if ran := <-ended; ran < limits.most {
				t.Fatalf("out of time after %v, before the most (%v)", ran, limits.most)
			}
		})
	}
}

// endsWith is a request's waiter that hears only how it ended.
type endsWith func(err error)

func (e endsWith) Answered(mcpwire.Frame, *jsonrpc.Batch) { e(nil) }
func (e endsWith) Failed(err error)                       { e(err) }
