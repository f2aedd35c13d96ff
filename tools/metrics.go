package tools

import (
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/ardgate/ardgate/attach"
	"github.com/ardgate/ardgate/guard"
)

// metrics are the gateway's Prometheus series, on a registry of its own.
type metrics struct {
	reg      *prometheus.Registry
	calls    *prometheus.CounterVec
	latency  *prometheus.HistogramVec
	upstream *prometheus.CounterVec
	registry *prometheus.HistogramVec
	refusals *prometheus.CounterVec
	attaches *prometheus.CounterVec
	sessions prometheus.GaugeFunc
	attached *prometheus.GaugeVec
	backlog  *prometheus.GaugeVec
	lists    *prometheus.CounterVec
	offers   *prometheus.CounterVec

	// The proxied tools' series, looked up once: every proxied call
	// records into them, and a lookup takes the vector's lock, which every
	// session shares.
	proxiedOK, proxiedFailed prometheus.Counter
	proxiedLatency           prometheus.Observer
	fastLists, serverLists   prometheus.Counter
}

func newMetrics(m *attach.Manager) *metrics {
	x := &metrics{
		reg: prometheus.NewRegistry(),
		calls: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "ardgate_tool_calls_total",
			Help: "Tool calls by tool (gateway tools by name, proxied tools as \"proxied\") and result."}, []string{"tool", "result"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "ardgate_tool_call_duration_seconds",
			Help: "Tool call latency.", Buckets: prometheus.ExponentialBuckets(0.0001, 4, 10)}, []string{"tool"}),
		upstream: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "ardgate_upstream_errors_total",
			Help: "Failed proxied calls, and task tools failed by their agents, by the URN of the attachment (\"(detached)\" once gone) and error code."}, []string{"urn", "code"}),
		registry: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "ardgate_registry_request_duration_seconds",
			Help: "Registry search latency by registry and result.", Buckets: prometheus.ExponentialBuckets(0.0001, 4, 10)}, []string{"registry", "result"}),
		refusals: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "ardgate_refusals_total",
			Help: "Requests a safety rule refused, by rule."}, []string{"rule"}),
		attaches: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "ardgate_attach_total",
			Help: "attach_resource calls by kind (\"unknown\" when refused) and result: attached, already_attached or error."}, []string{"kind", "result"}),
		attached: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "ardgate_attachments",
			Help: "Current attachments by kind and status, over all sessions."}, []string{"kind", "status"}),
		backlog: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "ardgate_stdio_backlog_bytes",
			Help: "Bytes of requests waiting to be written to stdio servers that have stopped reading their input, by attachment name, over all sessions; absent while none waits."}, []string{"upstream"}),
		lists: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "ardgate_tool_lists_total",
			Help: "tools/list requests answered, by path: \"fast\" (from encoded definitions) or \"server\"."}, []string{"path"}),
		offers: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "ardgate_offer_requests_total",
			Help: "Requests for the attached servers' prompts and resources (prompts/list, resources/read, completion/complete, …), by method and result: ok or error."}, []string{"method", "result"}),
	}
	x.proxiedOK = x.calls.WithLabelValues("proxied", "ok")
	x.proxiedFailed = x.calls.WithLabelValues("proxied", "error")
	x.proxiedLatency = x.latency.WithLabelValues("proxied")
	x.fastLists, x.serverLists = x.lists.WithLabelValues("fast"), x.lists.WithLabelValues("server")
	x.sessions = prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "ardgate_sessions", Help: "Open sessions."},
		func() float64 { return float64(len(m.Sessions())) })
	x.reg.MustRegister(x.calls, x.latency, x.upstream, x.registry, x.refusals, x.attaches, x.sessions, x.lists, x.offers,
		attachmentsCollector{m: m, attached: x.attached, backlog: x.backlog},
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return x
}

// attachmentsCollector counts attachments, and what waits for their
// stdio servers, when scraped, so the gauges are never out of step with
// the sessions.
type attachmentsCollector struct {
	m                 *attach.Manager
	attached, backlog *prometheus.GaugeVec
}

func (c attachmentsCollector) Describe(ch chan<- *prometheus.Desc) {
	c.attached.Describe(ch)
	c.backlog.Describe(ch)
}

func (c attachmentsCollector) Collect(ch chan<- prometheus.Metric) {
	c.attached.Reset()
	c.backlog.Reset()
	for _, s := range c.m.Sessions() {
		for _, a := range s.Attachments() {
			st, _ := a.Status()
			c.attached.WithLabelValues(a.Kind, st).Inc()
			if n := a.Backlog(); n > 0 {
				c.backlog.WithLabelValues(a.Name).Add(float64(n))
			}
		}
	}
	c.attached.Collect(ch)
	c.backlog.Collect(ch)
}

// observe records one tool call.
func (x *metrics) observe(tool string, took time.Duration, failed bool) {
	if strings.HasPrefix(tool, "mcp_") {
		x.proxiedLatency.Observe(took.Seconds())
		if failed {
			x.proxiedFailed.Inc()
		} else {
			x.proxiedOK.Inc()
		}
		return
	}
	result := "ok"
	if failed {
		result = "error"
	}
	x.calls.WithLabelValues(tool, result).Inc()
	x.latency.WithLabelValues(tool).Observe(took.Seconds())
}

// refused counts a refusal by its rule.
func (x *metrics) refused(err error) {
	var r *guard.Refusal
	if errors.As(err, &r) {
		x.refusals.WithLabelValues(r.Rule).Inc()
	}
}

func (x *metrics) handler() http.Handler {
	return promhttp.HandlerFor(x.reg, promhttp.HandlerOpts{Registry: x.reg})
}
