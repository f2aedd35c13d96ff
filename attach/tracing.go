package attach

import (
	"context"
	"iter"
	"net/http"

	a2aspec "github.com/a2aproject/a2a-go/a2a"

	"github.com/mark3labs/mcp-go/tracing"

	"github.com/ardgate/ardgate/attach/a2a"
)

// CallTracing traces the upstream calls the gateway makes itself, around
// mcp-go's client (CallRaw), as that client traces its own when given
// tracing options: a client span "mcp.tools/call" for each call, whose
// context goes upstream in the request's _meta (SEP-414) and, over HTTP,
// in its headers.
type CallTracing struct {
	Tracer  tracing.Tracer
	Headers tracing.Propagator
	Meta    tracing.MetaPropagator
}

// start opens the client span of a request of method, and returns the
// _meta members that carry its context upstream.
func (t *CallTracing) start(ctx context.Context, method string) (context.Context, tracing.Span, map[string]any) {
	ctx, span := t.Tracer.Start(ctx, "mcp."+method, tracing.SpanKindClient, tracing.String("mcp.method", method))
	var fields map[string]any
	if m := t.Meta.InjectMeta(ctx, nil); m != nil {
		fields = m.AdditionalFields
	}
	return ctx, span, fields
}

// header returns the trace context of ctx as HTTP headers; nil when
// tracing is off.
func (t *CallTracing) header(ctx context.Context) http.Header {
	if t == nil {
		return nil
	}
	h := http.Header{}
	t.Headers.Inject(ctx, h)
	return h
}

// endSpan ends a call's client span as mcp-go's client ends its own: an
// error is its status.
func endSpan(span tracing.Span, err error) {
	if err != nil {
		span.SetStatus(tracing.StatusError, err.Error())
		span.RecordError(err)
	}
	span.End()
}

// Span opens a client span name for a request the gateway makes that is
// not an MCP server's: to an A2A agent (a2a.<method>) or a registry
// (registry.search, registry.lookup). A nil CallTracing opens a span
// that does nothing.
func (t *CallTracing) Span(ctx context.Context, name string, attrs ...tracing.Attribute) (context.Context, tracing.Span) {
	if t == nil {
		return tracing.NoopTracer().Start(ctx, name, tracing.SpanKindClient)
	}
	return t.Tracer.Start(ctx, name, tracing.SpanKindClient, attrs...)
}

// EndSpan ends a span Span opened: an error is its status.
func EndSpan(span tracing.Span, err error) { endSpan(span, err) }

// Transport sends, with each request, the trace context of its context
// as headers (traceparent, tracestate): the agents and registries the
// gateway asks then join the trace. A nil CallTracing returns next.
func (t *CallTracing) Transport(next http.RoundTripper) http.RoundTripper {
	if t == nil {
		return next
	}
	if next == nil {
		next = http.DefaultTransport
	}
	return traceHeaders{t: t, next: next}
}

type traceHeaders struct {
	t    *CallTracing
	next http.RoundTripper
}

func (h traceHeaders) RoundTrip(r *http.Request) (*http.Response, error) {
	hdr := h.t.header(r.Context())
	if len(hdr) == 0 {
		return h.next.RoundTrip(r)
	}
	r = r.Clone(r.Context()) // a RoundTripper may not change the request it is given
	for k, v := range hdr {
		r.Header[k] = v
	}
	return h.next.RoundTrip(r)
}

// tracedAgent opens a client span, a2a.<method>, for each request to an
// A2A agent; its context goes in the request's headers (Transport).
type tracedAgent struct {
	a2a.Client
	t     *CallTracing
	agent string
}

func (a tracedAgent) start(ctx context.Context, method string) (context.Context, tracing.Span) {
	return a.t.Span(ctx, "a2a."+method, tracing.String("a2a.method", method), tracing.String("a2a.agent", a.agent))
}

func (a tracedAgent) SendMessage(ctx context.Context, p *a2aspec.MessageSendParams) (a2aspec.SendMessageResult, error) {
	ctx, span := a.start(ctx, "message/send")
	res, err := a.Client.SendMessage(ctx, p)
	endSpan(span, err)
	return res, err
}

func (a tracedAgent) GetTask(ctx context.Context, q *a2aspec.TaskQueryParams) (*a2aspec.Task, error) {
	ctx, span := a.start(ctx, "tasks/get")
	res, err := a.Client.GetTask(ctx, q)
	endSpan(span, err)
	return res, err
}

func (a tracedAgent) CancelTask(ctx context.Context, p *a2aspec.TaskIDParams) (*a2aspec.Task, error) {
	ctx, span := a.start(ctx, "tasks/cancel")
	res, err := a.Client.CancelTask(ctx, p)
	endSpan(span, err)
	return res, err
}

// ResubscribeToTask's span lasts as long as the stream is read.
func (a tracedAgent) ResubscribeToTask(ctx context.Context, p *a2aspec.TaskIDParams) iter.Seq2[a2aspec.Event, error] {
	return func(yield func(a2aspec.Event, error) bool) {
		ctx, span := a.start(ctx, "tasks/resubscribe")
		var last error
		for ev, err := range a.Client.ResubscribeToTask(ctx, p) {
			if err != nil {
				last = err
			}
			if !yield(ev, err) {
				break
			}
		}
		endSpan(span, last)
	}
}
