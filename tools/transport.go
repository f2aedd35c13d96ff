package tools

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"runtime"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/ardgate/ardgate/guard"
)

// ServeStdio serves one client over in and out until in ends or ctx is
// done. stdout carries only MCP frames; the session's attachments end with
// it.
func (g *Gateway) ServeStdio(ctx context.Context, in io.Reader, out io.Writer) error {
	s := server.NewStdioServer(g.mcp)
	s.SetErrorLogger(slog.NewLogLogger(g.log.Handler(), slog.LevelError))
	// An over-size frame is cut, so it gets a parse error and the session
	// goes on, instead of growing memory without bound.
	return s.Listen(ctx, guard.TruncateFrames(in, guard.MaxMessage), out)
}

// HTTP serves MCP over streamable HTTP at /mcp, with /healthz.
type HTTP struct {
	g          *Gateway
	streamable *server.StreamableHTTPServer
	mux        *http.ServeMux
	authToken  string
}

// HTTPOptions configure NewHTTP.
type HTTPOptions struct {
	// AuthToken, when set, must come as "Authorization: Bearer <token>".
	AuthToken string
	// IdleTTL ends sessions whose client went away without saying so;
	// zero means 30 minutes.
	IdleTTL time.Duration
}

// NewHTTP builds the HTTP handler.
//
// Sessions: mcp-go's newest protocol (2026-07-28) is stateless, with no
// session to hang attachments on. The gateway therefore offers only the
// session-oriented versions (2025-11-25 and older); a client on the newest
// version learns this from server/discover and negotiates down, keeping its
// attachments for the life of its Mcp-Session-Id.
func (g *Gateway) NewHTTP(opt HTTPOptions) *HTTP {
	if opt.IdleTTL == 0 {
		opt.IdleTTL = 30 * time.Minute
	}
	var legacy []string
	for _, v := range mcp.ValidProtocolVersions {
		if !mcp.IsModernProtocol(v) {
			legacy = append(legacy, v)
		}
	}
	h := &HTTP{g: g, authToken: opt.AuthToken, mux: http.NewServeMux()}
	h.streamable = server.NewStreamableHTTPServer(g.mcp,
		server.WithStateful(true),
		server.WithStreamableHTTPProtocolVersions(legacy...),
		server.WithSessionIdleTTL(opt.IdleTTL),
		server.WithEventStore(newEventStore(256, 16<<20)),
		server.WithStreamableHTTPLogger(g.log),
	)
	h.mux.Handle("/mcp", h.guard(h.streamable))
	h.mux.HandleFunc("GET /healthz", h.healthz)
	h.mux.Handle("GET /metrics", h.guard(g.metrics.handler()))
	return h
}

func (h *HTTP) ServeHTTP(w http.ResponseWriter, r *http.Request) { h.mux.ServeHTTP(w, r) }

// Shutdown ends every HTTP session (and so its attachments) and releases
// open event streams, so that http.Server.Shutdown can finish.
func (h *HTTP) Shutdown(ctx context.Context) error { return h.streamable.Shutdown(ctx) }

// guard applies the gateway's HTTP access rules before MCP sees a request:
// the Origin check against DNS rebinding from browsers, the bearer token,
// and the body cap.
func (h *HTTP) guard(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if o := r.Header.Get("Origin"); o != "" && !originAllowed(o, r.Host) {
			http.Error(w, "Forbidden: Origin "+o+" may not use this gateway", http.StatusForbidden)
			return
		}
		if h.authToken != "" {
			got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
			if !ok || subtle.ConstantTimeCompare([]byte(got), []byte(h.authToken)) != 1 {
				w.Header().Set("WWW-Authenticate", `Bearer realm="ardgate"`)
				http.Error(w, "Unauthorized: send Authorization: Bearer <ARDGATE_AUTH_TOKEN>", http.StatusUnauthorized)
				return
			}
		}
		r.Body = http.MaxBytesReader(w, r.Body, guard.MaxMessage)
		next.ServeHTTP(w, r)
	})
}

// originAllowed accepts loopback origins and the gateway's own host.
func originAllowed(origin, host string) bool {
	u, err := url.Parse(origin)
	if err != nil || u.Host == "" {
		return false
	}
	if strings.EqualFold(u.Host, host) {
		return true
	}
	name := u.Hostname()
	if strings.EqualFold(name, "localhost") {
		return true
	}
	ip := net.ParseIP(name)
	return ip != nil && ip.IsLoopback()
}

func (h *HTTP) healthz(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{
		"status":     "ok",
		"version":    h.g.opts.Version,
		"sessions":   len(h.g.manager.Sessions()),
		"goroutines": runtime.NumGoroutine(),
		"uptime_s":   int64(time.Since(h.g.started).Seconds()),
	})
}
