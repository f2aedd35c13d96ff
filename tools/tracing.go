package tools

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"net/url"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
	"github.com/mark3labs/mcp-go/tracing"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	sdkresource "go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/ardgate/ardgate/attach"
	"github.com/ardgate/ardgate/tools/serve"
)

// Tracing is the gateway's optional OpenTelemetry tracing, plugged into
// mcp-go's tracing hooks. mcp-go v1.2.1 names an adapter module
// (github.com/mark3labs/mcp-go/otel) that is not published, so this is a
// small one of our own.
//
// A nil *Tracing is tracing off: it yields no server or client options, so
// mcp-go keeps its no-op tracer and nothing is allocated or sent on the
// call path.
//
// Proxied calls that take the fast path (fastpath.go) go around mcp-go's
// server and client; the gateway makes the same spans for them itself
// (startCall, attach.CallTracing) and carries the trace context upstream
// the same ways.
//
// Spans, with their names as mcp-go makes them:
//   - mcp.<method> (server): every JSON-RPC request the gateway serves;
//     tools/call spans carry mcp.tool.name;
//   - tool.<name> (internal): every tool handler, the gateway's own and the
//     proxied mcp_<name>__<tool>;
//   - mcp.<method> (client): every request to an upstream MCP server
//     (initialize, tools/call), a child of the tool span that made it;
//   - a2a.<method> (client): every request to an A2A agent, and
//     registry.search and registry.lookup (client): every registry asked,
//     their context sent as headers (attach.CallTracing.Transport).
//
// W3C trace context (traceparent, tracestate) is read from inbound HTTP
// headers and from params._meta (SEP-414, so it works on stdio too), and
// written to upstream requests the same two ways: headers on HTTP
// (streamable and SSE), _meta on every transport. Baggage is not propagated: upstreams are
// often third-party servers found in registries, and a client's baggage is
// not theirs to read.
type Tracing struct {
	provider *sdktrace.TracerProvider
	tracer   tracing.Tracer
	headers  tracing.Propagator
	meta     tracing.MetaPropagator
}

// tracerName is the instrumentation scope of the gateway's spans.
const tracerName = "github.com/ardgate/ardgate"

// NewTracing exports spans over OTLP/HTTP (protobuf) to endpoint, the
// operator's collector, through a batch span processor. A URL without a
// path gets the standard /v1/traces. The resource is service.name
// "ardgate" and service.version version, then OTEL_RESOURCE_ATTRIBUTES
// and OTEL_SERVICE_NAME, which win. The exporter also reads the standard
// OTEL_EXPORTER_OTLP_(TRACES_)HEADERS, _TIMEOUT, _COMPRESSION and
// _CERTIFICATE variables, and the SDK OTEL_TRACES_SAMPLER and OTEL_BSP_*.
//
// Export failures are logged at warn level and never fail a call. Call
// Shutdown before exit: it flushes the spans still queued.
func NewTracing(ctx context.Context, endpoint, version string, log *slog.Logger) (*Tracing, error) {
	u, err := url.Parse(endpoint)
	if err != nil || u.Scheme != "http" && u.Scheme != "https" || u.Host == "" {
		return nil, fmt.Errorf("otel endpoint %q is not an http(s) URL", endpoint)
	}
	if u.Path == "" || u.Path == "/" {
		u.Path = "/v1/traces"
	}
	// The collector is the operator's own, named in the config; it is not
	// registry-controlled, so its traffic does not go through guard's SSRF
	// dialer (which would refuse the usual loopback or private collector).
	// The exporter uses its own HTTP client, honouring proxy variables and
	// OTEL_EXPORTER_OTLP_* settings.
	exp, err := otlptracehttp.New(ctx, otlptracehttp.WithEndpointURL(u.String()))
	if err != nil {
		return nil, fmt.Errorf("otel exporter: %w", err)
	}
	res, err := sdkresource.New(ctx,
		sdkresource.WithAttributes(attribute.String("service.name", "ardgate"), attribute.String("service.version", version)),
		sdkresource.WithTelemetrySDK(),
		sdkresource.WithFromEnv(),
	)
	if err != nil {
		if res == nil {
			return nil, fmt.Errorf("otel resource: %w", err)
		}
		if log != nil {
			log.Warn("tracing: resource attributes partly ignored", "err", err) // e.g. a malformed OTEL_RESOURCE_ATTRIBUTES
		}
	}
	if log != nil {
		// The SDK reports export errors only through this process-wide
		// handler; ardgate has one tracer provider.
		otel.SetErrorHandler(otel.ErrorHandlerFunc(func(err error) { log.Warn("tracing: span export failed", "err", err) }))
	}
	return newTracing(version, sdktrace.WithBatcher(exp), sdktrace.WithResource(res)), nil
}

// newTracing builds Tracing over a tracer provider with these options.
func newTracing(version string, opts ...sdktrace.TracerProviderOption) *Tracing {
	tp := sdktrace.NewTracerProvider(opts...)
	prop := propagation.TraceContext{}
	return &Tracing{
		provider: tp,
		tracer:   otelTracer{tp.Tracer(tracerName, trace.WithInstrumentationVersion(version))},
		headers:  headerPropagator{prop},
		meta:     metaPropagator{prop},
	}
}

// ServerOptions trace the gateway's MCP server: every method, every tool
// handler, with trace context taken from headers and _meta.
func (t *Tracing) ServerOptions() []server.ServerOption {
	if t == nil {
		return nil
	}
	return []server.ServerOption{server.WithTracer(t.tracer), server.WithPropagator(t.headers), server.WithMetaPropagator(t.meta)}
}

// ClientOptions trace the gateway's upstream MCP clients and carry the
// trace context to the upstream.
func (t *Tracing) ClientOptions() []client.ClientOption {
	if t == nil {
		return nil
	}
	return []client.ClientOption{client.WithTracer(t.tracer), client.WithPropagator(t.headers), client.WithMetaPropagator(t.meta)}
}

// Upstream traces the calls the gateway makes itself on the fast path,
// around mcp-go's client, as ClientOptions have that client trace its own.
func (t *Tracing) Upstream() *attach.CallTracing {
	if t == nil {
		return nil
	}
	return &attach.CallTracing{Tracer: t.tracer, Headers: t.headers, Meta: t.meta}
}

// callTrace holds the spans of a proxied call on the fast path.
type callTrace struct {
	call, tool tracing.Span
}

// startCall opens, for a proxied call on the fast path, the spans that the
// MCP server opens for a call it serves: mcp.tools/call (server), then
// tool.<name> (internal). Their parent is the trace context of the call's
// _meta, or of header, which wins, as with the server. header is the HTTP
// request's, nil on stdio. A nil Tracing opens none.
func (t *Tracing) startCall(ctx context.Context, header http.Header, c callFrame) (context.Context, *callTrace) {
	if t == nil {
		return ctx, nil
	}
	name := c.called()
	ctx, call := t.startServer(ctx, header, string(mcp.MethodToolsCall), c.TraceParent, c.TraceState)
	call.SetAttributes(tracing.String("mcp.tool.name", name))
	ctx, tool := t.tracer.Start(ctx, "tool."+name, tracing.SpanKindInternal, tracing.String("mcp.tool.name", name))
	return ctx, &callTrace{call: call, tool: tool}
}

// startServer opens the span that the MCP server opens for a request of
// method it serves, mcp.<method> (server). Its parent is the trace
// context of the request's _meta (traceParent, traceState; "" for none),
// or of header, which wins, as with the server.
func (t *Tracing) startServer(ctx context.Context, header http.Header, method, traceParent, traceState string) (context.Context, tracing.Span) {
	session := stdioSessionID
	if header != nil {
		session = header.Get(server.HeaderKeySessionID)
	}
	if traceParent != "" {
		ctx = t.meta.ExtractMeta(ctx, &mcp.Meta{AdditionalFields: map[string]any{"traceparent": traceParent, "tracestate": traceState}})
	}
	ctx = t.headers.Extract(ctx, header)
	attrs := []tracing.Attribute{tracing.String("mcp.method", method)}
	if session != "" {
		attrs = append(attrs, tracing.String("mcp.session.id", session))
	}
	if v := header.Get(server.HeaderKeyProtocolVersion); v != "" {
		attrs = append(attrs, tracing.String("mcp.protocol.version", v))
	}
	return t.tracer.Start(ctx, "mcp."+method, tracing.SpanKindServer, attrs...)
}

// end ends the spans of a call answered with f: a tool error marks both,
// as the server marks its own.
func (ct *callTrace) end(f serve.Frame) {
	if ct == nil {
		return
	}
	if isErrorResult(f.Result) {
		const msg = "tool returned error result"
		ct.tool.SetStatus(tracing.StatusError, msg)
		ct.call.SetStatus(tracing.StatusError, msg)
	}
	ct.tool.End()
	ct.call.End()
}

// Shutdown flushes the queued spans and stops the exporter, until ctx
// ends.
func (t *Tracing) Shutdown(ctx context.Context) error {
	if t == nil {
		return nil
	}
	return t.provider.Shutdown(ctx)
}

// otelTracer is mcp-go's tracing.Tracer over an OpenTelemetry tracer.
type otelTracer struct{ t trace.Tracer }

func (o otelTracer) Start(ctx context.Context, name string, kind tracing.SpanKind, attrs ...tracing.Attribute) (context.Context, tracing.Span) {
	ctx, s := o.t.Start(ctx, name, trace.WithSpanKind(spanKind(kind)), trace.WithAttributes(keyValues(attrs)...))
	span := otelSpan{s}
	// mcp-go finds the span in ctx (tracing.SpanFromContext) to put the
	// tool name on the tools/call span.
	return tracing.ContextWithSpan(ctx, span), span
}

func spanKind(k tracing.SpanKind) trace.SpanKind {
	switch k {
	case tracing.SpanKindServer:
		return trace.SpanKindServer
	case tracing.SpanKindClient:
		return trace.SpanKindClient
	case tracing.SpanKindInternal:
		return trace.SpanKindInternal
	}
	return trace.SpanKindUnspecified
}

func keyValues(attrs []tracing.Attribute) []attribute.KeyValue {
	kv := make([]attribute.KeyValue, len(attrs))
	for i, a := range attrs {
		kv[i] = attribute.String(a.Key, a.Value)
	}
	return kv
}

type otelSpan struct{ s trace.Span }

func (o otelSpan) SetAttributes(attrs ...tracing.Attribute) { o.s.SetAttributes(keyValues(attrs)...) }
func (o otelSpan) RecordError(err error)                    { o.s.RecordError(err) }
func (o otelSpan) End()                                     { o.s.End() }

func (o otelSpan) SetStatus(code tracing.StatusCode, description string) {
	switch code {
	case tracing.StatusOK:
		o.s.SetStatus(codes.Ok, "")
	case tracing.StatusError:
		o.s.SetStatus(codes.Error, description)
	}
}

// headerPropagator carries trace context in HTTP headers.
type headerPropagator struct{ p propagation.TextMapPropagator }

func (h headerPropagator) Inject(ctx context.Context, headers http.Header) {
	if headers != nil {
		h.p.Inject(ctx, propagation.HeaderCarrier(headers))
	}
}

func (h headerPropagator) Extract(ctx context.Context, headers http.Header) context.Context {
	if headers == nil {
		return ctx
	}
	return h.p.Extract(ctx, propagation.HeaderCarrier(headers))
}

// metaPropagator carries trace context in params._meta (SEP-414):
// "traceparent" and "tracestate" keys with string values.
type metaPropagator struct{ p propagation.TextMapPropagator }

// InjectMeta returns meta with the trace context added. It copies rather
// than writes into meta, which the caller may share.
func (m metaPropagator) InjectMeta(ctx context.Context, meta *mcp.Meta) *mcp.Meta {
	fields := propagation.MapCarrier{}
	m.p.Inject(ctx, fields)
	if len(fields) == 0 {
		return meta
	}
	out := &mcp.Meta{}
	if meta != nil {
		out.ProgressToken = meta.ProgressToken
		out.AdditionalFields = maps.Clone(meta.AdditionalFields)
	}
	if out.AdditionalFields == nil {
		out.AdditionalFields = make(map[string]any, len(fields))
	}
	for k, v := range fields {
		out.AdditionalFields[k] = v
	}
	return out
}

func (m metaPropagator) ExtractMeta(ctx context.Context, meta *mcp.Meta) context.Context {
	if meta == nil || len(meta.AdditionalFields) == 0 {
		return ctx
	}
	return m.p.Extract(ctx, metaCarrier(meta.AdditionalFields))
}

// metaCarrier reads string values from _meta; anything else is absent.
type metaCarrier map[string]any

func (c metaCarrier) Get(key string) string {
	s, _ := c[key].(string)
	return s
}

func (c metaCarrier) Set(key, value string) { c[key] = value }

func (c metaCarrier) Keys() []string {
	keys := make([]string, 0, len(c))
	for k := range c {
		keys = append(keys, k)
	}
	return keys
}

var (
	_ tracing.Tracer         = otelTracer{}
	_ tracing.Propagator     = headerPropagator{}
	_ tracing.MetaPropagator = metaPropagator{}
)
