package tools

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/ardgate/ardgate/attach"
	"github.com/ardgate/ardgate/config"
	"github.com/ardgate/ardgate/guard"
	"github.com/ardgate/ardgate/registry"
	"github.com/ardgate/ardgate/testdata/kagent"
	"github.com/ardgate/ardgate/testdata/openfang"
)

// attachOpenFang attaches the OpenFang agent at peer from a catalog entry
// naming its origin, and returns the session and the protocol shown.
func attachOpenFang(t *testing.T, peer *openfang.A2A) (*clientSession, string) {
	t.Helper()
	tg := agentGateway(t, true, agentEntry("urn:air:openfang.test:agent:code-reviewer", peer.URL))
	s := tg.connect(t)
	res := s.call("attach_resource", map[string]any{"urn": "urn:air:openfang.test:agent:code-reviewer"})
	var att struct {
		Kind, Name string
		Protocol   string `json:"a2a_protocol"`
	}
	if err := json.Unmarshal(res.RawStructuredContent, &att); err != nil || res.IsError || att.Kind != "a2a_agent" {
		t.Fatalf("attach the OpenFang agent: %s", firstText(res))
	}
	return s, att.Protocol
}

// OpenFang's card (no protocol version, no interfaces) is spoken to in
// tasks/send: a completed task, sessionId as the context id, a working
// task that completes later, a question answered, a failure, a cancel.
func TestOpenFangAgentTasks(t *testing.T) {
	peer := openfang.StartA2A(t)
	s, protocol := attachOpenFang(t, peer)
	if protocol != "tasks" {
		t.Errorf("protocol %q, want tasks", protocol)
	}

	v := s.task(s.call("spawn_agent", map[string]any{"message": "review main.go"}))
	if v.State != "completed" || !v.Final || !v.said("reviewed: review main.go") {
		t.Fatalf("completed task: %+v", v)
	}
	if at, ok := peer.Get(v.TaskID); !ok || v.ContextID == "" || at.SessionID != v.ContextID {
		t.Fatalf("context_id %q, the agent's sessionId %q", v.ContextID, at.SessionID)
	}

	v = s.task(s.call("spawn_agent", map[string]any{"message": "hold"}))
	id := <-peer.Held
	if v.Final || v.State != "working" || v.TaskID != id {
		t.Fatalf("held task: %+v (the agent's %s)", v, id)
	}
	peer.Finish(id, "I found 2 potential issues")
	v = s.task(s.call("wait_task", map[string]any{"task_id": v.TaskID, "timeout_seconds": 10}))
	if v.State != "completed" || !v.said("I found 2 potential issues") || len(v.Artifacts) != 1 {
		t.Fatalf("held task after it completed: %+v", v)
	}

	v = s.task(s.call("spawn_agent", map[string]any{"message": "ask"}))
	if v.State != "input-required" || !v.said(openfang.Question) {
		t.Fatalf("inputRequired task: %+v", v)
	}
	v = s.task(s.call("message_task", map[string]any{"task_id": v.TaskID, "message": "Ada"}))
	if v.State != "completed" || !v.said("hello Ada") || v.repeated() != "" {
		t.Fatalf("after message_task: %+v", v)
	}

	v = s.task(s.call("spawn_agent", map[string]any{"message": "fail"}))
	if v.State != "failed" || !v.said("Error: the agent failed as asked") {
		t.Fatalf("failed task: %+v", v)
	}

	v = s.task(s.call("spawn_agent", map[string]any{"message": "hold"}))
	<-peer.Held
	res := s.call("cancel_task", map[string]any{"task_id": v.TaskID})
	if res.IsError || !strings.Contains(string(res.RawStructuredContent), `"canceled"`) {
		t.Fatalf("cancel: %s", firstText(res))
	}
	if at, _ := peer.Get(v.TaskID); at.Status != openfang.StateCancelled {
		t.Fatalf("the agent's task is %s after cancel_task", at.Status)
	}
	if reqs := peer.Requests(); slices.Contains(reqs, "POST /a2a") || !slices.Contains(reqs, "POST /a2a/tasks/"+v.TaskID+"/cancel") ||
		!slices.Contains(reqs, "GET /a2a/tasks/"+id) {
		t.Errorf("requests: %v", reqs)
	}
}

// A card that claims v0.3 while its agent speaks only tasks/send: the
// 404 to message/send moves the agent to tasks/send.
func TestOpenFangFallbackOn404(t *testing.T) {
	peer := openfang.StartA2A(t)
	peer.ProtocolVersion = "0.3.0"
	s, _ := attachOpenFang(t, peer)
	v := s.task(s.call("spawn_agent", map[string]any{"message": "review main.go"}))
	if v.State != "completed" || !v.said("reviewed: review main.go") {
		t.Fatalf("after the fallback: %+v", v)
	}
	reqs := peer.Requests()
	if i := slices.Index(reqs, "POST /a2a"); i < 0 || !slices.Contains(reqs[i:], "POST /a2a/tasks/send") {
		t.Fatalf("requests: %v", reqs)
	}
}

// agents[].dialect is spoken whatever the card says: no v0.3 request is
// sent at all.
func TestAgentDialectOverride(t *testing.T) {
	peer := openfang.StartA2A(t)
	peer.ProtocolVersion = "0.3.0"
	tg := agentGatewayPinning(t, true, 10*time.Second, []config.Agent{{Name: "reviewer", URL: peer.URL, Dialect: "tasks"}})
	s := tg.connect(t)
	waitPinnedAgents(tg)
	v := s.task(s.call("spawn_agent", map[string]any{"agent": "reviewer", "message": "review main.go"}))
	if v.State != "completed" || !v.said("reviewed: review main.go") {
		t.Fatalf("spawn: %+v", v)
	}
	if reqs := peer.Requests(); slices.Contains(reqs, "POST /a2a") || !slices.Contains(reqs, "POST /a2a/tasks/send") {
		t.Fatalf("requests: %v", reqs)
	}
}

// wellKnownGateway serves a gateway whose one registry is a well-known
// registry of hosts, refreshed once.
func wellKnownGateway(t *testing.T, hosts ...string) (*testGateway, *registry.WellKnown) {
	t.Helper()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	d := &guard.Dialer{AllowLocal: true}
	hc := d.Client()
	w, err := registry.NewWellKnown("hosts", hosts, registry.RemoteOptions{HTTP: hc}, log)
	if err != nil {
		t.Fatal(err)
	}
	w.Refresh(context.Background())
	m := &attach.Manager{Registries: []registry.Registry{w}, HTTP: hc, Dialer: d, AllowTypes: config.DefaultAllowAttachTypes,
		MaxAttachments: 5, CallTimeout: 10 * time.Second, StartTimeout: 10 * time.Second, Log: log}
	g := New(m, log, Options{Version: "test"})
	h := g.NewHTTP(HTTPOptions{})
	ts := httptest.NewServer(h)
	t.Cleanup(func() { _ = h.Shutdown(context.Background()); ts.Close(); g.Close(); hc.CloseIdleConnections() })
	return &testGateway{g: g, h: h, url: ts.URL + "/mcp"}, w
}

type foundEntries struct {
	Results []struct {
		URN              string
		Attachable       bool
		WhyNotAttachable string `json:"why_not_attachable"`
	}
}

func (s *clientSession) discoverEntries(args map[string]any) foundEntries {
	s.t.Helper()
	res := s.call("discover_resources", args)
	var d foundEntries
	if err := json.Unmarshal(res.RawStructuredContent, &d); err != nil || res.IsError {
		s.t.Fatalf("discover: %s", firstText(res))
	}
	return d
}

// A kagent card from a well-known host with a path: found by its string
// capability, attached from its endpoints[type=a2a], and driven through
// tasks/sendSubscribe, whose stream tells the wait of the end: the
// agent's tasks/status fails after the wait's first look.
func TestKagentCardFromWellKnownHost(t *testing.T) {
	host := kagent.Start(t)
	tg, _ := wellKnownGateway(t, host.URL)
	s := tg.connect(t)

	d := s.discoverEntries(map[string]any{"text": "kubernetes cluster", "filter": map[string]any{"capabilities": []string{"kubernetes-management"}}})
	if len(d.Results) != 1 || !d.Results[0].Attachable {
		t.Fatalf("discover by capability: %+v", d)
	}
	urn := d.Results[0].URN
	res := s.call("attach_resource", map[string]any{"urn": urn})
	if res.IsError {
		t.Fatalf("attach %s: %s", urn, firstText(res))
	}

	v := s.task(s.call("spawn_agent", map[string]any{"message": "hold scale to 3"}))
	id := <-host.Held
	if v.Final || v.TaskID != id {
		t.Fatalf("spawn: %+v", v)
	}
	waited := make(chan *mcp.CallToolResult, 1)
	go func() { waited <- s.call("wait_task", map[string]any{"task_id": v.TaskID, "timeout_seconds": 20}) }()
	host.AnswerLooks(1)
	<-host.Looked // the wait's first look; from here on only the stream tells
	host.Finish(id, "scaled to 3 replicas")
	res = <-waited
	if res.IsError {
		t.Logf("methods: %v", host.Methods())
	}
	v = s.task(res)
	if v.State != "completed" || !v.said("scaled to 3 replicas") {
		t.Fatalf("wait: %+v", v)
	}
	if m := host.Methods(); !slices.Contains(m, "tasks/sendSubscribe") || slices.Contains(m, "tasks/send") {
		t.Errorf("methods: %v", m)
	}

	host.AnswerLooks(-1)
	v = s.task(s.call("spawn_agent", map[string]any{"message": "hold"}))
	<-host.Held
	res = s.call("cancel_task", map[string]any{"task_id": v.TaskID})
	if res.IsError || !strings.Contains(string(res.RawStructuredContent), `"canceled"`) || !slices.Contains(host.Methods(), "tasks/cancel") {
		t.Fatalf("cancel: %s", firstText(res))
	}
}

// A well-known host that is down: its entries stay, saying so.
func TestWellKnownHostDownSaysSo(t *testing.T) {
	host := kagent.Start(t)
	tg, w := wellKnownGateway(t, host.URL)
	s := tg.connect(t)
	if d := s.discoverEntries(map[string]any{"text": "kubernetes"}); len(d.Results) != 1 || !d.Results[0].Attachable {
		t.Fatalf("host up: %+v", d)
	}
	host.SetDown(true)
	w.Refresh(context.Background())
	d := s.discoverEntries(map[string]any{"text": "kubernetes"})
	if len(d.Results) != 1 || d.Results[0].Attachable || !strings.Contains(d.Results[0].WhyNotAttachable, "host is down") {
		t.Fatalf("host down: %+v", d)
	}
}

// A kagent agent pinned by its URL, as openribcage's Discover takes it:
// its card is under that URL's well-known path.
func TestKagentPinnedByAgentURL(t *testing.T) {
	host := kagent.Start(t)
	tg := agentGatewayPinning(t, true, 10*time.Second, []config.Agent{{Name: "k8s", URL: host.URL + "/" + kagent.Agent}})
	s := tg.connect(t)
	waitPinnedAgents(tg)
	v := s.task(s.call("spawn_agent", map[string]any{"agent": "k8s", "message": "check pods"}))
	if v.State != "completed" || !v.said("reviewed: check pods") {
		t.Fatalf("spawn: %+v", v)
	}
}

// waitPinnedAgents waits until the pinned agents of tg's sessions are reached.
func waitPinnedAgents(tg *testGateway) {
	for _, sess := range tg.g.manager.Sessions() {
		for _, a := range sess.Attachments() {
			sess.WaitStarted(context.Background(), a, 10*time.Second)
		}
	}
}
