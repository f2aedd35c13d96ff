package tools

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
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
	"github.com/ardgate/ardgate/testdata/mcpfixture"
)

// probedUpstream is the fixture server over streamable HTTP with one more
// tool, trace_probe, that answers with the traceparent it found in its
// request's _meta; the HTTP handler records the traceparent header of
// every request.
type probedUpstream struct {
	*httptest.Server
	mu      sync.Mutex
	headers []string
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
	srv.AddTool(mcp.NewTool("trace_probe", mcp.WithDescription("reports the trace context it was called with")),
		func(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			tp := ""
			if m := req.Params.Meta; m != nil {
				tp, _ = m.AdditionalFields["traceparent"].(string)
			}
			return mcp.NewToolResultStructuredOnly(map[string]any{"meta_traceparent": tp}), nil
		})
	h := server.NewStreamableHTTPServer(srv)
	p := &probedUpstream{}
	p.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if v := r.Header.Get("traceparent"); v != "" {
			p.mu.Lock()
			p.headers = append(p.headers, v)
			p.mu.Unlock()
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(func() {
		_ = h.Shutdown(context.Background())
		p.Close()
	})
	return p
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
	up := newProbedUpstream(t)
	exp := tracetest.NewInMemoryExporter()
	tg := newTracedGateway(t, exp, remoteEntry("urn:air:ardgate.test:mcp:remote", up.URL))
	s := tg.connect(t)

	if res := s.call("attach_resource", map[string]any{"urn": "urn:air:ardgate.test:mcp:remote"}); res.IsError {
		t.Fatalf("attach: %s", firstText(res))
	}
	const (
		clientTrace = "4bf92f3577b34da6a3ce929d0e0e4736"
		clientSpan  = "00f067aa0ba902b7"
	)
	req := mcp.CallToolRequest{}
	req.Params.Name = "mcp_remote__trace_probe"
	req.Params.Arguments = map[string]any{}
	req.Params.Meta = &mcp.Meta{AdditionalFields: map[string]any{"traceparent": "00-" + clientTrace + "-" + clientSpan + "-01"}}
	res, err := s.c.CallTool(context.Background(), req)
	if err != nil || res.IsError {
		t.Fatalf("trace_probe: %v %v", err, res)
	}
	var probe struct {
		MetaTraceparent string `json:"meta_traceparent"`
	}
	if err := json.Unmarshal(res.RawStructuredContent, &probe); err != nil {
		t.Fatal(err)
	}

	spans := tracetest.SpanStubs(exp.GetSpans())
	srv := findSpan(t, spans, "mcp.tools/call", trace.SpanKindServer, "mcp_remote__trace_probe")
	tool := findSpan(t, spans, "tool.mcp_remote__trace_probe", trace.SpanKindInternal, "")
	cli := childSpan(t, spans, tool, "mcp.tools/call", trace.SpanKindClient)

	if got := srv.SpanContext.TraceID().String(); got != clientTrace {
		t.Errorf("gateway tools/call span in trace %s, want the client's %s (from _meta)", got, clientTrace)
	}
	if !srv.Parent.IsRemote() || srv.Parent.SpanID().String() != clientSpan {
		t.Errorf("gateway tools/call span's parent = %v, want the client's remote span %s", srv.Parent, clientSpan)
	}
	if tool.Parent.SpanID() != srv.SpanContext.SpanID() {
		t.Errorf("tool span's parent %s, want the tools/call span %s", tool.Parent.SpanID(), srv.SpanContext.SpanID())
	}
	if cli.SpanContext.TraceID() != srv.SpanContext.TraceID() {
		t.Errorf("upstream client span in trace %s, gateway span in %s", cli.SpanContext.TraceID(), srv.SpanContext.TraceID())
	}
	if attrOf(cli, "mcp.method") != "tools/call" {
		t.Errorf("client span attributes %v", cli.Attributes)
	}

	// What the upstream received: the client span as a header, the trace
	// in _meta.
	wantHeader := "00-" + clientTrace + "-" + cli.SpanContext.SpanID().String() + "-01"
	if !slices.Contains(up.seenHeaders(), wantHeader) {
		t.Errorf("upstream traceparent headers %q lack %q", up.seenHeaders(), wantHeader)
	}
	if len(probe.MetaTraceparent) != 55 || probe.MetaTraceparent[3:35] != clientTrace {
		t.Errorf("upstream _meta traceparent %q, want one in trace %s", probe.MetaTraceparent, clientTrace)
	}

	// A plain proxied call (no _meta, no progress token) is traced the
	// same way, in a trace of the gateway's own.
	if got := firstText(s.call("mcp_remote__echo", map[string]any{"message": "x"})); got != "x" {
		t.Fatalf("echo = %q", got)
	}
	spans = tracetest.SpanStubs(exp.GetSpans())
	echoSrv := findSpan(t, spans, "mcp.tools/call", trace.SpanKindServer, "mcp_remote__echo")
	echoTool := childSpan(t, spans, echoSrv, "tool.mcp_remote__echo", trace.SpanKindInternal)
	echoCli := childSpan(t, spans, echoTool, "mcp.tools/call", trace.SpanKindClient)
	if echoSrv.Parent.IsValid() || echoCli.SpanContext.TraceID() != echoSrv.SpanContext.TraceID() {
		t.Errorf("echo: server span parent %v, client span trace %s, server trace %s",
			echoSrv.Parent, echoCli.SpanContext.TraceID(), echoSrv.SpanContext.TraceID())
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
	for _, on := range []bool{false, true} {
		name := "off"
		var tr *Tracing
		if on {
			name = "on"
			var err error
			if tr, err = NewTracing(context.Background(), rcv.URL, "bench", nil); err != nil {
				b.Fatal(err)
			}
		}
		b.Run(name, func(b *testing.B) {
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
