package tools

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"time"
)

// ErrCallsCut is returned by RunStdio and RunHTTP when calls were still
// running as the drain ended (its deadline, or a second signal to stop):
// they were ended without their answers.
var ErrCallsCut = errors.New("calls still running when the drain ended were cut")

// Grace gives the context within which running calls may finish once the
// gateway is told to stop: main's ends after 10 s or at a second signal.
type Grace func() (context.Context, context.CancelFunc)

// RunStdio serves the stdio session until the client ends it or stop ends.
// At stop, new calls are refused and running ones finish within grace;
// then the session ends, and its upstreams with it.
func (g *Gateway) RunStdio(stop context.Context, grace Grace, in io.Reader, out io.Writer) error {
	lctx, lcancel := context.WithCancel(context.Background())
	defer lcancel()
	var cut error
	drained := make(chan struct{})
	go func() {
		defer close(drained)
		select {
		case <-stop.Done():
			cut = g.drainWithin(grace)
			lcancel()
		case <-lctx.Done():
		}
	}()
	served := make(chan error, 1)
	go func() { served <- g.ServeStdio(lctx, in, out) }()
	var err error
	select {
	case err = <-served:
	case <-lctx.Done():
		// A client that reads nothing more of stdout would hold the
		// session's last writes, and the gateway, for good: its
		// upstreams are ended all the same (Close).
		select {
		case err = <-served:
		case <-time.After(2 * time.Second):
			g.log.Warn("the client is not reading stdout: exiting without writing the rest")
		}
	}
	lcancel()
	<-drained
	if err != nil && !errors.Is(err, context.Canceled) {
		return fmt.Errorf("stdio: %w", err)
	}
	return cut
}

// RunHTTP serves streamable HTTP on ln until stop ends (or the listener
// fails). At stop, /healthz turns 503, new sessions and calls are
// refused, and running calls finish within grace; then every session
// ends and the server shuts down.
func (g *Gateway) RunHTTP(stop context.Context, grace Grace, ln net.Listener, opt HTTPOptions) error {
	h := g.NewHTTP(opt)
	srv := &http.Server{Handler: h, ReadHeaderTimeout: DefaultReadHeaderTimeout, IdleTimeout: DefaultIdleConnTimeout,
		ErrorLog: slog.NewLogLogger(g.log.Handler(), slog.LevelWarn)}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return fmt.Errorf("http server: %w", err)
	case <-stop.Done():
	}
	cut := g.drainWithin(grace)
	sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_ = h.Shutdown(sctx) // ends sessions, releasing open event streams
	if err := srv.Shutdown(sctx); err != nil {
		g.log.Warn("http shutdown", "err", err)
	}
	return cut
}

// drainWithin lets running calls finish within grace's context.
func (g *Gateway) drainWithin(grace Grace) error {
	g.log.Info("shutting down: letting running calls finish (signal again to stop at once)")
	ctx, cancel := grace()
	defer cancel()
	return g.Drain(ctx)
}
