// Package a2afixture is a small, real A2A (protocol 0.3.0) agent used as an
// upstream in ardgate's tests. It is built on github.com/a2aproject/a2a-go
// (a2asrv) and served in-process by an httptest server; [Start] returns the
// running [Agent] in a test, [Serve] outside one.
//
// HTTP surface (see [Agent]):
//
//   - GET  {URL}/.well-known/agent-card.json: the agent card, served by
//     a2asrv.NewStaticAgentCardHandler. card.url is {URL}/a2a,
//     preferredTransport "JSONRPC", capabilities.streaming true.
//   - POST {URL}/a2a: the JSON-RPC endpoint (a2asrv.NewJSONRPCHandler):
//     message/send, message/stream, tasks/get, tasks/cancel,
//     tasks/resubscribe. Push notifications are not supported.
//
// One executor serves every test case. It picks its behaviour from the first
// word of the user message's text parts (case-insensitive):
//
//   - "reply <text>": answers at once with a Message (no task) whose only
//     part is the text "echo: <text>".
//   - "stream <n>" (n defaults to 3, at most 1000): a Task (submitted), n
//     status updates in state working with the text "step i of n",
//     [StepInterval] apart, an artifact named "result" with a text part
//     "done after n steps" and a data part {"steps": n}, then a final
//     status update in state completed.
//   - "ask [ms]": a Task (submitted), then a final status update in state
//     input-required with the text "what is your name?". A follow-up message
//     carrying that task's taskId (and contextId) is taken as the name: the
//     task then gets an artifact "result" with the text "hello <name>" and
//     a final status update in state completed. With ms, a2asrv's teardown
//     of the turn that asked takes that long longer (its event queue's
//     Destroy waits), and it refuses a follow-up meanwhile with an internal
//     error: the race of a2aproject/a2a-go#303 (ErrExecutionInProgress),
//     made wide.
//   - "intro [ms]": a Task (submitted), then a final status update in state
//     input-required asking [AskQuestion]. The name it is answered brings,
//     ms later (0 by default), a second question, [AgeQuestion]; an answer to that in digits ends
//     the task with an artifact "result", "hello <name>, aged <age>", in
//     state completed, and any other is answered with a Message, ms later,
//     `"<answer>" is not a number`, the task still asking.
//   - "flood <artifacts> <parts>" (at most 1000 and 200): a Task
//     (submitted), then that many artifacts, named "flood i", of that many
//     text parts of [FloodPart] characters each, then a final status
//     update in state completed.
//   - "between": a Task (submitted) and a status update in state working;
//     once the agent has answered a tasks/get of the task, an artifact
//     "result" with the text [BetweenText]; once a tasks/resubscribe of it
//     has come in, [BetweenPause] later, a final status update in state
//     completed. A client that looks at the task, then joins its stream,
//     is told of the artifact by neither.
//   - "wait": a Task (submitted), then a status update in state working with
//     the text "waiting (tick i)" every [WaitInterval] until the task is
//     cancelled (tasks/cancel), which ends it in state canceled.
//   - "fail": a Task (submitted), then a final status update in state failed
//     with the text "the fixture failed as asked".
//   - "slow <ms>" (ms defaults to 500, at most 10 minutes): a Task
//     (submitted), a working status update "sleeping <ms>ms", and after ms
//     milliseconds an artifact "result" with the text "slept <ms>ms" and a
//     final status update in state completed.
//
// Any other first word (or a bad number) makes the request fail with the
// JSON-RPC error -32602 "invalid params" (errors.Is(err,
// a2a.ErrInvalidParams) on the a2a-go client side).
//
// tasks/cancel works on any task that is not in a terminal state: the
// executor answers with a final status update in state canceled carrying the
// text "canceled as asked", and a2asrv then cancels the running execution's
// context.
//
// Every execution honours its context. a2asrv runs executions in a context
// detached from the HTTP request, so a blocking or streaming "wait" outlives
// its client; [Agent.Close] (registered with t.Cleanup by [Start]) stops
// every running execution, waits for a2asrv to tear it down, then closes the
// server, so no goroutine outlives the agent.
package a2afixture

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode"

	"github.com/a2aproject/a2a-go/a2a"
	"github.com/a2aproject/a2a-go/a2asrv"
	"github.com/a2aproject/a2a-go/a2asrv/eventqueue"
)

const (
	// RPCPath is the path of the JSON-RPC endpoint; card.url is URL+RPCPath.
	RPCPath = "/a2a"
	// CardPath is the path the agent card is served at.
	CardPath = a2asrv.WellKnownAgentCardPath
	// ProtocolVersion is the A2A protocol version on the card.
	ProtocolVersion = "0.3.0"
	// Version is the agent version on the card.
	Version = "1.0.0"

	// StepInterval is the pause after each "stream" status update.
	StepInterval = 30 * time.Millisecond
	// WaitInterval is how often "wait" emits a working status update.
	WaitInterval = 100 * time.Millisecond
	// BetweenText is the text of the artifact "between" makes between a
	// look and a resubscription.
	BetweenText = "said between a look and a subscription"
	// BetweenPause is how long "between" gives a resubscription to be
	// joined before it ends the task.
	BetweenPause = 100 * time.Millisecond
	// FloodPart is the length of each text part "flood" sends.
	FloodPart = 4000

	// Texts the executor produces.
	AskQuestion = "what is your name?"
	AgeQuestion = "how old are you (digits)?"
	FailMessage = "the fixture failed as asked"
	CancelText  = "canceled as asked"

	defaultStreamSteps = 3
	maxStreamSteps     = 1000
	maxFloodArtifacts  = 1000
	maxFloodParts      = 200
	defaultSlowMS      = 500
	maxSlowMS          = 10 * 60 * 1000
	closeTimeout       = 10 * time.Second
)

// errShuttingDown is the cause of executions stopped by Agent.Close.
var errShuttingDown = errors.New("a2afixture: agent is shutting down")

// Agent is a running fixture agent.
type Agent struct {
	// URL is the httptest server's base URL (http://127.0.0.1:port), where
	// the card is served at CardPath.
	URL string
	// Card is the card served at URL+CardPath. Card.URL is URL+RPCPath.
	Card *a2a.AgentCard

	stuck  func(n int) // told of executions still running after Close; nil: nobody
	srv    *httptest.Server
	exec   *executor
	queues *trackedQueues
	once   sync.Once
}

// Start serves a new agent on a loopback httptest server and registers
// Close with tb.Cleanup; executions still running after Close fail tb.
func Start(tb testing.TB) *Agent {
	tb.Helper()
	a := Serve()
	a.stuck = func(n int) { tb.Errorf("a2afixture: %d executions still running %v after Close", n, closeTimeout) }
	tb.Cleanup(a.Close)
	return a
}

// Serve serves a new agent on a loopback httptest server, outside a test
// (the bench runs it); the caller must Close it.
func Serve() *Agent {
	stop, cancel := context.WithCancel(context.Background())
	queues := &trackedQueues{Manager: eventqueue.NewInMemoryManager(), live: map[a2a.TaskID]struct{}{}, linger: map[a2a.TaskID]time.Duration{}}
	exec := &executor{stop: stop, cancelStop: cancel, queues: queues, requests: &requests{}}
	handler := a2asrv.NewHandler(exec,
		a2asrv.WithEventQueueManager(queues),
		a2asrv.WithLogger(slog.New(slog.DiscardHandler)),
	)

	mux := http.NewServeMux()
	srv := httptest.NewServer(mux)
	card := NewCard(srv.URL + RPCPath)
	mux.Handle(CardPath, a2asrv.NewStaticAgentCardHandler(card))
	mux.Handle(RPCPath, exec.requests.watch(a2asrv.NewJSONRPCHandler(handler)))
	return &Agent{URL: srv.URL, Card: card, srv: srv, exec: exec, queues: queues}
}

// HTTPClient returns the httptest server's client. Its idle connections are
// closed by Close, so using it (for example with
// a2aclient.WithJSONRPCTransport) keeps goleak quiet.
func (a *Agent) HTTPClient() *http.Client { return a.srv.Client() }

// Close stops every running execution (a task still running ends with a
// JSON-RPC internal error for its blocking or streaming caller, and stays in
// its last state in the task store), waits until a2asrv has torn them all
// down, and closes the server. It is safe to call more than once.
func (a *Agent) Close() {
	a.once.Do(func() {
		a.exec.shutdown()
		deadline := time.Now().Add(closeTimeout)
		for a.queues.count() > 0 {
			if time.Now().After(deadline) {
				if a.stuck != nil {
					a.stuck(a.queues.count())
				}
				break
			}
			time.Sleep(2 * time.Millisecond)
		}
		a.srv.Close()
	})
}

// NewCard returns the fixture's agent card with its JSON-RPC endpoint at
// rpcURL.
func NewCard(rpcURL string) *a2a.AgentCard {
	return &a2a.AgentCard{
		Name:               "a2afixture",
		Description:        "Test agent: the first word of the message picks the behaviour (reply, stream, ask, wait, fail, slow).",
		URL:                rpcURL,
		PreferredTransport: a2a.TransportProtocolJSONRPC,
		AdditionalInterfaces: []a2a.AgentInterface{
			{Transport: a2a.TransportProtocolJSONRPC, URL: rpcURL},
		},
		ProtocolVersion:    ProtocolVersion,
		Version:            Version,
		Capabilities:       a2a.AgentCapabilities{Streaming: true},
		DefaultInputModes:  []string{"text/plain"},
		DefaultOutputModes: []string{"text/plain", "application/json"},
		Skills: []a2a.AgentSkill{
			{
				ID:          "reply",
				Name:        "Reply",
				Description: "Answers at once with a message (no task) echoing the text after the first word.",
				Tags:        []string{"echo"},
				Examples:    []string{"reply hello"},
			},
			{
				ID:          "stream",
				Name:        "Stream",
				Description: "Runs a task that reports n progress steps, then returns a text and data artifact.",
				Tags:        []string{"progress", "code-analysis"},
				Examples:    []string{"stream 3"},
				OutputModes: []string{"text/plain", "application/json"},
			},
			{
				ID:          "ask",
				Name:        "Ask",
				Description: "Runs a task that asks for your name (input-required), then greets you.",
				Tags:        []string{"input"},
				Examples:    []string{"ask"},
			},
			{
				ID:          "wait",
				Name:        "Wait",
				Description: "Runs a task that keeps working until it is cancelled.",
				Tags:        []string{"cancel"},
				Examples:    []string{"wait"},
			},
			{
				ID:          "fail",
				Name:        "Fail",
				Description: "Runs a task that fails.",
				Tags:        []string{"error"},
				Examples:    []string{"fail"},
			},
			{
				ID:          "slow",
				Name:        "Slow",
				Description: "Runs a task that works for the given number of milliseconds, then completes.",
				Tags:        []string{"timeout"},
				Examples:    []string{"slow 2000"},
			},
		},
	}
}

// executor implements a2asrv.AgentExecutor.
type executor struct {
	stop       context.Context // cancelled by shutdown
	cancelStop context.CancelFunc
	queues     *trackedQueues
	requests   *requests // what clients asked of each task, for "between"

	mu      sync.Mutex
	closed  bool
	running sync.WaitGroup        // Execute and Cancel calls in flight
	intros  map[a2a.TaskID]string // "intro" tasks, to the name each was told
	// introPause is how long each "intro" task takes to take its name.
	introPause map[a2a.TaskID]time.Duration
}

var _ a2asrv.AgentExecutor = (*executor)(nil)

// enter registers a call; it returns false once shutdown has begun.
func (e *executor) enter() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return false
	}
	e.running.Add(1)
	return true
}

func (e *executor) shutdown() {
	e.mu.Lock()
	e.closed = true
	e.mu.Unlock()
	e.cancelStop()
	e.running.Wait()
}

// bind returns ctx, also cancelled (with cause errShuttingDown) on shutdown.
func (e *executor) bind(ctx context.Context) (context.Context, func()) {
	ctx, cancel := context.WithCancelCause(ctx)
	stopAfter := context.AfterFunc(e.stop, func() { cancel(errShuttingDown) })
	return ctx, func() { stopAfter(); cancel(nil) }
}

// Execute implements a2asrv.AgentExecutor. It must end either by writing a
// final event or by returning an error: a2asrv's event consumer waits for
// one of the two and would otherwise never return.
func (e *executor) Execute(ctx context.Context, reqCtx *a2asrv.RequestContext, q eventqueue.Queue) error {
	if !e.enter() {
		return errShuttingDown
	}
	defer e.running.Done()
	ctx, release := e.bind(ctx)
	defer release()

	r := &run{ctx: ctx, req: reqCtx, q: q}
	text := messageText(reqCtx.Message)
	if t := reqCtx.StoredTask; t != nil && t.Status.State == a2a.TaskStateInputRequired {
		return e.answer(r, t, text)
	}

	cmd, arg := splitCommand(text)
	switch cmd {
	case "reply":
		return r.reply(arg)
	case "stream":
		n, err := intArg(cmd, arg, defaultStreamSteps, maxStreamSteps)
		if err != nil {
			return err
		}
		return r.stream(n)
	case "ask":
		ms, err := intArg(cmd, arg, 0, maxSlowMS)
		if err != nil {
			return err
		}
		e.queues.lingerOn(reqCtx.TaskID, time.Duration(ms)*time.Millisecond)
		return r.ask()
	case "intro":
		ms, err := intArg(cmd, arg, 0, maxSlowMS)
		if err != nil {
			return err
		}
		e.mu.Lock()
		if e.intros == nil {
			e.intros, e.introPause = map[a2a.TaskID]string{}, map[a2a.TaskID]time.Duration{}
		}
		e.intros[reqCtx.TaskID] = ""
		e.introPause[reqCtx.TaskID] = time.Duration(ms) * time.Millisecond
		e.mu.Unlock()
		return r.ask()
	case "flood":
		artifacts, err := intArg(cmd, arg, 0, maxFloodArtifacts)
		if err != nil {
			return err
		}
		parts, err := intArg(cmd, strings.Join(strings.Fields(arg)[1:], " "), 0, maxFloodParts)
		if err != nil {
			return err
		}
		return r.flood(artifacts, parts)
	case "chart":
		return r.chart()
	case "between":
		return r.between(e.requests)
	case "wait":
		return r.wait()
	case "fail":
		return r.fail()
	case "slow":
		ms, err := intArg(cmd, arg, defaultSlowMS, maxSlowMS)
		if err != nil {
			return err
		}
		return r.slow(ms)
	default:
		return fmt.Errorf("%w: unknown command %q (want reply, stream, flood, ask, intro, chart, between, wait, fail or slow)", a2a.ErrInvalidParams, cmd)
	}
}

// answer takes text as the answer to the question task asks: an "ask"
// task's name, or an "intro" task's name, then its age.
func (e *executor) answer(r *run, task *a2a.Task, text string) error {
	text = strings.TrimSpace(text)
	e.mu.Lock()
	name, intro := e.intros[task.ID]
	pause := e.introPause[task.ID]
	askedName := messageText(task.Status.Message) == AskQuestion
	switch {
	case intro && askedName:
		e.intros[task.ID] = text
	case intro && text != "" && strings.Trim(text, "0123456789") == "":
		delete(e.intros, task.ID)
		delete(e.introPause, task.ID)
	}
	e.mu.Unlock()
	switch {
	case !intro:
		return r.answer(text)
	case askedName:
		if err := r.sleep(pause); err != nil {
			return err
		}
		return r.status(a2a.TaskStateInputRequired, AgeQuestion, true)
	case text == "" || strings.Trim(text, "0123456789") != "":
		if err := r.sleep(pause); err != nil {
			return err
		}
		return r.write(agentText(r.req, fmt.Sprintf("%q is not a number", text)))
	}
	return r.answer(name + ", aged " + text)
}

// Cancel implements a2asrv.AgentExecutor. The final canceled event goes to
// the running execution's queue when there is one; a2asrv then cancels that
// execution's context.
func (e *executor) Cancel(ctx context.Context, reqCtx *a2asrv.RequestContext, q eventqueue.Queue) error {
	if !e.enter() {
		return errShuttingDown
	}
	defer e.running.Done()
	ctx, release := e.bind(ctx)
	defer release()

	ev := a2a.NewStatusUpdateEvent(reqCtx, a2a.TaskStateCanceled, agentText(reqCtx, CancelText))
	ev.Final = true
	if err := q.Write(ctx, ev); err != nil {
		return fmt.Errorf("write canceled status: %w", causeOr(ctx, err))
	}
	return nil
}

// run is one Execute call.
type run struct {
	ctx context.Context
	req *a2asrv.RequestContext
	q   eventqueue.Queue
}

func (r *run) write(ev a2a.Event) error {
	if err := r.q.Write(r.ctx, ev); err != nil {
		return causeOr(r.ctx, err)
	}
	return nil
}

// submit writes the new Task, so streaming clients see a "task" event first
// and the task is in the store before anything else happens.
func (r *run) submit() error {
	task := a2a.NewSubmittedTask(r.req, r.req.Message)
	now := time.Now()
	task.Status.Timestamp = &now
	return r.write(task)
}

func (r *run) status(state a2a.TaskState, text string, final bool) error {
	var msg *a2a.Message
	if text != "" {
		msg = agentText(r.req, text)
	}
	ev := a2a.NewStatusUpdateEvent(r.req, state, msg)
	ev.Final = final
	return r.write(ev)
}

func (r *run) artifact(parts ...a2a.Part) error {
	ev := a2a.NewArtifactEvent(r.req, parts...)
	ev.Artifact.Name = "result"
	ev.LastChunk = true
	return r.write(ev)
}

func (r *run) sleep(d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-r.ctx.Done():
		return context.Cause(r.ctx)
	case <-t.C:
		return nil
	}
}

func (r *run) reply(text string) error {
	msg := a2a.NewMessage(a2a.MessageRoleAgent, a2a.TextPart{Text: "echo: " + text})
	msg.ContextID = r.req.ContextID
	return r.write(msg)
}

func (r *run) stream(n int) error {
	if err := r.submit(); err != nil {
		return err
	}
	for i := 1; i <= n; i++ {
		if err := r.status(a2a.TaskStateWorking, fmt.Sprintf("step %d of %d", i, n), false); err != nil {
			return err
		}
		if err := r.sleep(StepInterval); err != nil {
			return err
		}
	}
	err := r.artifact(
		a2a.TextPart{Text: fmt.Sprintf("done after %d steps", n)},
		a2a.DataPart{Data: map[string]any{"steps": n}},
	)
	if err != nil {
		return err
	}
	return r.status(a2a.TaskStateCompleted, "", true)
}

func (r *run) flood(artifacts, parts int) error {
	if err := r.submit(); err != nil {
		return err
	}
	for i := range artifacts {
		text := make(a2a.ContentParts, parts)
		for j := range text {
			text[j] = a2a.TextPart{Text: strings.Repeat(string(rune('a'+j%26)), FloodPart)}
		}
		ev := a2a.NewArtifactEvent(r.req, text...)
		ev.Artifact.Name = fmt.Sprint("flood ", i)
		ev.LastChunk = true
		if err := r.write(ev); err != nil {
			return err
		}
	}
	return r.status(a2a.TaskStateCompleted, "", true)
}

// ChartPNG is the image the chart command answers with: a PNG of one
// pixel, base64.
const ChartPNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="

// chart answers with an artifact of a text, an inline PNG and an inline
// PDF, as an agent that draws a chart and writes a report does.
func (r *run) chart() error {
	if err := r.submit(); err != nil {
		return err
	}
	ev := a2a.NewArtifactEvent(r.req,
		a2a.TextPart{Text: "the chart, and the report"},
		a2a.FilePart{File: a2a.FileBytes{FileMeta: a2a.FileMeta{Name: "chart.png", MimeType: "image/png"}, Bytes: ChartPNG}},
		a2a.FilePart{File: a2a.FileBytes{FileMeta: a2a.FileMeta{Name: "report.pdf", MimeType: "application/pdf"}, Bytes: "JVBERi0xLjQK"}})
	ev.LastChunk = true
	if err := r.write(ev); err != nil {
		return err
	}
	return r.status(a2a.TaskStateCompleted, "", true)
}

func (r *run) ask() error {
	if err := r.submit(); err != nil {
		return err
	}
	return r.status(a2a.TaskStateInputRequired, AskQuestion, true)
}

func (r *run) answer(name string) error {
	if err := r.artifact(a2a.TextPart{Text: "hello " + strings.TrimSpace(name)}); err != nil {
		return err
	}
	return r.status(a2a.TaskStateCompleted, "", true)
}

func (r *run) between(seen *requests) error {
	if err := r.submit(); err != nil {
		return err
	}
	if err := r.status(a2a.TaskStateWorking, "", false); err != nil {
		return err
	}
	id := string(r.req.TaskID)
	if err := seen.await(r.ctx, "tasks/get", id); err != nil {
		return err
	}
	if err := r.artifact(a2a.TextPart{Text: BetweenText}); err != nil {
		return err
	}
	if err := seen.await(r.ctx, "tasks/resubscribe", id); err != nil {
		return err
	}
	if err := r.sleep(BetweenPause); err != nil {
		return err
	}
	return r.status(a2a.TaskStateCompleted, "", true)
}

func (r *run) wait() error {
	if err := r.submit(); err != nil {
		return err
	}
	for i := 1; ; i++ {
		if err := r.status(a2a.TaskStateWorking, fmt.Sprintf("waiting (tick %d)", i), false); err != nil {
			return err
		}
		if err := r.sleep(WaitInterval); err != nil {
			return err
		}
	}
}

func (r *run) fail() error {
	if err := r.submit(); err != nil {
		return err
	}
	return r.status(a2a.TaskStateFailed, FailMessage, true)
}

func (r *run) slow(ms int) error {
	if err := r.submit(); err != nil {
		return err
	}
	if err := r.status(a2a.TaskStateWorking, fmt.Sprintf("sleeping %dms", ms), false); err != nil {
		return err
	}
	if err := r.sleep(time.Duration(ms) * time.Millisecond); err != nil {
		return err
	}
	if err := r.artifact(a2a.TextPart{Text: fmt.Sprintf("slept %dms", ms)}); err != nil {
		return err
	}
	return r.status(a2a.TaskStateCompleted, "", true)
}

// trackedQueues wraps the event queue manager to know which executions are
// still alive: a2asrv creates a task's queue when an execution starts and
// destroys it when the execution has finished.
type trackedQueues struct {
	eventqueue.Manager

	mu     sync.Mutex
	live   map[a2a.TaskID]struct{}
	linger map[a2a.TaskID]time.Duration // how much longer the next Destroy of a task takes
}

// lingerOn makes the teardown of tid's current execution take d longer.
func (m *trackedQueues) lingerOn(tid a2a.TaskID, d time.Duration) {
	m.mu.Lock()
	m.linger[tid] = d
	m.mu.Unlock()
}

func (m *trackedQueues) GetOrCreate(ctx context.Context, tid a2a.TaskID) (eventqueue.Queue, error) {
	q, err := m.Manager.GetOrCreate(ctx, tid)
	if err == nil {
		m.mu.Lock()
		m.live[tid] = struct{}{}
		m.mu.Unlock()
	}
	return q, err
}

func (m *trackedQueues) Destroy(ctx context.Context, tid a2a.TaskID) error {
	m.mu.Lock()
	d := m.linger[tid]
	delete(m.linger, tid)
	m.mu.Unlock()
	time.Sleep(d)
	err := m.Manager.Destroy(ctx, tid)
	m.mu.Lock()
	delete(m.live, tid)
	m.mu.Unlock()
	return err
}

func (m *trackedQueues) count() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.live)
}

func agentText(info a2a.TaskInfoProvider, text string) *a2a.Message {
	return a2a.NewMessageForTask(a2a.MessageRoleAgent, info, a2a.TextPart{Text: text})
}

// messageText joins the text parts of msg with spaces.
func messageText(msg *a2a.Message) string {
	if msg == nil {
		return ""
	}
	var texts []string
	for _, p := range msg.Parts {
		if tp, ok := p.(a2a.TextPart); ok {
			texts = append(texts, tp.Text)
		}
	}
	return strings.Join(texts, " ")
}

// splitCommand returns the lower-cased first word of text and the trimmed rest.
func splitCommand(text string) (cmd, arg string) {
	text = strings.TrimSpace(text)
	i := strings.IndexFunc(text, unicode.IsSpace)
	if i < 0 {
		return strings.ToLower(text), ""
	}
	return strings.ToLower(text[:i]), strings.TrimSpace(text[i:])
}

func intArg(cmd, arg string, def, limit int) (int, error) {
	if arg == "" {
		return def, nil
	}
	n, err := strconv.Atoi(strings.Fields(arg)[0])
	if err != nil || n < 0 || n > limit {
		return 0, fmt.Errorf("%w: %s wants an integer from 0 to %d, got %q", a2a.ErrInvalidParams, cmd, limit, arg)
	}
	return n, nil
}

// causeOr returns ctx's cause once ctx is done, else err.
func causeOr(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return context.Cause(ctx)
	}
	return err
}
