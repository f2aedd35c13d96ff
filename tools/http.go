package tools

import (
	"context"
	"net/http"
	"time"

	"github.com/ardgate/ardgate/attach"
	"github.com/ardgate/ardgate/config"
	"github.com/ardgate/ardgate/tools/serve"
)

// HTTP serves MCP over streamable HTTP at /mcp, with /healthz, /metrics,
// the OAuth callback and the keys page (serve.HTTP): the gateway is its
// tool surface (httpTools), and its fast calls are read as callFrames.
type HTTP = serve.HTTP[callFrame]

// HTTPOptions configure NewHTTP.
type HTTPOptions = serve.HTTPOptions

// HTTPOptionsFrom returns the options cfg sets.
func HTTPOptionsFrom(cfg *config.Config) HTTPOptions {
	return HTTPOptions{AuthToken: cfg.AuthToken, MaxSessions: cfg.MaxSessions, IdleTTL: cfg.SessionIdleTimeout, ReapAfter: cfg.SessionReapAfter}
}

// The defaults of HTTPOptions the http.Server that serves HTTP needs too.
const (
	DefaultIdleConnTimeout   = serve.DefaultIdleConnTimeout
	DefaultReadHeaderTimeout = serve.DefaultReadHeaderTimeout
)

// NewHTTP builds the HTTP handler (serve.NewHTTP).
func (g *Gateway) NewHTTP(opt HTTPOptions) *HTTP {
	return serve.NewHTTP[callFrame](httpTools{g}, serve.HTTPServer{MCP: g.mcp, Log: g.log, Version: g.opts.Version,
		Started: g.started, NoFastPath: g.opts.NoFastPath, Context: g.callbackBase}, opt)
}

// httpTools is the gateway as the HTTP handler's tool surface
// (serve.HTTPSurface).
type httpTools struct{ g *Gateway }

// sessionOf is the gateway's session the handler holds as s; nil for
// none.
func sessionOf(s serve.HTTPSession) *session {
	gs, _ := s.(*session)
	return gs
}

// Session returns the session of streamable HTTP with that id.
func (t httpTools) Session(id string) serve.HTTPSession {
	s := t.g.lookup(id)
	if s == nil || !s.perSession {
		return nil // no typed nil: the handler sees none
	}
	return s
}

// FastCall reads body as a call on the fast path (fastCall).
func (t httpTools) FastCall(s serve.HTTPSession, body []byte, events bool) (c callFrame, progress, ok bool) {
	c, ok = t.g.fastCall(sessionOf(s), body)
	if !events {
		c.Progress = nil
	}
	return c, c.Progress != nil, ok
}

// ServeFast runs c (serveFast).
func (t httpTools) ServeFast(ctx context.Context, cancel context.CancelCauseFunc, s serve.HTTPSession, c callFrame, progress *serve.ProgressStream, header http.Header) serve.Frame {
	return t.g.serveFast(ctx, cancel, sessionOf(s), c, progress, header)
}

// FastList answers a listing on the fast path (fastList).
func (t httpTools) FastList(s serve.HTTPSession, body []byte) (serve.Frame, bool) {
	return t.g.fastList(sessionOf(s), body)
}

// Answers takes m when it answers a request of the gateway's to s's
// client (client_requests.go).
func (t httpTools) Answers(s serve.HTTPSession, m serve.Message) bool {
	return sessionOf(s).asked.answer(m, t.g.log.Debug)
}

// ParamsRefusal refuses a request's params (paramsRefusal).
func (t httpTools) ParamsRefusal(s serve.HTTPSession, body []byte) []byte {
	return t.g.paramsRefusal(sessionOf(s), body)
}

// ToServer readies s for body, on its way to the MCP server (toServer).
func (t httpTools) ToServer(s serve.HTTPSession, body []byte) { t.g.toServer(sessionOf(s), body) }

// Streamed records that s's client opened its first event stream.
func (t httpTools) Streamed(s serve.HTTPSession) { sessionOf(s).streamed.fire() }

// Load is how many sessions are open, and whether the gateway drains.
func (t httpTools) Load() serve.Load {
	return serve.Load{Draining: t.g.draining.Load(), Open: t.g.open.Load(), Attached: len(t.g.manager.Sessions())}
}

// Shutdown ends every session, and with it its attachments.
func (t httpTools) Shutdown() { t.g.manager.Shutdown() }

// Live tells whether s is still the transport's part of session sid
// (serve.Sessions).
func (t httpTools) Live(sid string, s *serve.Session) bool {
	gs := t.g.lookup(sid)
	return gs != nil && &gs.Session == s
}

// Reaping audits the end of session sid, quiet for quiet.
func (t httpTools) Reaping(sid string, quiet time.Duration) {
	attachments := 0
	if s := t.g.lookup(sid); s != nil {
		attachments = len(s.att.Attachments())
	}
	t.g.audit("reap", sid, "session", nil, "quiet", quiet.Round(time.Second).String(), "attachments", attachments)
}

// Mount adds the OAuth callback, the keys page and /metrics.
func (t httpTools) Mount(mux *http.ServeMux, guard func(http.Handler) http.Handler) {
	// The user's browser comes back here from a server's authorization
	// page: no session, no token, only the flow's state.
	mux.HandleFunc("GET "+attach.CallbackPath, t.oauthCallback)
	// And to ardgate's page that asks for a package's keys: its token.
	mux.HandleFunc(attach.KeysPath+"{token}", t.g.manager.ServeKeys)
	mux.Handle("GET /metrics", guard(t.g.metrics.handler()))
}

// callbackBase has the user's pages of an attach (OAuth's redirect back,
// the keys page) on the gateway's own listener: under Options.PublicURL,
// or else as the client reached the listener.
func (g *Gateway) callbackBase(ctx context.Context, r *http.Request) context.Context {
	if g.opts.PublicURL != "" {
		return attach.WithCallbackBase(ctx, g.opts.PublicURL)
	}
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	return attach.WithCallbackBase(ctx, scheme+"://"+r.Host)
}

// oauthCallback completes the flow the redirect back names, and tells
// the user to return to their client.
func (t httpTools) oauthCallback(w http.ResponseWriter, r *http.Request) {
	urn, err := t.g.manager.Callback(r.Context(), r.URL.Query())
	attach.WriteCallbackPage(w, urn, err)
}
