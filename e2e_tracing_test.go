package main

import (
	"compress/gzip"
	"encoding/hex"
	"io"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"strings"
	"sync"
	"testing"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

// otlpReceiver is a loopback OTLP/HTTP collector: it decodes every
// ExportTraceServiceRequest it is sent and counts every request.
type otlpReceiver struct {
	*httptest.Server
	mu    sync.Mutex
	hits  int
	paths []string
	reqs  []*coltracepb.ExportTraceServiceRequest
}

func newOTLPReceiver(t *testing.T) *otlpReceiver {
	t.Helper()
	rcv := &otlpReceiver{}
	rcv.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rcv.mu.Lock()
		rcv.hits++
		rcv.paths = append(rcv.paths, r.Method+" "+r.URL.Path)
		rcv.mu.Unlock()
		var body io.Reader = r.Body
		if r.Header.Get("Content-Encoding") == "gzip" {
			zr, err := gzip.NewReader(r.Body)
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			body = zr
		}
		data, err := io.ReadAll(body)
		req := &coltracepb.ExportTraceServiceRequest{}
		if err == nil {
			err = proto.Unmarshal(data, req)
		}
		if err != nil || r.Header.Get("Content-Type") != "application/x-protobuf" {
			t.Errorf("OTLP receiver: %s %s (%s): %v", r.Method, r.URL.Path, r.Header.Get("Content-Type"), err)
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		rcv.mu.Lock()
		rcv.reqs = append(rcv.reqs, req)
		rcv.mu.Unlock()
		out, _ := proto.Marshal(&coltracepb.ExportTraceServiceResponse{})
		w.Header().Set("Content-Type", "application/x-protobuf")
		_, _ = w.Write(out)
	}))
	t.Cleanup(rcv.Close)
	return rcv
}

// span is one received span with what the assertions need.
type span struct {
	name, kind, traceID, spanID, parentID, tool string
	status                                      tracepb.Status_StatusCode
}

// received returns every span sent so far, and the resource and scope
// attributes seen (key → value).
func (rcv *otlpReceiver) received() (spans []span, resource map[string]string, scopes map[string]bool) {
	rcv.mu.Lock()
	defer rcv.mu.Unlock()
	resource, scopes = map[string]string{}, map[string]bool{}
	for _, req := range rcv.reqs {
		for _, rs := range req.ResourceSpans {
			for _, kv := range rs.GetResource().GetAttributes() {
				resource[kv.Key] = kv.GetValue().GetStringValue()
			}
			for _, ss := range rs.ScopeSpans {
				scopes[ss.GetScope().GetName()] = true
				for _, s := range ss.Spans {
					sp := span{name: s.Name, kind: s.Kind.String(), traceID: hex.EncodeToString(s.TraceId),
						spanID: hex.EncodeToString(s.SpanId), parentID: hex.EncodeToString(s.ParentSpanId), status: s.GetStatus().GetCode()}
					for _, kv := range s.Attributes {
						if kv.Key == "mcp.tool.name" {
							sp.tool = kv.GetValue().GetStringValue()
						}
					}
					spans = append(spans, sp)
				}
			}
		}
	}
	return spans, resource, scopes
}

func (rcv *otlpReceiver) hitCount() int {
	rcv.mu.Lock()
	defer rcv.mu.Unlock()
	return rcv.hits
}

// one returns the single span matching, failing the test otherwise.
func one(t *testing.T, spans []span, match func(span) bool, what string) span {
	t.Helper()
	var found []span
	for _, s := range spans {
		if match(s) {
			found = append(found, s)
		}
	}
	if len(found) != 1 {
		t.Fatalf("%d spans for %s, want 1; spans:\n%s", len(found), what, dumpSpans(spans))
	}
	return found[0]
}

func dumpSpans(spans []span) string {
	var b strings.Builder
	for _, s := range spans {
		b.WriteString("  " + s.name + " " + s.kind + " tool=" + s.tool + " trace=" + s.traceID + " span=" + s.spanID + " parent=" + s.parentID + "\n")
	}
	return b.String()
}

// checkProxied asserts the chain of one proxied call of tool: the
// gateway's tools/call server span → tool.<tool> → the upstream client's
// tools/call span, all in one trace.
func checkProxied(t *testing.T, spans []span, tool string) {
	t.Helper()
	srv := one(t, spans, func(s span) bool {
		return s.name == "mcp.tools/call" && s.kind == "SPAN_KIND_SERVER" && s.tool == tool
	}, "the gateway's tools/call of "+tool)
	tl := one(t, spans, func(s span) bool { return s.name == "tool."+tool }, "tool."+tool)
	cli := one(t, spans, func(s span) bool {
		return s.name == "mcp.tools/call" && s.kind == "SPAN_KIND_CLIENT" && s.parentID == tl.spanID
	}, "the upstream client's tools/call under tool."+tool)
	if tl.kind != "SPAN_KIND_INTERNAL" || tl.parentID != srv.spanID || tl.traceID != srv.traceID {
		t.Errorf("%s: tool span %+v is not a child of the tools/call span %+v", tool, tl, srv)
	}
	if cli.traceID != srv.traceID {
		t.Errorf("%s: upstream call span in trace %s, gateway's tools/call span in %s", tool, cli.traceID, srv.traceID)
	}
}

// With ARDGATE_OTEL_ENDPOINT set, the HTTP gateway exports its spans over
// OTLP/HTTP: every method and tool handler, and the calls to a stdio and a
// remote upstream as client spans in the same trace as the gateway's
// tools/call. A traceparent in _meta is the parent of the gateway's span.
// The spans still queued at SIGTERM are flushed before the process exits.
func TestTracingHTTPGateway(t *testing.T) {
	rcv := newOTLPReceiver(t)
	remote := startFixtureHTTP(t)
	catalog := catalogWithRemote(t, remote)
	url, _, stop := startHTTPStop(t, env(true, "ARDGATE_ALLOW_LOCAL_URLS=true", "ARDGATE_OTEL_ENDPOINT="+rcv.URL), "--catalog", catalog)

	g := connectHTTP(t, url, client.WithProtocolVersion(mcp.ProtocolVersion20251125))
	g.ok("gateway_health", map[string]any{}, nil)
	const clientTrace, clientSpan = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
	if res := g.callMeta("list_attached_resources", map[string]any{},
		&mcp.Meta{AdditionalFields: map[string]any{"traceparent": "00-" + clientTrace + "-" + clientSpan + "-01"}}); res.IsError {
		t.Fatalf("list_attached_resources: %s", text(res))
	}
	for _, urn := range []string{"urn:air:ardgate.test:mcp:fixture", "urn:air:ardgate.test:mcp:remote-fixture"} {
		g.ok("attach_resource", map[string]any{"urn": urn}, nil)
	}
	for _, tool := range []string{"mcp_fixture__echo", "mcp_remote_fixture__echo"} {
		if got := text(g.call(tool, map[string]any{"message": "traced"})); got != "traced" {
			t.Fatalf("%s = %q", tool, got)
		}
	}
	_ = g.c.Close()
	stop()

	version, err := exec.Command(gatewayBin, "version").Output()
	if err != nil {
		t.Fatal(err)
	}
	spans, resource, scopes := rcv.received()
	if resource["service.name"] != "ardgate" || "ardgate "+resource["service.version"] != strings.TrimSpace(string(version)) {
		t.Errorf("resource %v, want service.name ardgate and service.version from %q", resource, version)
	}
	if !scopes["github.com/ardgate/ardgate"] || len(scopes) != 1 {
		t.Errorf("instrumentation scopes %v", scopes)
	}
	rcv.mu.Lock()
	for _, p := range rcv.paths {
		if p != "POST /v1/traces" {
			t.Errorf("the exporter sent %s, want POST /v1/traces", p)
		}
	}
	rcv.mu.Unlock()

	one(t, spans, func(s span) bool { return s.name == "mcp.initialize" && s.kind == "SPAN_KIND_SERVER" }, "the client's initialize")
	one(t, spans, func(s span) bool { return s.name == "tool.gateway_health" }, "tool.gateway_health")
	list := one(t, spans, func(s span) bool { return s.tool == "list_attached_resources" && s.kind == "SPAN_KIND_SERVER" }, "tools/call list_attached_resources")
	if list.traceID != clientTrace || list.parentID != clientSpan {
		t.Errorf("a call with a _meta traceparent: span in trace %s with parent %s, want %s and %s", list.traceID, list.parentID, clientTrace, clientSpan)
	}
	checkProxied(t, spans, "mcp_fixture__echo")
	checkProxied(t, spans, "mcp_remote_fixture__echo")
	// Attaching started each upstream: its initialize is a client span
	// under tool.attach_resource.
	inits := 0
	for _, s := range spans {
		if s.name == "mcp.initialize" && s.kind == "SPAN_KIND_CLIENT" {
			inits++
		}
	}
	if inits != 2 {
		t.Errorf("%d upstream initialize spans, want 2:\n%s", inits, dumpSpans(spans))
	}
}

// Over stdio too, with --otel-endpoint; the spans are flushed when the
// client closes stdin and the gateway exits.
func TestTracingStdioGateway(t *testing.T) {
	rcv := newOTLPReceiver(t)
	g := startStdio(t, env(true), "--catalog", "testdata/catalogs/fixture.json", "--otel-endpoint", rcv.URL+"/v1/traces")
	g.ok("attach_resource", map[string]any{"urn": "urn:air:ardgate.test:mcp:fixture"}, nil)
	if got := text(g.call("mcp_fixture__echo", map[string]any{"message": "traced"})); got != "traced" {
		t.Fatalf("echo = %q", got)
	}
	_ = g.c.Close() // closes stdin and waits for the gateway to exit
	spans, resource, _ := rcv.received()
	if resource["service.name"] != "ardgate" {
		t.Errorf("resource %v", resource)
	}
	checkProxied(t, spans, "mcp_fixture__echo")
}

// Tracing is off by default: a gateway with no ARDGATE_OTEL_ENDPOINT
// sends nothing, even with the standard OTEL_EXPORTER_OTLP_* variables
// pointing at a collector.
func TestTracingOffByDefault(t *testing.T) {
	rcv := newOTLPReceiver(t)
	g := startStdio(t, env(true, "OTEL_EXPORTER_OTLP_ENDPOINT="+rcv.URL, "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT="+rcv.URL+"/v1/traces"),
		"--catalog", "testdata/catalogs/fixture.json")
	g.ok("attach_resource", map[string]any{"urn": "urn:air:ardgate.test:mcp:fixture"}, nil)
	if got := text(g.call("mcp_fixture__echo", map[string]any{"message": "x"})); got != "x" {
		t.Fatalf("echo = %q", got)
	}
	_ = g.c.Close()
	if n := rcv.hitCount(); n != 0 {
		t.Fatalf("tracing off, yet the collector got %d requests", n)
	}
	if strings.Contains(g.stderr.String(), "tracing on") {
		t.Errorf("stderr says tracing is on:\n%s", g.stderr.String())
	}
}
