package attach

import (
	"context"
	"net/http"
	"strings"

	"github.com/mark3labs/mcp-go/tracing"
	"golang.org/x/net/http/httpguts"
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

// headerLines returns the trace context of ctx as header lines, each
// after a CRLF, for a request the gateway writes itself. A value net/http
// would refuse to send is left out: tracestate comes from the client.
func (t *CallTracing) headerLines(ctx context.Context) string {
	var b strings.Builder
	for k, vs := range t.header(ctx) {
		for _, v := range vs {
			if httpguts.ValidHeaderFieldValue(v) {
				b.WriteString("\r\n" + k + ": " + v)
			}
		}
	}
	return b.String()
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
