package tools

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/ardgate/ardgate/registry"
	"github.com/ardgate/ardgate/testdata/a2afixture"
	"github.com/ardgate/ardgate/testdata/mcpfixture"
)

// probedUpstream is the fixture server over streamable HTTP with one more
// tool, trace_probe, and one more prompt, trace_prompt, that answer with
// the traceparent they found in their request's _meta; the HTTP handler records the traceparent header of
// every request.
type probedUpstream struct {
	*httptest.Server
	mu      sync.Mutex
	headers []string
	lastID  string // of the last tools/call: "ardgate-…" on the fast path
}

func (p *probedUpstream) last() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.lastID
}

func (p *probedUpstream) seenHeaders() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.headers)
}

func newProbedUpstream(t *testing.T) *probedUpstream { return newProbedUpstreamTB(t) }

func newProbedUpstreamTB(t testing.TB) *probedUpstream {
	t.Helper()
	srv := mcpfixture.New("remote")
	srv.AddPrompt(mcp.NewPrompt("trace_prompt", mcp.WithPromptDescription("says the trace context it was got with")),
		func(_ context.Context, req mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			tp := metaTraceparent(req.Params.Meta)
			return mcp.NewGetPromptResult("", []mcp.PromptMessage{mcp.NewPromptMessage(mcp.RoleUser, mcp.NewTextContent(tp))}), nil
		})
	srv.AddTool(mcp.NewTool("trace_probe", mcp.WithDescription("reports the trace context it was called with")),
		func(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return mcp.NewToolResultStructuredOnly(map[string]any{"meta_traceparent": metaTraceparent(req.Params.Meta)}), nil
		})
	h := server.NewStreamableHTTPServer(srv)
	p := &probedUpstream{}
	p.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, msg := peekMessage(r)
		p.mu.Lock()
		if v := r.Header.Get("traceparent"); v != "" {
			p.headers = append(p.headers, v)
		}
		if msg.Method == "tools/call" {
			p.lastID = string(msg.ID)
		}
		p.mu.Unlock()
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(func() {
		_ = h.Shutdown(context.Background())
		p.Close()
	})
	return p
}

// metaTraceparent is the traceparent in m, or "".
func metaTraceparent(m *mcp.Meta) string {
	if m == nil {
		return ""
	}
	tp, _ := m.AdditionalFields["traceparent"].(string)
	return tp
}

// tracedSession is a session of a gateway with tracing on, spans going to
// the exporter as they end, with the probed upstream attached as remote.
func tracedSession(t *testing.T) (*probedUpstream, *tracetest.InMemoryExporter, *testGateway, *clientSession) {
	t.Helper()
	up := newProbedUpstream(t)
	exp := tracetest.NewInMemoryExporter()
	tg := newTracedGateway(t, exp, remoteEntry("urn:air:ardgate.test:mcp:remote", up.URL))
	s := tg.connect(t)
	if res := s.call("attach_resource", map[string]any{"urn": "urn:air:ardgate.test:mcp:remote"}); res.IsError {
		t.Fatalf("attach: %s", firstText(res))
	}
	return up, exp, tg, s
}

// newTracedGateway is newGateway with tracing on, spans going to exp as
// they end.
func newTracedGateway(t testing.TB, exp sdktrace.SpanExporter, entries ...registry.Entry) *testGateway {
	t.Helper()
	return newGatewayTracing(t, newTracing("test", sdktrace.WithSyncer(exp)), entries...)
}

// newGatewayTracing is newGateway with tracing tr, shut down at cleanup
// after the gateway (cleanups run last first).
func newGatewayTracing(t testing.TB, tr *Tracing, entries ...registry.Entry) *testGateway {
	t.Helper()
	t.Cleanup(func() { _ = tr.Shutdown(context.Background()) })
	return newGatewayWith(t, 10*time.Second, Options{Version: "test", Tracing: tr}, HTTPOptions{}, nil, entries...)
}

// connectWithHeaders opens a session whose every HTTP request carries
// headers.
func connectWithHeaders(t *testing.T, url string, headers map[string]string) *clientSession {
	t.Helper()
	tr, err := transport.NewStreamableHTTP(url, transport.WithHTTPHeaders(headers))
	if err != nil {
		t.Fatal(err)
	}
	s := &clientSession{t: t, c: client.NewClient(tr, client.WithProtocolVersion(mcp.ProtocolVersion20251125))}
	if err := s.c.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := s.c.Initialize(context.Background(), mcp.InitializeRequest{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.c.Close() })
	return s
}

func attrOf(s tracetest.SpanStub, key string) string {
	for _, kv := range s.Attributes {
		if string(kv.Key) == key {
			return kv.Value.Emit()
		}
	}
	return ""
}

// findSpan returns the one span with that name and kind whose
// mcp.tool.name is tool ("" matches any).
func findSpan(t *testing.T, spans tracetest.SpanStubs, name string, kind trace.SpanKind, tool string) tracetest.SpanStub {
	t.Helper()
	var found []tracetest.SpanStub
	for _, s := range spans {
		if s.Name == name && s.SpanKind == kind && (tool == "" || attrOf(s, "mcp.tool.name") == tool) {
			found = append(found, s)
		}
	}
	if len(found) != 1 {
		var names []string
		for _, s := range spans {
			names = append(names, s.Name+"/"+s.SpanKind.String()+"/"+attrOf(s, "mcp.tool.name"))
		}
		t.Fatalf("%d spans %s (%s, tool %q), want 1; spans: %v", len(found), name, kind, tool, names)
	}
	return found[0]
}

// inTrace returns the spans of the trace with that id.
func inTrace(spans tracetest.SpanStubs, id string) tracetest.SpanStubs {
	var in tracetest.SpanStubs
	for _, s := range spans {
		if s.SpanContext.TraceID().String() == id {
			in = append(in, s)
		}
	}
	return in
}

// childSpan returns the one span with that name and kind whose parent is
// parent.
func childSpan(t *testing.T, spans tracetest.SpanStubs, parent tracetest.SpanStub, name string, kind trace.SpanKind) tracetest.SpanStub {
	t.Helper()
	var found []tracetest.SpanStub
	for _, s := range spans {
		if s.Name == name && s.SpanKind == kind && s.Parent.SpanID() == parent.SpanContext.SpanID() {
			found = append(found, s)
		}
	}
	if len(found) != 1 {
		t.Fatalf("%d spans %s (%s) under %s, want 1", len(found), name, kind, parent.Name)
	}
	return found[0]
}

// A proxied call is one trace: the client's trace context (from _meta)
// → the gateway's tools/call span → its tool span → the upstream client
// span, and the upstream receives that trace context both as a
// traceparent header and in _meta. A trace context in the client's HTTP
// headers is honoured the same way.
func TestTracingProxiedCall(t *testing.T) {
	up, exp, tg, s := tracedSession(t)
	// The same call on the fast path and, with a progress token the fast
	// path does not take, on the MCP server's path: the same spans.
	for _, path := range []struct {
		name                    string
		clientTrace, clientSpan string
		token                   any
		fast                    bool
	}{
		{"fast path", "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7", nil, true},
		{"server's path", "5bf92f3577b34da6a3ce929d0e0e4737", "01f067aa0ba902b8", map[string]any{"not": "a string"}, false},
	} {
		req := mcp.CallToolRequest{}
		req.Params.Name = "mcp_remote__trace_probe"
		req.Params.Arguments = map[string]any{}
		req.Params.Meta = &mcp.Meta{ProgressToken: path.token, AdditionalFields: map[string]any{"traceparent": "00-" + path.clientTrace + "-" + path.clientSpan + "-01"}}
		res, err := s.c.CallTool(context.Background(), req)
		if err != nil || res.IsError {
			t.Fatalf("%s: trace_probe: %v %v", path.name, err, res)
		}
		if fastPathTaken(up.last()) != path.fast {
			t.Fatalf("%s: the upstream saw id %s", path.name, up.last())
		}
		var probe struct {
			MetaTraceparent string `json:"meta_traceparent"`
		}
		if err := json.Unmarshal(res.RawStructuredContent, &probe); err != nil {
			t.Fatal(err)
		}

		spans := inTrace(tracetest.SpanStubs(exp.GetSpans()), path.clientTrace)
		srv := findSpan(t, spans, "mcp.tools/call", trace.SpanKindServer, "mcp_remote__trace_probe")
		tool := findSpan(t, spans, "tool.mcp_remote__trace_probe", trace.SpanKindInternal, "")
		cli := childSpan(t, spans, tool, "mcp.tools/call", trace.SpanKindClient)
		if len(spans) != 3 {
			t.Errorf("%s: %d spans in the call's trace, want 3", path.name, len(spans))
		}
		if !srv.Parent.IsRemote() || srv.Parent.SpanID().String() != path.clientSpan {
			t.Errorf("%s: gateway tools/call span's parent = %v, want the client's remote span %s", path.name, srv.Parent, path.clientSpan)
		}
		if tool.Parent.SpanID() != srv.SpanContext.SpanID() {
			t.Errorf("%s: tool span's parent %s, want the tools/call span %s", path.name, tool.Parent.SpanID(), srv.SpanContext.SpanID())
		}
		want := map[string]string{"mcp.method": "tools/call", "mcp.tool.name": "mcp_remote__trace_probe", "mcp.session.id": s.c.GetSessionId(), "mcp.protocol.version": "2025-11-25"}
		for k, v := range want {
			if got := attrOf(srv, k); got != v {
				t.Errorf("%s: server span %s = %q, want %q", path.name, k, got, v)
			}
		}
		if attrOf(tool, "mcp.tool.name") != "mcp_remote__trace_probe" || attrOf(cli, "mcp.method") != "tools/call" {
			t.Errorf("%s: tool span attributes %v, client span's %v", path.name, tool.Attributes, cli.Attributes)
		}

		// What the upstream received: the client span as a header, the
		// trace in _meta.
		wantHeader := "00-" + path.clientTrace + "-" + cli.SpanContext.SpanID().String() + "-01"
		if !slices.Contains(up.seenHeaders(), wantHeader) {
			t.Errorf("%s: upstream traceparent headers %q lack %q", path.name, up.seenHeaders(), wantHeader)
		}
		if len(probe.MetaTraceparent) != 55 || probe.MetaTraceparent[3:35] != path.clientTrace {
			t.Errorf("%s: upstream _meta traceparent %q, want one in trace %s", path.name, probe.MetaTraceparent, path.clientTrace)
		}
		// mcp-go's client puts the tool span in _meta, the span it makes
		// for the request in the header; the fast path, that one in both.
		if path.fast && probe.MetaTraceparent != wantHeader {
			t.Errorf("%s: upstream _meta traceparent %q, want %q", path.name, probe.MetaTraceparent, wantHeader)
		}
	}

	// A plain proxied call (no _meta, no progress token) is traced the
	// same way, in a trace of the gateway's own.
	if got := firstText(s.call("mcp_remote__echo", map[string]any{"message": "x"})); got != "x" {
		t.Fatalf("echo = %q", got)
	}
	spans := tracetest.SpanStubs(exp.GetSpans())
	echoSrv := findSpan(t, spans, "mcp.tools/call", trace.SpanKindServer, "mcp_remote__echo")
	echoTool := childSpan(t, spans, echoSrv, "tool.mcp_remote__echo", trace.SpanKindInternal)
	echoCli := childSpan(t, spans, echoTool, "mcp.tools/call", trace.SpanKindClient)
	if echoSrv.Parent.IsValid() || echoCli.SpanContext.TraceID() != echoSrv.SpanContext.TraceID() {
		t.Errorf("echo: server span parent %v, client span trace %s, server trace %s",
			echoSrv.Parent, echoCli.SpanContext.TraceID(), echoSrv.SpanContext.TraceID())
	}

	// Through call_attached_tool, on the fast path too: its spans are
	// named for it, as the server names them.
	if got := firstText(s.call("call_attached_tool", map[string]any{"name": "mcp_remote__echo", "arguments": map[string]any{"message": "via"}})); got != "via" || !fastPathTaken(up.last()) {
		t.Fatalf("call_attached_tool = %q, the upstream saw id %s", got, up.last())
	}
	spans = tracetest.SpanStubs(exp.GetSpans())
	viaSrv := findSpan(t, spans, "mcp.tools/call", trace.SpanKindServer, "call_attached_tool")
	childSpan(t, spans, childSpan(t, spans, viaSrv, "tool.call_attached_tool", trace.SpanKindInternal), "mcp.tools/call", trace.SpanKindClient)

	// A tool error on the fast path marks both of the gateway's spans, as
	// the server marks its own (TestTracingErrorResult).
	if res := s.call("mcp_remote__slow", map[string]any{"ms": -1}); !res.IsError {
		t.Fatalf("slow with ms -1 succeeded: %s", firstText(res))
	}
	if !fastPathTaken(up.last()) {
		t.Fatalf("the failing call did not take the fast path (upstream saw id %s)", up.last())
	}
	spans = tracetest.SpanStubs(exp.GetSpans())
	for _, sp := range []tracetest.SpanStub{
		findSpan(t, spans, "mcp.tools/call", trace.SpanKindServer, "mcp_remote__slow"),
		findSpan(t, spans, "tool.mcp_remote__slow", trace.SpanKindInternal, ""),
	} {
		if sp.Status.Code.String() != "Error" || sp.Status.Description != "tool returned error result" {
			t.Errorf("%s status %v, want Error", sp.Name, sp.Status)
		}
	}

	// The attach made its own spans: the upstream's initialize is a
	// client span under tool.attach_resource.
	attachSpan := findSpan(t, spans, "tool.attach_resource", trace.SpanKindInternal, "")
	initSpan := findSpan(t, spans, "mcp.initialize", trace.SpanKindClient, "")
	if initSpan.Parent.SpanID() != attachSpan.SpanContext.SpanID() {
		t.Errorf("upstream initialize span's parent %s, want tool.attach_resource %s", initSpan.Parent.SpanID(), attachSpan.SpanContext.SpanID())
	}

	// A trace context in HTTP headers.
	const headerTrace, headerSpan = "0af7651916cd43dd8448eb211c80319c", "b7ad6b7169203331"
	h := connectWithHeaders(t, tg.url, map[string]string{"traceparent": "00-" + headerTrace + "-" + headerSpan + "-01"})
	if res := h.call("gateway_health", map[string]any{}); res.IsError {
		t.Fatalf("gateway_health: %s", firstText(res))
	}
	spans = tracetest.SpanStubs(exp.GetSpans())
	hs := findSpan(t, spans, "mcp.tools/call", trace.SpanKindServer, "gateway_health")
	if hs.SpanContext.TraceID().String() != headerTrace || hs.Parent.SpanID().String() != headerSpan {
		t.Errorf("gateway_health span %s parent %s, want trace %s parent %s (from the traceparent header)",
			hs.SpanContext.TraceID(), hs.Parent.SpanID(), headerTrace, headerSpan)
	}
	if attrOf(hs, "mcp.session.id") != h.c.GetSessionId() {
		t.Errorf("session attribute %q, want %q", attrOf(hs, "mcp.session.id"), h.c.GetSessionId())
	}
	findSpan(t, spans, "tool.gateway_health", trace.SpanKindInternal, "")
	// And a proxied call on the fast path, whose context the headers give.
	if res := h.call("attach_resource", map[string]any{"urn": "urn:air:ardgate.test:mcp:remote"}); res.IsError {
		t.Fatalf("attach: %s", firstText(res))
	}
	if got := firstText(h.call("mcp_remote__echo", map[string]any{"message": "y"})); got != "y" || !fastPathTaken(up.last()) {
		t.Fatalf("echo = %q, the upstream saw id %s", got, up.last())
	}
	spans = inTrace(tracetest.SpanStubs(exp.GetSpans()), headerTrace)
	hecho := findSpan(t, spans, "mcp.tools/call", trace.SpanKindServer, "mcp_remote__echo")
	if hecho.Parent.SpanID().String() != headerSpan {
		t.Errorf("the proxied call's span has parent %s, want %s (from the traceparent header)", hecho.Parent.SpanID(), headerSpan)
	}
	childSpan(t, spans, childSpan(t, spans, hecho, "tool.mcp_remote__echo", trace.SpanKindInternal), "mcp.tools/call", trace.SpanKindClient)
}

// A tool result with isError marks both spans as errors.
func TestTracingErrorResult(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	tg := newTracedGateway(t, exp)
	s := tg.connect(t)
	if res := s.call("attach_resource", map[string]any{"urn": "urn:air:nowhere.example:mcp:nothing"}); !res.IsError {
		t.Fatalf("attach of an unknown URN succeeded: %s", firstText(res))
	}
	spans := tracetest.SpanStubs(exp.GetSpans())
	for _, sp := range []tracetest.SpanStub{
		findSpan(t, spans, "mcp.tools/call", trace.SpanKindServer, "attach_resource"),
		findSpan(t, spans, "tool.attach_resource", trace.SpanKindInternal, ""),
	} {
		if sp.Status.Code.String() != "Error" {
			t.Errorf("%s status %v, want Error", sp.Name, sp.Status)
		}
	}
}

// Tracing off is a nil *Tracing: no options, nothing to shut down.
func TestTracingOff(t *testing.T) {
	var tr *Tracing
	if tr.ServerOptions() != nil || tr.ClientOptions() != nil || tr.Shutdown(context.Background()) != nil {
		t.Fatal("a nil Tracing is not off")
	}
	if _, err := NewTracing(context.Background(), "collector:4318", "test", nil); err == nil {
		t.Fatal("NewTracing accepted an endpoint that is not an http(s) URL")
	}
}

// _meta propagation copies the caller's meta (keeping its progress
// token), writes nothing when there is no span, and reads only strings.
func TestMetaPropagator(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	tr := newTracing("test", sdktrace.WithSyncer(exp))
	defer tr.Shutdown(context.Background())
	mp := tr.meta

	if got := mp.InjectMeta(context.Background(), nil); got != nil {
		t.Errorf("no span: InjectMeta(nil) = %+v, want nil", got)
	}
	in := &mcp.Meta{ProgressToken: "p1", AdditionalFields: map[string]any{"x": 1}}
	ctx, span := tr.tracer.Start(context.Background(), "op", 0)
	out := mp.InjectMeta(ctx, in)
	span.End()
	if out == in || len(in.AdditionalFields) != 1 {
		t.Fatalf("InjectMeta wrote into the caller's meta: %+v", in)
	}
	if out.ProgressToken != "p1" || out.AdditionalFields["x"] != 1 || out.AdditionalFields["traceparent"] == nil {
		t.Fatalf("InjectMeta = %+v", out)
	}
	back := trace.SpanContextFromContext(mp.ExtractMeta(context.Background(), out))
	if back.TraceID() != exp.GetSpans()[0].SpanContext.TraceID() {
		t.Errorf("round trip: trace %s, want %s", back.TraceID(), exp.GetSpans()[0].SpanContext.TraceID())
	}
	bad := &mcp.Meta{AdditionalFields: map[string]any{"traceparent": 42}}
	if trace.SpanContextFromContext(mp.ExtractMeta(context.Background(), bad)).IsValid() {
		t.Error("a non-string traceparent was read")
	}
}

// BenchmarkTracingProxyCall measures a small proxied tools/call over
// loopback streamable HTTP with tracing off and on (the real OTLP/HTTP
// exporter and batch processor, sending to a loopback receiver that
// answers 200).
//
//	go test -run '^$' -bench TracingProxyCall -benchmem ./tools
func BenchmarkTracingProxyCall(b *testing.B) {
	up := newProbedUpstreamTB(b)
	const urn = "urn:air:ardgate.test:mcp:remote"
	rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/x-protobuf")
	}))
	b.Cleanup(rcv.Close)
	for _, name := range []string{"off", "on"} {
		b.Run(name, func(b *testing.B) {
			// Made here, not before b.Run: a -bench pattern that skips
			// this case would leave its batch processor running.
			var tr *Tracing
			if name == "on" {
				var err error
				if tr, err = NewTracing(context.Background(), rcv.URL, "bench", nil); err != nil {
					b.Fatal(err)
				}
				b.Cleanup(func() { _ = tr.Shutdown(context.Background()) })
			}
			tg := newGatewayTracing(b, tr, remoteEntry(urn, up.URL))
			ht, err := transport.NewStreamableHTTP(tg.url)
			if err != nil {
				b.Fatal(err)
			}
			c := client.NewClient(ht, client.WithProtocolVersion(mcp.ProtocolVersion20251125))
			b.Cleanup(func() { _ = c.Close() })
			if err := c.Start(context.Background()); err != nil {
				b.Fatal(err)
			}
			if _, err := c.Initialize(context.Background(), mcp.InitializeRequest{}); err != nil {
				b.Fatal(err)
			}
			req := mcp.CallToolRequest{}
			req.Params.Name = "attach_resource"
			req.Params.Arguments = map[string]any{"urn": urn}
			if res, err := c.CallTool(context.Background(), req); err != nil || res.IsError {
				b.Fatalf("attach: %v %v", err, res)
			}
			req.Params.Name = "mcp_remote__echo"
			req.Params.Arguments = map[string]any{"message": "ping"}
			b.ReportAllocs()
			for b.Loop() {
				if res, err := c.CallTool(context.Background(), req); err != nil || res.IsError {
					b.Fatalf("echo: %v %v", err, res)
				}
			}
		})
	}
}

// The attached server's prompts and resources, answered at the door, are
// traced as the server traces a request: a server span mcp.<method>, its
// parent the client's trace context, and for a request sent on, a client
// span under it whose context the upstream receives as a header and in
// _meta. A request that fails marks its span.
func TestTracingOffers(t *testing.T) {
	up, exp, _, s := tracedSession(t)
	const clientTrace, clientSpan = "6bf92f3577b34da6a3ce929d0e0e4738", "02f067aa0ba902b9"
	req := mcp.GetPromptRequest{}
	req.Params.Name = "mcp_remote__trace_prompt"
	req.Params.Meta = &mcp.Meta{AdditionalFields: map[string]any{"traceparent": "00-" + clientTrace + "-" + clientSpan + "-01"}}
	res, err := s.c.GetPrompt(context.Background(), req)
	if err != nil || len(res.Messages) != 1 {
		t.Fatalf("prompts/get: %+v %v", res, err)
	}
	spans := inTrace(tracetest.SpanStubs(exp.GetSpans()), clientTrace)
	srv := findSpan(t, spans, "mcp.prompts/get", trace.SpanKindServer, "")
	cli := childSpan(t, spans, srv, "mcp.prompts/get", trace.SpanKindClient)
	if srv.Parent.SpanID().String() != clientSpan || attrOf(srv, "mcp.session.id") != s.c.GetSessionId() {
		t.Errorf("server span parent %s, session %q; want the client's span %s and the session", srv.Parent.SpanID(), attrOf(srv, "mcp.session.id"), clientSpan)
	}
	want := "00-" + clientTrace + "-" + cli.SpanContext.SpanID().String() + "-01"
	if got := res.Messages[0].Content.(mcp.TextContent).Text; got != want {
		t.Errorf("the upstream's _meta traceparent %q, want %q", got, want)
	}
	if !slices.Contains(up.seenHeaders(), want) {
		t.Errorf("upstream traceparent headers %q lack %q", up.seenHeaders(), want)
	}

	if _, err := s.c.ListResources(context.Background(), mcp.ListResourcesRequest{}); err != nil {
		t.Fatal(err)
	}
	findSpan(t, tracetest.SpanStubs(exp.GetSpans()), "mcp.resources/list", trace.SpanKindServer, "")
	if _, err := s.c.ReadResource(context.Background(), readReq("nope://x")); err == nil {
		t.Fatal("a read of a URI no one serves succeeded")
	}
	failed := findSpan(t, tracetest.SpanStubs(exp.GetSpans()), "mcp.resources/read", trace.SpanKindServer, "")
	if failed.Status.Code.String() != "Error" {
		t.Errorf("the failed read's span status %v, want Error", failed.Status)
	}
}

// A2A agents and remote registries join the trace too: a client span
// a2a.message/send under tool.spawn_agent, registry.search under
// tool.discover_resources (one per registry asked) and registry.lookup
// under tool.attach_resource, each one's context going to the agent or
// registry as a traceparent header.
func TestTracingAgentsAndRegistries(t *testing.T) {
	var mu sync.Mutex
	seen := map[string]string{} // path → the traceparent it last got
	record := func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			seen[r.URL.Path] = r.Header.Get("traceparent")
			mu.Unlock()
			next.ServeHTTP(w, r)
		})
	}
	heard := func(path string) string {
		mu.Lock()
		defer mu.Unlock()
		return seen[path]
	}
	agent := a2afixture.Start(t)
	proxy := httptest.NewServer(record(httputil.NewSingleHostReverseProxy(mustParse(t, agent.URL))))
	t.Cleanup(proxy.Close)
	const urn = "urn:air:agents.test:agent:helper"
	card, _ := json.Marshal(a2afixture.NewCard(proxy.URL + "/a2a"))
	remote := httptest.NewServer(record(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"results":[{"identifier":"urn:air:remote.test:mcp:weather","displayName":"Remote weather","type":"application/mcp-server-card+json","url":"https://weather.example/card.json","description":"weather forecasts","score":77.5}]}`)
	})))
	t.Cleanup(remote.Close)
	cards := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write(card) }))
	t.Cleanup(cards.Close)

	exp := tracetest.NewInMemoryExporter()
	tg := newTracedGateway(t, exp, agentEntry(urn, cards.URL+"/card.json"))
	m := tg.g.manager
	rhc := *m.HTTP
	rhc.Transport = m.Tracing.Transport(m.HTTP.Transport) // as main.go gives registries
	ard, err := registry.NewARD("remote", remote.URL, "", registry.RemoteOptions{HTTP: &rhc})
	if err != nil {
		t.Fatal(err)
	}
	m.Registries = append(m.Registries, ard)
	s := tg.connect(t)

	if res := s.call("discover_resources", map[string]any{"text": "weather forecasts"}); res.IsError {
		t.Fatalf("discover: %s", firstText(res))
	}
	if res := s.call("attach_resource", map[string]any{"urn": urn, "registry_id": "test"}); res.IsError {
		t.Fatalf("attach: %s", firstText(res))
	}
	if v := s.task(s.call("spawn_agent", map[string]any{"agent": "helper", "message": "reply hi"})); v.State != "completed" {
		t.Fatalf("spawn: %+v", v)
	}
	spans := exp.GetSpans()
	for _, c := range []struct{ tool, span, path string }{
		{"discover_resources", "registry.search", "/search"},
		{"attach_resource", "registry.lookup", ""},
		{"spawn_agent", "a2a.message/send", "/a2a"},
	} {
		parent := findSpan(t, spans, "tool."+c.tool, trace.SpanKindInternal, "")
		var child tracetest.SpanStub
		for _, sp := range spans {
			if sp.Name == c.span && sp.Parent.SpanID() == parent.SpanContext.SpanID() && (c.span != "registry.search" || attrOf(sp, "registry.id") == "remote") {
				child = sp
			}
		}
		if child.Name == "" {
			t.Fatalf("no span %s under tool.%s", c.span, c.tool)
		}
		if c.path == "" {
			continue
		}
		if got := heard(c.path); !strings.Contains(got, child.SpanContext.SpanID().String()) {
			t.Errorf("%s got traceparent %q; want the span %s of %s", c.path, got, child.SpanContext.SpanID(), c.span)
		}
	}
}
