package tools

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/a2a"
	"github.com/a2aproject/a2a-go/a2aclient"
	"github.com/a2aproject/a2a-go/a2aclient/agentcard"
	"github.com/a2aproject/a2a-go/a2asrv"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/ardgate/ardgate/attach"
	"github.com/ardgate/ardgate/config"
	"github.com/ardgate/ardgate/guard"
	"github.com/ardgate/ardgate/registry"
	"github.com/ardgate/ardgate/testdata/a2afixture"
)

// agentGateway serves a gateway whose catalog lists the agent at url.
func agentGateway(t *testing.T, allowLocal bool, entries ...registry.Entry) *testGateway {
	t.Helper()
	return agentGatewayWith(t, allowLocal, 10*time.Second, entries...)
}

// agentGatewayWith is agentGateway with a call timeout.
func agentGatewayWith(t *testing.T, allowLocal bool, callTimeout time.Duration, entries ...registry.Entry) *testGateway {
	t.Helper()
	return agentGatewayPinning(t, allowLocal, callTimeout, nil, entries...)
}

// agentGatewayPinning is agentGatewayWith with pinned agents.
func agentGatewayPinning(t *testing.T, allowLocal bool, callTimeout time.Duration, pinned []config.Agent, entries ...registry.Entry) *testGateway {
	t.Helper()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	d := &guard.Dialer{AllowLocal: allowLocal}
	hc := d.Client()
	m := &attach.Manager{
		Registries: []registry.Registry{registry.NewLocal("test", registry.NewIndex("test", entries))},
		HTTP:       hc, Dialer: d, AllowTypes: config.DefaultAllowAttachTypes, MaxAttachments: 5, CallTimeout: callTimeout,
		StartTimeout: 10 * time.Second, Log: log, Agents: pinned,
	}
	g := New(m, log, Options{Version: "test"})
	h := g.NewHTTP(HTTPOptions{})
	ts := httptest.NewServer(h)
	t.Cleanup(func() { _ = h.Shutdown(context.Background()); ts.Close(); g.Close(); hc.CloseIdleConnections() })
	return &testGateway{g: g, h: h, url: ts.URL + "/mcp"}
}

func agentEntry(urn, cardURL string) registry.Entry {
	return registry.Entry{Identifier: urn, DisplayName: "Test agent", Type: config.MediaA2AAgentCard, URL: cardURL}
}

func (s *clientSession) callWithToken(name string, args any, token string) *mcp.CallToolResult {
	s.t.Helper()
	req := mcp.CallToolRequest{}
	req.Params.Name = name
	req.Params.Arguments = args
	req.Params.Meta = &mcp.Meta{ProgressToken: token}
	res, err := s.c.CallTool(context.Background(), req)
	if err != nil {
		s.t.Fatalf("call %s: %v", name, err)
	}
	return res
}

func (s *clientSession) progressFor(token string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, n := range s.notes {
		if n.Method == string(mcp.MethodNotificationProgress) && n.Params.AdditionalFields["progressToken"] == token {
			out = append(out, n.Params.AdditionalFields["message"].(string))
		}
	}
	return out
}

type taskView struct {
	TaskID    string `json:"task_id"`
	Agent     string
	ContextID string `json:"context_id"`
	State     string
	Final     bool
	Messages  []struct{ Role, Text string }
	Artifacts []struct {
		Name  string
		Parts []string
	}
	NotShown *attach.NotShown `json:"not_shown"`
	Lost     string
}

func (s *clientSession) task(res *mcp.CallToolResult) taskView {
	s.t.Helper()
	if res.IsError {
		s.t.Fatalf("task tool failed: %s", firstText(res))
	}
	var v taskView
	if err := json.Unmarshal(res.RawStructuredContent, &v); err != nil {
		s.t.Fatal(err)
	}
	return v
}

// conversation is the task's messages, "role: text" each, in order.
func (v taskView) conversation() []string {
	var out []string
	for _, m := range v.Messages {
		out = append(out, m.Role+": "+m.Text)
	}
	return out
}

// repeated is a message said twice in the task's view, or "".
func (v taskView) repeated() string {
	seen := map[string]bool{}
	for _, m := range v.conversation() {
		if seen[m] {
			return m
		}
		seen[m] = true
	}
	return ""
}

func (v taskView) said(text string) bool {
	for _, m := range v.Messages {
		if strings.Contains(m.Text, text) {
			return true
		}
	}
	for _, a := range v.Artifacts {
		for _, p := range a.Parts {
			if strings.Contains(p, text) {
				return true
			}
		}
	}
	return false
}

// One agent, every behaviour, driven only through the MCP task tools.
func TestAgentTasks(t *testing.T) {
	agent := a2afixture.Start(t)
	tg := agentGateway(t, true, agentEntry("urn:air:agents.test:agent:helper", agent.URL+"/.well-known/agent-card.json"))
	s := tg.connect(t)

	var att struct {
		Kind, Name string
		Skills     []struct {
			ID   string
			Tags []string
		}
	}
	res := s.call("attach_resource", map[string]any{"urn": "urn:air:agents.test:agent:helper"})
	if err := json.Unmarshal(res.RawStructuredContent, &att); err != nil || res.IsError || att.Kind != "a2a_agent" || len(att.Skills) != 6 {
		t.Fatalf("attach agent: %s", firstText(res))
	}

	// A direct reply is a completed task.
	v := s.task(s.call("spawn_agent", map[string]any{"agent": "helper", "message": "reply hello"}))
	if v.State != "completed" || !v.Final || !v.said("echo: hello") {
		t.Fatalf("reply: %+v", v)
	}

	// Streamed progress, then an artifact with a data part described.
	v = s.task(s.call("spawn_agent", map[string]any{"message": "stream 4"}))
	if v.TaskID == "" || v.Final {
		t.Fatalf("spawn returned a finished task or none: %+v", v)
	}
	v = s.task(s.callWithToken("wait_task", map[string]any{"task_id": v.TaskID, "timeout_seconds": 10}, "w1"))
	if v.State != "completed" || !v.said("done after 4 steps") || !v.said(`[data] {"steps":4}`) {
		t.Fatalf("stream: %+v", v)
	}
	if p := s.progressFor("w1"); len(p) == 0 {
		t.Fatal("no progress notifications while waiting")
	}

	// Input required, answered in the task's context.
	v = s.task(s.call("spawn_agent", map[string]any{"message": "ask"}))
	v = s.task(s.call("wait_task", map[string]any{"task_id": v.TaskID}))
	if v.State != "input-required" || !v.said("what is your name?") {
		t.Fatalf("ask: %+v", v)
	}
	v = s.task(s.call("message_task", map[string]any{"task_id": v.TaskID, "message": "Ada"}))
	if v.State != "completed" || !v.said("hello Ada") {
		t.Fatalf("after message_task: %+v", v)
	}
	// The conversation reads in order, question before answer, each once.
	if got := strings.Join(v.conversation(), " | "); got != "user: ask | agent: what is your name? | user: Ada" {
		t.Errorf("the conversation: %s", got)
	}

	// A wait that times out is not an error; cancel ends the task.
	v = s.task(s.call("spawn_agent", map[string]any{"message": "wait"}))
	v = s.task(s.call("wait_task", map[string]any{"task_id": v.TaskID, "timeout_seconds": 0.3}))
	if v.Final || v.State != "working" {
		t.Fatalf("wait past timeout: %+v", v)
	}
	res = s.call("cancel_task", map[string]any{"task_id": v.TaskID})
	if res.IsError || !strings.Contains(string(res.RawStructuredContent), `"canceled"`) {
		t.Fatalf("cancel: %s", firstText(res))
	}

	// Failure is reported as the task's state.
	v = s.task(s.call("spawn_agent", map[string]any{"message": "fail"}))
	v = s.task(s.call("wait_task", map[string]any{"task_id": v.TaskID}))
	if v.State != "failed" || !v.said("the fixture failed as asked") {
		t.Fatalf("fail: %+v", v)
	}

	var list struct{ Count int }
	_ = json.Unmarshal(s.call("list_tasks", map[string]any{}).RawStructuredContent, &list)
	if list.Count != 5 {
		t.Fatalf("list_tasks count %d, want 5", list.Count)
	}
	if code := s.code(s.call("wait_task", map[string]any{"task_id": "nope"})); code != "unknown_task" {
		t.Fatalf("unknown task: %s", code)
	}
	res = s.call("spawn_agent", map[string]any{"agent": "ghost", "message": "reply x"})
	if s.code(res) != "unknown_agent" || !strings.Contains(firstText(res), "helper") {
		t.Fatalf("unknown agent: %s", firstText(res))
	}
}

// Tasks still running when the session ends are cancelled at the agent.
func TestAgentTasksCancelledAtSessionEnd(t *testing.T) {
	agent := a2afixture.Start(t)
	tg := agentGateway(t, true, agentEntry("urn:air:agents.test:agent:helper", agent.URL+"/.well-known/agent-card.json"))
	s := tg.connect(t)
	s.call("attach_resource", map[string]any{"urn": "urn:air:agents.test:agent:helper"})
	v := s.task(s.call("spawn_agent", map[string]any{"message": "wait"}))
	_ = s.c.Close()

	direct, err := a2aclient.NewFromCard(context.Background(), agent.Card, a2aclient.WithDefaultsDisabled(), a2aclient.WithJSONRPCTransport(agent.HTTPClient()))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = direct.Destroy() }()
	task, err := direct.GetTask(context.Background(), &a2a.TaskQueryParams{ID: a2a.TaskID(v.TaskID)})
	if err != nil || task.Status.State != a2a.TaskStateCanceled {
		t.Fatalf("after session end the task is %v (%v), want canceled", task, err)
	}
}

// A session ending with many tasks cancels them at their agent a few at
// a time: 300 cancellations went at once, and 256 connections stayed open
// after them.
func TestSessionEndCancelsAFewAtATime(t *testing.T) {
	agent := a2afixture.Start(t)
	var inflight, most atomic.Int64
	proxied := httputil.NewSingleHostReverseProxy(mustParse(t, agent.URL))
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		if bytes.Contains(body, []byte(`"tasks/cancel"`)) {
			n := inflight.Add(1)
			defer inflight.Add(-1)
			for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
			}
			time.Sleep(30 * time.Millisecond) // long enough for them to meet
		}
		proxied.ServeHTTP(w, r)
	}))
	defer proxy.Close()
	card, _ := json.Marshal(a2afixture.NewCard(proxy.URL + "/a2a"))
	cards := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write(card) }))
	defer cards.Close()

	s := agentGateway(t, true, agentEntry("urn:air:agents.test:agent:helper", cards.URL+"/card.json")).connect(t)
	s.call("attach_resource", map[string]any{"urn": "urn:air:agents.test:agent:helper"})
	var ids []string
	const atOnce = 8 // attach's agentRequestsAtOnce
	for range 3 * atOnce {
		// "slow" runs with one status update, where "wait" adds one each
		// tick: on a loaded machine, 24 growing histories made every
		// cancellation slow enough to miss the session end's budget.
		ids = append(ids, s.task(s.call("spawn_agent", map[string]any{"message": "slow 600000"})).TaskID)
	}
	_ = s.c.Close()
	for _, id := range ids {
		awaitAtAgent(t, agent, id, a2a.TaskStateCanceled)
	}
	if n := most.Load(); n > atOnce || n < 2 {
		t.Fatalf("%d cancellations at the agent at once; want a few, at most %d", n, atOnce)
	}
}

// At shutdown a call the drain cut is answered at once, while its
// session's tasks are still being cancelled at an agent that answers no
// cancellation; and the shutdown ends, that agent notwithstanding. The
// cancellations went first, and the answer waited out the shutdown's
// whole time, to be lost with it.
func TestShutdownAnswersBeforeTasksAreCancelled(t *testing.T) {
	t.Parallel()
	agent := a2afixture.Start(t)
	proxied := httputil.NewSingleHostReverseProxy(mustParse(t, agent.URL))
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		if bytes.Contains(body, []byte(`"tasks/cancel"`)) {
			<-r.Context().Done() // never answered
			return
		}
		proxied.ServeHTTP(w, r)
	}))
	t.Cleanup(proxy.Close)
	card, _ := json.Marshal(a2afixture.NewCard(proxy.URL + "/a2a"))
	cards := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write(card) }))
	t.Cleanup(cards.Close)
	const remote = "urn:air:ardgate.test:mcp:remote"
	tg := agentGateway(t, true, agentEntry("urn:air:agents.test:agent:helper", cards.URL+"/card.json"), remoteEntry(remote, upstream(t).URL))
	s := tg.connect(t)
	s.attach("urn:air:agents.test:agent:helper", remote)
	for range 20 { // more than one round of cancellations, 2 s each, within their 5 s
		s.task(s.call("spawn_agent", map[string]any{"agent": "helper", "message": "wait"}))
	}
	c := dialRaw(t, tg, s.c.GetSessionId())
	c.send(c.request(slowBody(9, 30000)))
	tg.waitRunning(t)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_ = tg.g.Drain(ctx)
	start := time.Now()
	shut := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		shut <- tg.h.Shutdown(ctx)
	}()
	_, body := c.response()
	if took := time.Since(start); !strings.Contains(body, `"id":9`) || !strings.Contains(body, `"isError":true`) || took > 3*time.Second {
		t.Errorf("the cut call was answered after %s: %s; want an answer at once", took, trim(body))
	}
	if err := <-shut; err != nil || time.Since(start) > 8*time.Second {
		t.Errorf("the shutdown took %s (%v); want the agent's silence bounded", time.Since(start), err)
	}
}

// Faults: the agent dies mid-task, its card is garbage, its endpoint is
// a forbidden address. Each is a clear error and the session goes on.
func TestAgentFaults(t *testing.T) {
	agent := a2afixture.Start(t)
	garbage := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, `<html>not a card</html>`)
	}))
	defer garbage.Close()
	tg := agentGateway(t, true,
		agentEntry("urn:air:agents.test:agent:helper", agent.URL+"/.well-known/agent-card.json"),
		agentEntry("urn:air:agents.test:agent:garbage", garbage.URL+"/card.json"))
	s := tg.connect(t)

	res := s.call("attach_resource", map[string]any{"urn": "urn:air:agents.test:agent:garbage"})
	if s.code(res) != "not_attachable" || !strings.Contains(firstText(res), "malformed") {
		t.Fatalf("garbage card: %s", firstText(res))
	}
	s.call("attach_resource", map[string]any{"urn": "urn:air:agents.test:agent:helper"})
	v := s.task(s.call("spawn_agent", map[string]any{"message": "wait"}))
	// A wait its client gives up on is no failure of the agent's.
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	req := mcp.CallToolRequest{}
	req.Params.Name, req.Params.Arguments = "wait_task", map[string]any{"task_id": v.TaskID, "timeout_seconds": 30}
	_, _ = s.c.CallTool(ctx, req)
	cancel()
	for deadline := time.Now().Add(5 * time.Second); tg.g.running.Load() > 0; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the wait its client gave up on went on")
		}
	}
	if m := tg.metrics(t); strings.Contains(m, `ardgate_upstream_errors_total{code="upstream_error",urn="urn:air:agents.test:agent:helper"}`) {
		t.Fatal("a wait its client gave up on was counted as the agent's failure")
	}
	agent.Close()
	res = s.call("wait_task", map[string]any{"task_id": v.TaskID, "timeout_seconds": 5})
	if s.code(res) != "upstream_down" || !strings.Contains(firstText(res), "helper") || !strings.Contains(firstText(res), "cannot be reached (dial tcp") {
		t.Fatalf("wait on a dead agent: %s %s", s.code(res), firstText(res))
	}
	res = s.call("spawn_agent", map[string]any{"message": "reply again"})
	if s.code(res) != "upstream_down" || !strings.Contains(firstText(res), "try again once it is back") {
		t.Fatalf("spawn on a dead agent: %s %s", s.code(res), firstText(res))
	}
	if res := s.call("list_tasks", map[string]any{}); res.IsError {
		t.Fatalf("session unusable: %s", firstText(res))
	}
	// Its listing says so at once, not at the next health check.
	if l := string(s.call("list_attached_resources", map[string]any{}).RawStructuredContent); !strings.Contains(l, `"status":"down","why_down":"the last request could not reach it: dial tcp`) {
		t.Fatalf("a dead agent listed as %s", l)
	}

	// With allow_local_urls off, a card whose endpoint is loopback is
	// refused at dial time: here the card itself is fetched from loopback,
	// so that is what the guard stops.
	agent2 := a2afixture.Start(t)
	strict := agentGateway(t, false, agentEntry("urn:air:agents.test:agent:local", agent2.URL+"/.well-known/agent-card.json")).connect(t)
	res = strict.call("attach_resource", map[string]any{"urn": "urn:air:agents.test:agent:local"})
	if strict.code(res) != "refused" || !strings.Contains(firstText(res), "ssrf") {
		t.Fatalf("loopback agent with allow_local_urls off: %s", firstText(res))
	}
}

// An agent that dies while a wait_task follows its task is listed down
// as soon as the wait fails: the wait's error no longer held the dial's,
// and the agent was listed up, and gateway_health counted none down,
// until another request or the health check.
func TestFailedWaitMarksAgentDown(t *testing.T) {
	agent := a2afixture.Start(t)
	tg := agentGateway(t, true, agentEntry("urn:air:agents.test:agent:helper", agent.URL+a2afixture.CardPath))
	s := tg.connect(t)
	if res := s.call("attach_resource", map[string]any{"urn": "urn:air:agents.test:agent:helper"}); res.IsError {
		t.Fatal(firstText(res))
	}
	v := s.task(s.call("spawn_agent", map[string]any{"message": "wait"}))
	waited := make(chan *mcp.CallToolResult, 1)
	go func() { waited <- s.call("wait_task", map[string]any{"task_id": v.TaskID, "timeout_seconds": 10}) }()
	tg.waitRunning(t)
	agent.Close()
	res := <-waited
	if s.code(res) != "upstream_down" {
		t.Fatalf("a wait on an agent that died: %s %s", s.code(res), firstText(res))
	}
	if l := string(s.call("list_attached_resources", map[string]any{}).RawStructuredContent); !strings.Contains(l, `"status":"down","why_down":"the last request could not reach it: dial tcp`) {
		t.Fatalf("after the failed wait, the agent is listed as %s", l)
	}
}

// 200 tasks at once, across 20 sessions, against one agent: all complete,
// and nothing is left running afterwards (goleak, in TestMain).
func TestAgentTasksUnderLoad(t *testing.T) {
	agent := a2afixture.Start(t)
	tg := agentGateway(t, true, agentEntry("urn:air:agents.test:agent:helper", agent.URL+"/.well-known/agent-card.json"))
	const sessions, perSession = 20, 10
	var wg sync.WaitGroup
	errs := make(chan string, sessions*perSession)
	for range sessions {
		s := tg.connect(t)
		if res := s.call("attach_resource", map[string]any{"urn": "urn:air:agents.test:agent:helper"}); res.IsError {
			t.Fatalf("attach: %s", firstText(res))
		}
		for i := range perSession {
			wg.Go(func() {
				msg := "stream 2"
				if i%2 == 1 {
					msg = "reply " + strconv.Itoa(i)
				}
				spawned := s.call("spawn_agent", map[string]any{"message": msg})
				var v taskView
				if spawned.IsError || json.Unmarshal(spawned.RawStructuredContent, &v) != nil {
					errs <- "spawn: " + firstText(spawned)
					return
				}
				done := s.call("wait_task", map[string]any{"task_id": v.TaskID, "timeout_seconds": 30})
				if done.IsError || json.Unmarshal(done.RawStructuredContent, &v) != nil || v.State != "completed" {
					errs <- "wait: " + firstText(done)
				}
			})
		}
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
}

// A task's view shows its parts' text up to a budget, and says what it
// left out: 50 artifacts of 200 parts of 4,000 characters made one
// wait_task answer of 80 MB, which killed a TypeScript client's session.
// A listing's views share a budget, the oldest tasks' parts left out
// first.
func TestTaskViewBudget(t *testing.T) {
	t.Parallel()
	s := helperAttached(t)
	const budget = 256 << 10
	big := s.task(s.call("spawn_agent", map[string]any{"message": "flood 10 50"})) // 2 MB
	res := s.call("wait_task", map[string]any{"task_id": big.TaskID})
	v := s.task(res)
	if v.State != "completed" {
		t.Fatalf("flood: %s %d artifacts", v.State, len(v.Artifacts))
	}
	if n, text := len(res.RawStructuredContent), len(firstText(res)); n > budget+16<<10 || text > budget+16<<10 {
		t.Fatalf("a view of a 2 MB task is %d bytes, and as text %d; want about %d", n, text, budget)
	}
	shown := 0
	for _, a := range v.Artifacts {
		shown += len(a.Parts)
	}
	if ns := v.NotShown; len(v.Artifacts) != 10 || shown != budget/a2afixture.FloodPart || ns == nil || ns.Parts != 500-shown || ns.Artifacts != 9 ||
		ns.Bytes != ns.Parts*a2afixture.FloodPart || !strings.Contains(ns.Note, "the same ones every time") {
		t.Fatalf("the view shows %d parts of %d artifacts, and says of the rest %+v", shown, len(v.Artifacts), ns)
	}

	// Five tasks of 200 KB each, after it: the listing counts their
	// artifacts, and renders none of them (it shows a task's last message
	// alone, and built whole views of each to do so).
	for range 5 {
		v := s.task(s.call("spawn_agent", map[string]any{"message": "flood 1 50"}))
		if v = s.task(s.call("wait_task", map[string]any{"task_id": v.TaskID})); v.State != "completed" || v.NotShown != nil {
			t.Fatalf("a task of 200 KB: %s, not shown %+v", v.State, v.NotShown)
		}
	}
	var list struct {
		Tasks []struct {
			ID        string `json:"task_id"`
			Artifacts int
			NotShown  any `json:"not_shown"`
		}
	}
	res = s.call("list_tasks", map[string]any{})
	if err := json.Unmarshal(res.RawStructuredContent, &list); err != nil || len(list.Tasks) != 6 || len(res.RawStructuredContent) > 8<<10 {
		t.Fatalf("list_tasks (%d bytes): %v %+v", len(res.RawStructuredContent), err, list)
	}
	for i, l := range list.Tasks {
		if want := map[bool]int{true: 10, false: 1}[i == 0]; l.Artifacts != want || l.NotShown != nil {
			t.Fatalf("task %d listed with %d artifacts, not shown %v; want %d, and nothing said of parts it never shows", i, l.Artifacts, l.NotShown, want)
		}
	}
}

// A wait follows the agent's stream from after its first look: an
// artifact the agent made in between reached neither, and the task was
// shown completed without it (TestTaskViewBudget lost one so, under
// load, one run in a few). The view of a task the stream saw settle is
// the agent's own record.
func TestWaitTakesWhatTheStreamMissed(t *testing.T) {
	s := helperAttached(t)
	v := s.task(s.call("spawn_agent", map[string]any{"message": "between"}))
	res := s.call("wait_task", map[string]any{"task_id": v.TaskID, "timeout_seconds": 10})
	v = s.task(res)
	if v.State != "completed" || len(v.Artifacts) != 1 || len(v.Artifacts[0].Parts) != 1 || v.Artifacts[0].Parts[0] != a2afixture.BetweenText {
		t.Fatalf("wait_task: %s with %+v; want completed with the artifact %q", v.State, v.Artifacts, a2afixture.BetweenText)
	}
}

// An agent that stops answering its card is listed down after a health
// check, with the reason.
func TestAgentHealthCheck(t *testing.T) {
	agent := a2afixture.Start(t)
	tg := agentGateway(t, true, agentEntry("urn:air:agents.test:agent:helper", agent.URL+"/.well-known/agent-card.json"))
	s := tg.connect(t)
	s.call("attach_resource", map[string]any{"urn": "urn:air:agents.test:agent:helper"})
	status := func() (string, string) {
		var l struct {
			Attachments []struct {
				Status  string
				WhyDown string `json:"why_down"`
			}
		}
		_ = json.Unmarshal(s.call("list_attached_resources", map[string]any{}).RawStructuredContent, &l)
		return l.Attachments[0].Status, l.Attachments[0].WhyDown
	}
	tg.g.manager.CheckAgents(context.Background())
	if st, why := status(); st != "up" {
		t.Fatalf("healthy agent listed %s: %s", st, why)
	}
	agent.Close()
	tg.g.manager.CheckAgents(context.Background())
	if st, why := status(); st != "down" || !strings.Contains(why, "health check failed") {
		t.Fatalf("dead agent listed %s: %s", st, why)
	}
}

// A round of health checks fetches each card once, for all the sessions
// that attached it, a few cards at a time, and tells each of them what
// it found: 30 sessions that attached one agent sent it 31 requests in
// the same second.
func TestAgentHealthCheckOncePerCard(t *testing.T) {
	agent := a2afixture.Start(t)
	card, _ := json.Marshal(agent.Card)
	var (
		mu             sync.Mutex
		asked          = map[string]int{}
		inFlight, most int
		slow, broken   atomic.Bool
	)
	cards := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		asked[r.URL.Path]++
		inFlight++
		most = max(most, inFlight)
		mu.Unlock()
		if slow.Load() {
			time.Sleep(100 * time.Millisecond)
		}
		mu.Lock()
		inFlight--
		mu.Unlock()
		if broken.Load() && r.URL.Path == "/h0/card.json" {
			http.Error(w, "gone", http.StatusInternalServerError)
			return
		}
		_, _ = w.Write(card)
	}))
	t.Cleanup(cards.Close)
	var entries []registry.Entry
	for i := range 11 {
		entries = append(entries, agentEntry(fmt.Sprint("urn:air:agents.test:agent:h", i), fmt.Sprint(cards.URL, "/h", i, "/card.json")))
	}
	tg := agentGateway(t, true, entries...)
	var sessions []*clientSession
	for i := range 5 { // each attaches h0, and two cards of its own
		s := tg.connect(t)
		for _, h := range []int{0, 2*i + 1, 2*i + 2} {
			if res := s.call("attach_resource", map[string]any{"urn": fmt.Sprint("urn:air:agents.test:agent:h", h)}); res.IsError {
				t.Fatal(firstText(res))
			}
		}
		sessions = append(sessions, s)
	}
	// statuses is each session's agents' statuses, by name.
	statuses := func() (out []map[string]string) {
		for _, s := range sessions {
			var l struct {
				Attachments []struct{ Name, Status string }
			}
			_ = json.Unmarshal(s.call("list_attached_resources", map[string]any{}).RawStructuredContent, &l)
			st := map[string]string{}
			for _, a := range l.Attachments {
				st[a.Name] = a.Status
			}
			out = append(out, st)
		}
		return out
	}
	round := func() map[string]int {
		mu.Lock()
		clear(asked)
		mu.Unlock()
		tg.g.manager.CheckAgents(context.Background())
		mu.Lock()
		defer mu.Unlock()
		return maps.Clone(asked)
	}
	slow.Store(true)
	if got := round(); len(got) != 11 || slices.ContainsFunc(slices.Collect(maps.Values(got)), func(n int) bool { return n != 1 }) || most > 8 {
		t.Fatalf("a round of health checks of 15 attachments of 11 cards asked %v, at most %d at once; want each card once, at most 8 at once", got, most)
	}
	broken.Store(true)
	round()
	for i, st := range statuses() {
		if st["h0"] != "down" || st[fmt.Sprint("h", 2*i+1)] != "up" {
			t.Fatalf("session %d, after h0's card failed, lists %v", i, st)
		}
	}
}

// A configured agent's token goes to that agent's origin only: not to the
// host serving its card elsewhere, nor to another agent.
func TestAgentTokenScope(t *testing.T) {
	var seen sync.Map // host → Authorization
	record := func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			seen.Store(r.Host+" "+r.URL.Path, r.Header.Get("Authorization"))
			next.ServeHTTP(w, r)
		})
	}
	agent := a2afixture.Start(t)
	proxy := httptest.NewServer(record(httputil.NewSingleHostReverseProxy(mustParse(t, agent.URL))))
	defer proxy.Close()
	// The card is served by another host; the endpoint is the proxy.
	card, _ := json.Marshal(a2afixture.NewCard(proxy.URL + "/a2a"))
	cards := httptest.NewServer(record(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write(card) })))
	defer cards.Close()

	tg := agentGateway(t, true, agentEntry("urn:air:agents.test:agent:helper", cards.URL+"/card.json"))
	tg.g.manager.Agents = []config.Agent{{Name: "helper-creds", URL: proxy.URL, Token: "agent-s3cret"}}
	s := tg.connect(t)
	if res := s.call("attach_resource", map[string]any{"urn": "urn:air:agents.test:agent:helper"}); res.IsError {
		t.Fatalf("attach: %s", firstText(res))
	}
	// helper-creds is also attached (pinned); the one from the registry is asked.
	if v := s.task(s.call("spawn_agent", map[string]any{"agent": "helper", "message": "reply x"})); v.State != "completed" {
		t.Fatalf("reply through the proxy: %+v", v)
	}
	sawOnEndpoint, sawOnCards := false, false
	seen.Range(func(k, v any) bool {
		key, auth := k.(string), v.(string)
		if strings.HasPrefix(key, strings.TrimPrefix(proxy.URL, "http://")) && auth == "Bearer agent-s3cret" {
			sawOnEndpoint = true
		}
		if strings.HasPrefix(key, strings.TrimPrefix(cards.URL, "http://")) && auth != "" {
			sawOnCards = true
		}
		return true
	})
	if !sawOnEndpoint || sawOnCards {
		t.Fatalf("token on the agent endpoint %v, on the card host %v", sawOnEndpoint, sawOnCards)
	}
}

func mustParse(t *testing.T, s string) *url.URL {
	u, err := url.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// A context_id names one agent's conversation: given to another agent, it
// is refused, saying whose it is; the agent it is of goes on with it. It
// was passed on, and the other agent began a new conversation under it.
func TestContextOfAnotherAgent(t *testing.T) {
	agent := a2afixture.Start(t)
	card := agent.URL + "/.well-known/agent-card.json"
	tg := agentGateway(t, true, agentEntry("urn:air:agents.test:agent:helper", card), agentEntry("urn:air:agents.test:agent:other", card))
	s := tg.connect(t)
	s.attach("urn:air:agents.test:agent:helper", "urn:air:agents.test:agent:other")
	v := s.task(s.call("spawn_agent", map[string]any{"agent": "helper", "message": "reply one"}))
	if v.ContextID == "" {
		t.Fatalf("no context: %+v", v)
	}
	res := s.call("spawn_agent", map[string]any{"agent": "other", "message": "reply two", "context_id": v.ContextID})
	if s.code(res) != "invalid_arguments" || !strings.Contains(firstText(res), "is a conversation with helper, not other") {
		t.Fatalf("another agent's context: %s %s", s.code(res), firstText(res))
	}
	if again := s.task(s.call("spawn_agent", map[string]any{"agent": "helper", "message": "reply three", "context_id": v.ContextID})); again.ContextID != v.ContextID {
		t.Fatalf("the agent's own context: %+v", again)
	}
}

// A message to a task that is not waiting for input is refused with a
// sentence that says so and what to do, at once: a2a-go's agents answer it
// with a bare internal error, which the gateway took for the race below
// and sent again for three seconds. Two messages at once to a task that
// asks go one after the other: the first answers it, the second is told
// the task has finished, and the task holds one answer.
func TestMessageToBusyTask(t *testing.T) {
	s := helperAttached(t)

	v := s.task(s.call("spawn_agent", map[string]any{"message": "wait"}))
	for deadline := time.Now().Add(5 * time.Second); v.State != "working"; {
		if time.Now().After(deadline) {
			t.Fatalf("the task never worked: %+v", v)
		}
		v = s.task(s.call("wait_task", map[string]any{"task_id": v.TaskID, "timeout_seconds": 0.1}))
	}
	res := s.call("message_task", map[string]any{"task_id": v.TaskID, "message": "are you done?"})
	if s.code(res) != "task_busy" || !strings.Contains(firstText(res), "is working; wait_task until it asks for input") {
		t.Fatalf("a message to a working task: %s %s", s.code(res), firstText(res))
	}
	if v = s.task(s.call("cancel_task", map[string]any{"task_id": v.TaskID})); v.State != "canceled" {
		t.Fatalf("the task after the refused message: %+v", v)
	}

	v = s.task(s.call("spawn_agent", map[string]any{"message": "ask"}))
	v = s.task(s.call("wait_task", map[string]any{"task_id": v.TaskID}))
	if v.State != "input-required" {
		t.Fatalf("ask: %+v", v)
	}
	codes := make(chan string, 2)
	for _, name := range []string{"Ada", "Bob"} {
		go func() {
			codes <- s.code(s.call("message_task", map[string]any{"task_id": v.TaskID, "message": name}))
		}()
	}
	got := []string{<-codes, <-codes}
	slices.Sort(got)
	if !slices.Equal(got, []string{"", "task_finished"}) {
		t.Fatalf("two messages at once: codes %q; want one answered and one told the task has finished", got)
	}
	v = s.task(s.call("wait_task", map[string]any{"task_id": v.TaskID}))
	if c := strings.Join(v.conversation(), " | "); c != "user: ask | agent: what is your name? | user: Ada" && c != "user: ask | agent: what is your name? | user: Bob" {
		t.Fatalf("the conversation: %s", c)
	}
}

// An agent may answer a message to its task with a message, not a task
// update: message_task returns at once with the reply in the task's
// history, the task still asking. The reply was dropped, and the call
// waited out its whole timeout.
func TestAgentAnswersWithAMessage(t *testing.T) {
	s := helperAttached(t)
	v := s.task(s.call("spawn_agent", map[string]any{"message": "intro"}))
	v = s.task(s.call("wait_task", map[string]any{"task_id": v.TaskID}))
	v = s.task(s.call("message_task", map[string]any{"task_id": v.TaskID, "message": "Ann"}))
	if v.State != "input-required" || !v.said(a2afixture.AgeQuestion) {
		t.Fatalf("after the name: %+v", v)
	}
	start := time.Now()
	v = s.task(s.call("message_task", map[string]any{"task_id": v.TaskID, "message": "forty-two", "timeout_seconds": 8}))
	if took := time.Since(start); took > 4*time.Second || v.State != "input-required" {
		t.Fatalf("a message answered with a message: %s after %s", v.State, took)
	}
	want := `user: intro | agent: what is your name? | user: Ann | agent: how old are you (digits)? | user: forty-two | agent: "forty-two" is not a number`
	if c := strings.Join(v.conversation(), " | "); c != want {
		t.Fatalf("the conversation: %s", c)
	}
	if v = s.task(s.call("wait_task", map[string]any{"task_id": v.TaskID, "timeout_seconds": 0})); strings.Join(v.conversation(), " | ") != want {
		t.Fatalf("the conversation, looked at again: %s", strings.Join(v.conversation(), " | "))
	}
	if v = s.task(s.call("message_task", map[string]any{"task_id": v.TaskID, "message": "42"})); v.State != "completed" || !v.said("hello Ann, aged 42") {
		t.Fatalf("after the age: %+v", v)
	}
}

// Two answers sent at once to a task that asks a name, then an age: one
// is sent, as the name, and the other is refused, quoting the question
// the task asks now; it went to the agent as the age ("hello Bea, aged
// Ann"), a question its sender never saw.
func TestTwoAnswersAtOnce(t *testing.T) {
	s := helperAttached(t)
	// The name takes the agent 300 ms: the second message is surely sent
	// while the first is under way (answered at once, the first was over
	// before the second began, 2 runs in 20, and the second rightly sent).
	v := s.task(s.call("spawn_agent", map[string]any{"message": "intro 300"}))
	if v = s.task(s.call("wait_task", map[string]any{"task_id": v.TaskID})); v.State != "input-required" {
		t.Fatalf("intro: %+v", v)
	}
	results := make(chan *mcp.CallToolResult, 2)
	for _, name := range []string{"Ann", "Bea"} {
		args := map[string]any{"task_id": v.TaskID, "message": name}
		go func() { results <- s.call("message_task", args) }()
	}
	var sent string
	refused := 0
	for range 2 {
		res := <-results
		switch code := s.code(res); code {
		case "":
			v = s.task(res)
			if sent = "Ann"; v.said("Bea") {
				sent = "Bea"
			}
		case "answered_meanwhile":
			refused++
			if !strings.Contains(firstText(res), `now asks "`+a2afixture.AgeQuestion+`"`) || !strings.Contains(firstText(res), "answer the new question") {
				t.Errorf("the refusal: %s", firstText(res))
			}
		default:
			t.Fatalf("%s: %s", code, firstText(res))
		}
	}
	want := "user: intro 300 | agent: what is your name? | user: " + sent + " | agent: " + a2afixture.AgeQuestion
	if c := strings.Join(v.conversation(), " | "); refused != 1 || c != want {
		t.Fatalf("%d refused; the conversation: %s", refused, c)
	}
	if v = s.task(s.call("message_task", map[string]any{"task_id": v.TaskID, "message": "42"})); !v.said("hello " + sent + ", aged 42") {
		t.Fatalf("after the age: %+v", v)
	}
}

// Two answers sent at once to a question that the agent answers with a
// message of its own, the task still asking ("forty-two" is not a
// number): the first answered nothing, so the second is sent too. It was
// refused as answered_meanwhile, "wait_task until the task asks again",
// while the task asked the same question all along.
func TestTwoNonAnswersAtOnce(t *testing.T) {
	s := helperAttached(t)
	// Each answer takes the agent 300 ms: the second message is surely
	// sent while the first is under way.
	v := s.task(s.call("spawn_agent", map[string]any{"message": "intro 300"}))
	if v = s.task(s.call("wait_task", map[string]any{"task_id": v.TaskID})); v.State != "input-required" {
		t.Fatalf("intro: %+v", v)
	}
	if v = s.task(s.call("message_task", map[string]any{"task_id": v.TaskID, "message": "Ann"})); v.State != "input-required" {
		t.Fatalf("after the name: %+v", v)
	}
	results := make(chan *mcp.CallToolResult, 2)
	for _, age := range []string{"forty-two", "forty-three"} {
		args := map[string]any{"task_id": v.TaskID, "message": age}
		go func() { results <- s.call("message_task", args) }()
	}
	for range 2 {
		if res := <-results; res.IsError {
			t.Fatalf("%s: %s", s.code(res), firstText(res))
		}
	}
	v = s.task(s.call("wait_task", map[string]any{"task_id": v.TaskID, "timeout_seconds": 0}))
	for _, age := range []string{"forty-two", "forty-three"} {
		if !v.said(fmt.Sprintf("%q is not a number", age)) {
			t.Fatalf("the agent never answered %q: %s", age, strings.Join(v.conversation(), " | "))
		}
	}
	if v = s.task(s.call("message_task", map[string]any{"task_id": v.TaskID, "message": "42"})); !v.said("hello Ann, aged 42") {
		t.Fatalf("after the age: %+v", v)
	}
}

// An agent's inline image comes as image content after the task's view,
// which says where it went; a file of another type is described as
// before. wait_task said "11 bytes inline, not shown", and no tool gave
// the bytes.
func TestTaskImageGiven(t *testing.T) {
	s := helperAttached(t)
	v := s.task(s.call("spawn_agent", map[string]any{"message": "chart"}))
	res := s.call("wait_task", map[string]any{"task_id": v.TaskID})
	if v = s.task(res); v.State != "completed" || len(v.Artifacts) != 1 || len(v.Artifacts[0].Parts) != 3 {
		t.Fatalf("chart: %+v", v)
	}
	parts := v.Artifacts[0].Parts
	if !strings.Contains(parts[1], `[file "chart.png" (image/png), 70 bytes inline: given after this view, as the result's media 1]`) ||
		!strings.Contains(parts[2], `[file "report.pdf" (application/pdf), 9 bytes inline, not shown]`) {
		t.Fatalf("the artifact's parts: %q", parts)
	}
	if len(res.Content) != 2 {
		t.Fatalf("%d content items, want the view and the image", len(res.Content))
	}
	if img, ok := res.Content[1].(mcp.ImageContent); !ok || img.MIMEType != "image/png" || img.Data != a2afixture.ChartPNG {
		t.Fatalf("the image content: %#v", res.Content[1])
	}
	// A listing gives none.
	if res := s.call("list_tasks", map[string]any{}); len(res.Content) != 1 {
		t.Fatalf("list_tasks gave %d content items", len(res.Content))
	}
}

// helperAttached is a session with the a2a-go fixture agent attached as
// "helper".
func helperAttached(t *testing.T) *clientSession {
	t.Helper()
	s, _ := helperAgent(t)
	return s
}

// helperAgent is helperAttached, with the agent.
func helperAgent(t *testing.T) (*clientSession, *a2afixture.Agent) {
	t.Helper()
	agent := a2afixture.Start(t)
	s := agentGateway(t, true, agentEntry("urn:air:agents.test:agent:helper", agent.URL+"/.well-known/agent-card.json")).connect(t)
	if res := s.call("attach_resource", map[string]any{"urn": "urn:air:agents.test:agent:helper"}); res.IsError {
		t.Fatal(firstText(res))
	}
	return s, agent
}

// awaitAtAgent waits until agent says task id is in state. It asks the
// agent itself, past the gateway, whose view of the task is left as it
// was.
func awaitAtAgent(t *testing.T, agent *a2afixture.Agent, id string, state a2a.TaskState) {
	t.Helper()
	direct, err := a2aclient.NewFromCard(t.Context(), agent.Card, a2aclient.WithDefaultsDisabled(), a2aclient.WithJSONRPCTransport(agent.HTTPClient()))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = direct.Destroy() }()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		task, err := direct.GetTask(t.Context(), &a2a.TaskQueryParams{ID: a2a.TaskID(id)})
		if err == nil && task.Status.State == state {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("task %s at the agent is %v (%v) after 10 s, want %s", id, task, err, state)
		}
	}
}

// A message_task right after spawn_agent, with no wait_task between,
// answers a task the gateway last saw "submitted" that has asked since: the
// question still reads before the answer (the agent's own history puts it
// after). spawn_agent may also come back with the question already asked;
// the test takes the spawns that came back "submitted".
func TestMessageRightAfterSpawn(t *testing.T) {
	s, agent := helperAgent(t)
	seen := 0
	for try := 0; seen < 3 && try < 40; try++ {
		v := s.task(s.call("spawn_agent", map[string]any{"message": "ask"}))
		if v.State != "submitted" {
			continue
		}
		seen++
		awaitAtAgent(t, agent, v.TaskID, a2a.TaskStateInputRequired) // it asks meanwhile
		v = s.task(s.call("message_task", map[string]any{"task_id": v.TaskID, "message": "Bob"}))
		if c := strings.Join(v.conversation(), " | "); c != "user: ask | agent: what is your name? | user: Bob | agent: hello Bob" &&
			c != "user: ask | agent: what is your name? | user: Bob" {
			t.Fatalf("the conversation after a message right after spawn_agent: %s (state %s)", c, v.State)
		}
	}
	if seen == 0 {
		t.Fatal("no spawn_agent of 40 came back submitted")
	}
}

// An agent on a2a-go refuses, with an internal error, a reply that comes
// while the turn that asked for it is still winding down (its
// ErrExecutionInProgress, a2aproject/a2a-go#303): message_task sends it
// again after a moment, and the task goes on.
func TestAgentReplyWhileWindingDown(t *testing.T) {
	agent := a2afixture.Start(t)
	tg := agentGateway(t, true, agentEntry("urn:air:agents.test:agent:helper", agent.URL+a2afixture.CardPath))
	s := tg.connect(t)
	if res := s.call("attach_resource", map[string]any{"urn": "urn:air:agents.test:agent:helper"}); res.IsError {
		t.Fatalf("attach agent: %s", firstText(res))
	}
	v := s.task(s.call("spawn_agent", map[string]any{"message": "ask 300"}))
	v = s.task(s.call("wait_task", map[string]any{"task_id": v.TaskID}))
	if v.State != "input-required" {
		t.Fatalf("ask: %+v", v)
	}
	v = s.task(s.call("message_task", map[string]any{"task_id": v.TaskID, "message": "Ada"}))
	if v.State != "completed" || !v.said("hello Ada") {
		t.Fatalf("a reply while the agent winds down its turn: %+v", v)
	}
}

// An agent whose answer has no end is cut off at the message cap, with a
// sentence, instead of filling the gateway's memory; the session goes on.
func TestAgentAnswerWithoutEnd(t *testing.T) {
	const flood = 64 << 20
	var sent atomic.Int64
	mux := http.NewServeMux()
	agent := httptest.NewServer(mux)
	t.Cleanup(agent.Close)
	mux.Handle(a2afixture.CardPath, a2asrv.NewStaticAgentCardHandler(a2afixture.NewCard(agent.URL+a2afixture.RPCPath)))
	mux.HandleFunc(a2afixture.RPCPath, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"jsonrpc":"2.0","id":1,"result":{"kind":"message","messageId":"m","role":"agent","parts":[{"kind":"text","text":"`)
		chunk := []byte(strings.Repeat("x", 64<<10))
		for sent.Load() < flood {
			if _, err := w.Write(chunk); err != nil {
				return
			}
			sent.Add(int64(len(chunk)))
		}
	})
	tg := agentGateway(t, true, agentEntry("urn:air:agents.test:agent:endless", agent.URL+a2afixture.CardPath))
	s := tg.connect(t)
	if res := s.call("attach_resource", map[string]any{"urn": "urn:air:agents.test:agent:endless"}); res.IsError {
		t.Fatalf("attach agent: %s", firstText(res))
	}
	res := s.call("spawn_agent", map[string]any{"agent": "endless", "message": "hello"})
	if !res.IsError || !strings.Contains(firstText(res), "larger than the 10 MiB cap") {
		t.Errorf("spawn on an agent answering without end: %s", firstText(res))
	}
	if n := sent.Load(); n >= flood {
		t.Errorf("the gateway read all %d MiB of the answer", n>>20)
	}
	if res := s.call("list_attached_resources", map[string]any{}); res.IsError {
		t.Errorf("the session after: %s", firstText(res))
	}
}

// An agent that never answers a request holds no tool call past the call
// timeout: spawn_agent, message_task and cancel_task each end with
// timeout, saying which agent and what it did not answer, and the session
// goes on. They waited for good (a call was seen open after six minutes).
func TestAgentNeverAnswers(t *testing.T) {
	mux := http.NewServeMux()
	agent := httptest.NewServer(mux)
	t.Cleanup(agent.Close)
	mux.Handle(a2afixture.CardPath, a2asrv.NewStaticAgentCardHandler(a2afixture.NewCard(agent.URL+a2afixture.RPCPath)))
	// It answers a message with a working task, except a message saying
	// "hang", and never answers a cancellation.
	mux.HandleFunc(a2afixture.RPCPath, func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		body, _ := io.ReadAll(r.Body)
		_ = json.Unmarshal(body, &req)
		if req.Method == "tasks/cancel" || strings.Contains(string(body), "hang") {
			<-r.Context().Done()
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"kind":"task","id":"t1","contextId":"c1","status":{"state":"working"}}}`, req.ID)
	})
	tg := agentGatewayWith(t, true, 300*time.Millisecond, agentEntry("urn:air:agents.test:agent:stuck", agent.URL+a2afixture.CardPath))
	s := tg.connect(t)
	if res := s.call("attach_resource", map[string]any{"urn": "urn:air:agents.test:agent:stuck"}); res.IsError {
		t.Fatalf("attach agent: %s", firstText(res))
	}
	timedOut := func(what string, res *mcp.CallToolResult, says string) {
		t.Helper()
		if s.code(res) != "timeout" || !strings.Contains(firstText(res), "stuck did not answer "+says+" within 300ms") {
			t.Errorf("%s: %s %s", what, s.code(res), firstText(res))
		}
	}
	timedOut("spawn", s.call("spawn_agent", map[string]any{"message": "hang"}), "the message")
	v := s.task(s.call("spawn_agent", map[string]any{"message": "work"}))
	timedOut("message_task", s.call("message_task", map[string]any{"task_id": v.TaskID, "message": "hang on"}), "the message")
	timedOut("cancel_task", s.call("cancel_task", map[string]any{"task_id": v.TaskID}), "the cancellation")
	if res := s.call("list_tasks", map[string]any{}); res.IsError {
		t.Fatalf("the session after: %s", firstText(res))
	}
}

// Detaching an agent cancels the session's tasks still running at it:
// once detached, nothing could, and they ran on at the agent for good.
// Tasks at another agent go on.
func TestDetachCancelsAgentTasks(t *testing.T) {
	agent, other := a2afixture.Start(t), a2afixture.Start(t)
	tg := agentGateway(t, true,
		agentEntry("urn:air:agents.test:agent:helper", agent.URL+a2afixture.CardPath),
		agentEntry("urn:air:agents.test:agent:other", other.URL+a2afixture.CardPath))
	s := tg.connect(t)
	s.attach("urn:air:agents.test:agent:helper", "urn:air:agents.test:agent:other")
	var ids []string
	for range 2 {
		ids = append(ids, s.task(s.call("spawn_agent", map[string]any{"agent": "helper", "message": "wait"})).TaskID)
	}
	done := s.task(s.call("spawn_agent", map[string]any{"agent": "helper", "message": "reply done"}))
	elsewhere := s.task(s.call("spawn_agent", map[string]any{"agent": "other", "message": "wait"}))

	res := s.call("detach_resource", map[string]any{"name": "helper"})
	var out struct {
		Status    string
		Cancelled int `json:"tasks_cancelled"`
	}
	if err := json.Unmarshal(res.RawStructuredContent, &out); err != nil || res.IsError || out.Status != "detached" || out.Cancelled != 2 {
		t.Fatalf("detach: %s", firstText(res))
	}
	at := func(a *a2afixture.Agent, id string) a2a.TaskState {
		t.Helper()
		card, err := agentcard.NewResolver(a.HTTPClient()).Resolve(t.Context(), a.URL)
		if err != nil {
			t.Fatal(err)
		}
		c, err := a2aclient.NewFromCard(t.Context(), card, a2aclient.WithJSONRPCTransport(a.HTTPClient()))
		if err != nil {
			t.Fatal(err)
		}
		defer c.Destroy()
		task, err := c.GetTask(t.Context(), &a2a.TaskQueryParams{ID: a2a.TaskID(id)})
		if err != nil {
			t.Fatalf("task %s at the agent: %v", id, err)
		}
		return task.Status.State
	}
	for _, id := range ids {
		if st := at(agent, id); st != a2a.TaskStateCanceled {
			t.Errorf("task %s at the detached agent: %s", id, st)
		}
	}
	if l := firstText(s.call("list_tasks", map[string]any{})); strings.Count(l, `"state":"canceled"`) != 2 {
		t.Errorf("list_tasks after the detach: %s", l)
	}
	// A message to one says to attach the agent again: spawn_agent on it,
	// as the sentence said, was refused.
	if res := s.call("message_task", map[string]any{"task_id": ids[0], "message": "go on"}); !res.IsError || !strings.Contains(firstText(res), "its agent helper is detached: attach it again to start a new one") {
		t.Errorf("message_task to a task of a detached agent: %s", firstText(res))
	}
	// Attached again (under another name), the agent is named, and the
	// spawn the sentence gives goes on in the task's conversation: it
	// still said to attach the agent, which attach_resource then said
	// was attached already.
	if res := s.call("attach_resource", map[string]any{"urn": "urn:air:agents.test:agent:helper", "name": "helper2"}); res.IsError {
		t.Fatalf("attach again: %s", firstText(res))
	}
	gone := s.task(s.call("wait_task", map[string]any{"task_id": ids[0], "timeout_seconds": 0}))
	res = s.call("message_task", map[string]any{"task_id": ids[0], "message": "go on"})
	if want := "is attached again, as helper2: start a new one with spawn_agent on helper2 and context_id " + gone.ContextID; !res.IsError || !strings.Contains(firstText(res), want) {
		t.Errorf("message_task to a task of an agent attached again: %s; want %q", firstText(res), want)
	}
	if v := s.task(s.call("spawn_agent", map[string]any{"agent": "helper2", "message": "reply again", "context_id": gone.ContextID})); v.ContextID != gone.ContextID {
		t.Errorf("spawn_agent as told: context %q, want %q", v.ContextID, gone.ContextID)
	}
	if !done.Final {
		t.Errorf("a direct reply is not final: %+v", done)
	}
	if st := at(other, elsewhere.TaskID); st != a2a.TaskStateWorking {
		t.Errorf("the other agent's task: %s", st)
	}
	if res := s.call("cancel_task", map[string]any{"task_id": elsewhere.TaskID}); res.IsError {
		t.Errorf("cancel at the other agent: %s", firstText(res))
	}
}

// The task tools refuse what they cannot do with invalid_arguments saying
// what is wrong, before anything goes to an agent, and a message to a task
// that takes none with task_finished. A missing task_id was "no such task
// in this session: """, a timeout out of the schema's bounds was taken in
// silence (-1 waited not at all, 1e9 five minutes), a message of spaces
// went to the agent, a float was "float64", and a finished task's refusal
// was an upstream_error, though no agent was asked.
func TestTaskToolArguments(t *testing.T) {
	agent := a2afixture.Start(t)
	s := agentGateway(t, true, agentEntry("urn:air:agents.test:agent:helper", agent.URL+a2afixture.CardPath),
		remoteEntry("urn:air:ardgate.test:mcp:remote", upstream(t).URL)).connect(t)
	s.attach("urn:air:agents.test:agent:helper", "urn:air:ardgate.test:mcp:remote")
	done := s.task(s.call("spawn_agent", map[string]any{"agent": "helper", "message": "reply hi"}))
	for _, tc := range []struct {
		tool string
		args map[string]any
		code string
		says string
	}{
		{"wait_task", map[string]any{}, "invalid_arguments", `"task_id" is required`},
		{"cancel_task", map[string]any{}, "invalid_arguments", `"task_id" is required`},
		{"wait_task", map[string]any{"task_id": done.TaskID, "timeout_seconds": -1}, "invalid_arguments", "between 0 and 300"},
		{"wait_task", map[string]any{"task_id": done.TaskID, "timeout_seconds": 301}, "invalid_arguments", "between 0 and 300"},
		{"wait_task", map[string]any{"task_id": done.TaskID, "timeout_seconds": "5"}, "invalid_arguments", `"timeout_seconds" must be a number, not string`},
		{"wait_task", map[string]any{"task_id": done.TaskID, "message": "hi"}, "invalid_arguments", "use message_task"},
		{"message_task", map[string]any{"task_id": done.TaskID, "message": "  \n"}, "invalid_arguments", `"message" is required`},
		{"spawn_agent", map[string]any{"message": " "}, "invalid_arguments", `"message" is required`},
		{"message_task", map[string]any{"task_id": done.TaskID, "message": "more"}, "task_finished", "start a new one with spawn_agent"},
		{"spawn_agent", map[string]any{"agent": "remote", "message": "hi"}, "unknown_agent", "remote is an MCP server, not an A2A agent: call its tools, named mcp_remote__<tool>"},
		{"cancel_task", map[string]any{"task_id": done.TaskID}, "", "the task had already ended: nothing was cancelled"},
		// A whole number however written: 2.0 was refused, "must be an
		// integer, not number 2.0", in list_tasks, tool_search and
		// discover_resources, while timeout_seconds took 5.0.
		{"list_tasks", map[string]any{"limit": json.Number("1.0")}, "", `"count":1`},
		{"list_tasks", map[string]any{"limit": json.Number("1e0")}, "", `"count":1`},
		{"tool_search", map[string]any{"query": "echo", "limit": json.Number("2.0")}, "", `"tools"`},
		{"discover_resources", map[string]any{"text": "echo", "page_size": json.Number("2.0")}, "", `"results"`},
		{"list_tasks", map[string]any{"limit": json.Number("1.5")}, "invalid_arguments", `argument "limit" must be an integer, not number 1.5`},
		{"list_tasks", map[string]any{"limit": "1"}, "invalid_arguments", `argument "limit" must be an integer, not string`},
		{"discover_resources", map[string]any{"text": "echo", "page_size": json.Number("1e12")}, "invalid_arguments", `"page_size" must be between 1 and`},
	} {
		res := s.call(tc.tool, tc.args)
		if s.code(res) != tc.code || !strings.Contains(firstText(res), tc.says) {
			t.Errorf("%s %v: %s %q; want %s saying %q", tc.tool, tc.args, s.code(res), firstText(res), tc.code, tc.says)
		}
	}
	if v := s.task(s.call("wait_task", map[string]any{"task_id": done.TaskID, "timeout_seconds": 0})); !v.Final {
		t.Errorf("a wait of 0 s on a finished task: %+v", v)
	}
}

// list_tasks, and wait_task with a timeout of 0, tell a task's state as
// its agent tells it now: they told the state last seen, and a task
// nobody waited on never finished in them. list_tasks lists the newest
// limit tasks, each with its last message, not its whole view.
func TestTaskStatesFresh(t *testing.T) {
	s, agent := helperAgent(t)
	var ids []string
	for _, m := range []string{"slow 200", "fail", "reply done"} {
		ids = append(ids, s.task(s.call("spawn_agent", map[string]any{"message": m})).TaskID)
	}
	// The first two end at the agent (the third is its reply, a message);
	// nobody waits on them.
	awaitAtAgent(t, agent, ids[0], a2a.TaskStateCompleted)
	awaitAtAgent(t, agent, ids[1], a2a.TaskStateFailed)
	var list struct {
		Count, Shown int
		Tasks        []struct {
			State       string
			Final       bool
			LastMessage *struct{ Role, Text string } `json:"last_message"`
		}
	}
	if err := json.Unmarshal(s.call("list_tasks", map[string]any{}).RawStructuredContent, &list); err != nil {
		t.Fatal(err)
	}
	var states []string
	for _, tk := range list.Tasks {
		states = append(states, tk.State)
	}
	if list.Count != 3 || !slices.Equal(states, []string{"completed", "failed", "completed"}) || list.Tasks[1].LastMessage == nil ||
		!strings.Contains(list.Tasks[1].LastMessage.Text, "the fixture failed as asked") {
		t.Fatalf("list_tasks after the tasks ended: %+v", list)
	}
	v := s.task(s.call("spawn_agent", map[string]any{"message": "fail"}))
	awaitAtAgent(t, agent, v.TaskID, a2a.TaskStateFailed)
	if v = s.task(s.call("wait_task", map[string]any{"task_id": v.TaskID, "timeout_seconds": 0})); v.State != "failed" {
		t.Fatalf("wait_task with 0 after the task failed: %+v", v)
	}
	list.Tasks = nil
	if err := json.Unmarshal(s.call("list_tasks", map[string]any{"limit": 2}).RawStructuredContent, &list); err != nil || list.Count != 4 || list.Shown != 2 ||
		list.Tasks[0].State != "completed" || list.Tasks[1].State != "failed" {
		t.Fatalf("list_tasks with limit 2: %+v %v", list, err)
	}
}

// A message to a task that has ended is task_finished, whatever the
// gateway last saw: one answered with a wait of 0 and messaged again (the
// agent's "task in a terminal state" came back as upstream_error), and
// one its agent's detach ended (it said upstream_down).
func TestMessageToEndedTask(t *testing.T) {
	s, agent := helperAgent(t)
	for range 5 {
		v := s.task(s.call("spawn_agent", map[string]any{"message": "ask"}))
		v = s.task(s.call("wait_task", map[string]any{"task_id": v.TaskID, "timeout_seconds": 5}))
		if v.State != "input-required" {
			t.Fatalf("ask: %+v", v)
		}
		s.task(s.call("message_task", map[string]any{"task_id": v.TaskID, "message": "Zed", "timeout_seconds": 0}))
		awaitAtAgent(t, agent, v.TaskID, a2a.TaskStateCompleted) // it has answered
		res := s.call("message_task", map[string]any{"task_id": v.TaskID, "message": "Zed again", "timeout_seconds": 0})
		if s.code(res) != "task_finished" {
			t.Fatalf("a second answer: %s %s", s.code(res), firstText(res))
		}
	}
	v := s.task(s.call("spawn_agent", map[string]any{"message": "wait"}))
	s.call("detach_resource", map[string]any{"name": "helper"})
	if res := s.call("message_task", map[string]any{"task_id": v.TaskID, "message": "still there?"}); s.code(res) != "task_finished" {
		t.Fatalf("a message to a task its agent's detach ended: %s %s", s.code(res), firstText(res))
	}
}

// A wait on a task ends when the gateway starts to drain, saying so: it
// holds no work of its own, and held the drain, and the exit, for its
// whole timeout (and the exit status said calls were cut).
func TestDrainEndsWaits(t *testing.T) {
	agent := a2afixture.Start(t)
	tg := agentGateway(t, true, agentEntry("urn:air:agents.test:agent:helper", agent.URL+"/.well-known/agent-card.json"))
	s := tg.connect(t)
	if res := s.call("attach_resource", map[string]any{"urn": "urn:air:agents.test:agent:helper"}); res.IsError {
		t.Fatal(firstText(res))
	}
	v := s.task(s.call("spawn_agent", map[string]any{"message": "wait"}))
	waited := make(chan *mcp.CallToolResult, 1)
	go func() { waited <- s.call("wait_task", map[string]any{"task_id": v.TaskID, "timeout_seconds": 60}) }()
	tg.waitRunning(t) // it waits
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := tg.g.Drain(ctx); err != nil {
		t.Fatalf("drain: %v", err)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Fatalf("the drain took %s", took)
	}
	res := <-waited
	if s.code(res) != "shutting_down" || !strings.Contains(firstText(res), "it stopped waiting on task "+v.TaskID) {
		t.Fatalf("the wait at the drain: %s %s", s.code(res), firstText(res))
	}
}

// spawn_agent's metadata goes to the agent with the message, as
// McpAgenticServer's clients choose a provider with it
// (../shared/seeds/mcp-agentic-server.txt, "metadata.provider"); metadata
// that is no object is refused before anything is sent.
func TestSpawnMetadata(t *testing.T) {
	t.Parallel()
	agent := a2afixture.Start(t)
	var sent atomic.Value
	proxied := httputil.NewSingleHostReverseProxy(mustParse(t, agent.URL))
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		if bytes.Contains(body, []byte(`"message/send"`)) {
			sent.Store(string(body))
		}
		proxied.ServeHTTP(w, r)
	}))
	t.Cleanup(proxy.Close)
	card, _ := json.Marshal(a2afixture.NewCard(proxy.URL + "/a2a"))
	cards := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write(card) }))
	t.Cleanup(cards.Close)
	s := agentGateway(t, true, agentEntry("urn:air:agents.test:agent:helper", cards.URL+"/card.json")).connect(t)
	s.call("attach_resource", map[string]any{"urn": "urn:air:agents.test:agent:helper"})

	if res := s.call("spawn_agent", map[string]any{"message": "reply hi", "metadata": "anthropic"}); s.code(res) != "invalid_arguments" || sent.Load() != nil {
		t.Fatalf("metadata that is no object: %s %s (sent %v)", s.code(res), firstText(res), sent.Load())
	}
	res := s.call("spawn_agent", map[string]any{"message": "reply hi", "metadata": map[string]any{"provider": "anthropic"}})
	if res.IsError {
		t.Fatalf("spawn: %s", firstText(res))
	}
	var body struct {
		Params struct {
			Message struct{ Metadata map[string]any }
		}
	}
	raw, _ := sent.Load().(string)
	if err := json.Unmarshal([]byte(raw), &body); err != nil || body.Params.Message.Metadata["provider"] != "anthropic" {
		t.Fatalf("the agent got %s (%v)", raw, err)
	}
}
