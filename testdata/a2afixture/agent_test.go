package a2afixture_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/a2a"
	"github.com/a2aproject/a2a-go/a2aclient"
	"github.com/a2aproject/a2a-go/a2aclient/agentcard"
	"go.uber.org/goleak"

	"github.com/ardgate/ardgate/testdata/a2afixture"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// connect resolves the card over HTTP and builds an a2a-go JSON-RPC client.
func connect(t *testing.T, agent *a2afixture.Agent) *a2aclient.Client {
	t.Helper()
	ctx := t.Context()
	card, err := agentcard.NewResolver(agent.HTTPClient()).Resolve(ctx, agent.URL)
	if err != nil {
		t.Fatalf("resolve card: %v", err)
	}
	client, err := a2aclient.NewFromCard(ctx, card, a2aclient.WithJSONRPCTransport(agent.HTTPClient()))
	if err != nil {
		t.Fatalf("NewFromCard: %v", err)
	}
	t.Cleanup(func() { _ = client.Destroy() })
	return client
}

func send(text string) *a2a.MessageSendParams {
	return &a2a.MessageSendParams{Message: a2a.NewMessage(a2a.MessageRoleUser, a2a.TextPart{Text: text})}
}

func ctxTimeout(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), d)
	t.Cleanup(cancel)
	return ctx
}

func text(parts a2a.ContentParts) string {
	var s []string
	for _, p := range parts {
		if tp, ok := p.(a2a.TextPart); ok {
			s = append(s, tp.Text)
		}
	}
	return strings.Join(s, " ")
}

func statusText(s a2a.TaskStatus) string {
	if s.Message == nil {
		return ""
	}
	return text(s.Message.Parts)
}

// asTask checks a SendMessage result is a Task: asTask(t)(client.SendMessage(...)).
func asTask(t *testing.T) func(a2a.SendMessageResult, error) *a2a.Task {
	return func(res a2a.SendMessageResult, err error) *a2a.Task {
		t.Helper()
		if err != nil {
			t.Fatalf("SendMessage: %v", err)
		}
		task, ok := res.(*a2a.Task)
		if !ok {
			t.Fatalf("SendMessage returned %T, want *a2a.Task", res)
		}
		return task
	}
}

func TestCard(t *testing.T) {
	agent := a2afixture.Start(t)
	card, err := agentcard.NewResolver(agent.HTTPClient()).Resolve(t.Context(), agent.URL)
	if err != nil {
		t.Fatal(err)
	}
	if card.URL != agent.URL+a2afixture.RPCPath || card.PreferredTransport != a2a.TransportProtocolJSONRPC ||
		!card.Capabilities.Streaming || card.ProtocolVersion != "0.3.0" {
		t.Fatalf("card: %+v", card)
	}
	want := map[string]string{"reply": "echo", "stream": "progress", "ask": "input", "wait": "cancel", "fail": "error", "slow": "timeout"}
	var tagged bool
	for _, s := range card.Skills {
		if !slices.Contains(s.Tags, want[s.ID]) {
			t.Errorf("skill %q: tags %v, want %q", s.ID, s.Tags, want[s.ID])
		}
		delete(want, s.ID)
		tagged = tagged || slices.Contains(s.Tags, "code-analysis")
	}
	if len(want) > 0 || !tagged {
		t.Fatalf("skills missing %v, code-analysis tag present %v", want, tagged)
	}

	// The raw JSON, as a gateway's own decoder would see it.
	resp, err := agent.HTTPClient().Get(agent.URL + "/.well-known/agent-card.json")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, s := range []string{`"preferredTransport":"JSONRPC"`, `"protocolVersion":"0.3.0"`, `"streaming":true`, `"url":"` + agent.URL + `/a2a"`} {
		if !bytes.Contains(body, []byte(s)) {
			t.Errorf("card JSON lacks %s: %s", s, body)
		}
	}
}

func TestReply(t *testing.T) {
	client := connect(t, a2afixture.Start(t))
	res, err := client.SendMessage(ctxTimeout(t, 5*time.Second), send("reply hello  world"))
	if err != nil {
		t.Fatal(err)
	}
	msg, ok := res.(*a2a.Message)
	if !ok {
		t.Fatalf("got %T, want *a2a.Message", res)
	}
	if msg.Role != a2a.MessageRoleAgent || text(msg.Parts) != "echo: hello  world" || msg.TaskID != "" {
		t.Fatalf("message: %+v", msg)
	}
}

func TestStream(t *testing.T) {
	client := connect(t, a2afixture.Start(t))
	var events []a2a.Event
	for ev, err := range client.SendStreamingMessage(ctxTimeout(t, 5*time.Second), send("stream 3")) {
		if err != nil {
			t.Fatal(err)
		}
		events = append(events, ev)
	}
	if len(events) != 6 {
		t.Fatalf("got %d events, want 6: %#v", len(events), events)
	}
	task, ok := events[0].(*a2a.Task)
	if !ok || task.Status.State != a2a.TaskStateSubmitted {
		t.Fatalf("event 0: %#v", events[0])
	}
	for i := 1; i <= 3; i++ {
		su, ok := events[i].(*a2a.TaskStatusUpdateEvent)
		if !ok || su.Status.State != a2a.TaskStateWorking || su.Final || su.TaskID != task.ID ||
			statusText(su.Status) != "step "+string(rune('0'+i))+" of 3" {
			t.Fatalf("event %d: %#v", i, events[i])
		}
	}
	au, ok := events[4].(*a2a.TaskArtifactUpdateEvent)
	if !ok || au.Artifact.Name != "result" || len(au.Artifact.Parts) != 2 || text(au.Artifact.Parts) != "done after 3 steps" {
		t.Fatalf("event 4: %#v", events[4])
	}
	if dp, ok := au.Artifact.Parts[1].(a2a.DataPart); !ok || dp.Data["steps"] != float64(3) {
		t.Fatalf("data part: %#v", au.Artifact.Parts[1])
	}
	final, ok := events[5].(*a2a.TaskStatusUpdateEvent)
	if !ok || final.Status.State != a2a.TaskStateCompleted || !final.Final {
		t.Fatalf("event 5: %#v", events[5])
	}

	got, err := client.GetTask(t.Context(), &a2a.TaskQueryParams{ID: task.ID})
	if err != nil {
		t.Fatal(err)
	}
	// History: the user message plus each superseded status message.
	if got.Status.State != a2a.TaskStateCompleted || len(got.Artifacts) != 1 || len(got.History) != 4 {
		t.Fatalf("GetTask: %+v", got)
	}
}

func TestAsk(t *testing.T) {
	client := connect(t, a2afixture.Start(t))
	ctx := ctxTimeout(t, 5*time.Second)
	task := asTask(t)(client.SendMessage(ctx, send("ask")))
	if task.Status.State != a2a.TaskStateInputRequired || statusText(task.Status) != a2afixture.AskQuestion {
		t.Fatalf("ask: %+v", task.Status)
	}

	follow := a2a.NewMessage(a2a.MessageRoleUser, a2a.TextPart{Text: "Ada"})
	follow.TaskID, follow.ContextID = task.ID, task.ContextID
	done := asTask(t)(client.SendMessage(ctx, &a2a.MessageSendParams{Message: follow}))
	if done.ID != task.ID || done.Status.State != a2a.TaskStateCompleted || len(done.Artifacts) != 1 ||
		text(done.Artifacts[0].Parts) != "hello Ada" {
		t.Fatalf("follow-up: %+v", done)
	}

	// A task waiting for input has no running execution; cancelling it
	// still works (a2asrv calls the executor's Cancel on its own).
	other := asTask(t)(client.SendMessage(ctx, send("ask")))
	if c, err := client.CancelTask(ctx, &a2a.TaskIDParams{ID: other.ID}); err != nil || c.Status.State != a2a.TaskStateCanceled {
		t.Fatalf("CancelTask on input-required task: %+v, %v", c, err)
	}

	// The task is terminal now: another follow-up is rejected.
	again := a2a.NewMessage(a2a.MessageRoleUser, a2a.TextPart{Text: "Bob"})
	again.TaskID = task.ID
	if _, err := client.SendMessage(ctx, &a2a.MessageSendParams{Message: again}); !errors.Is(err, a2a.ErrInvalidParams) {
		t.Fatalf("follow-up to completed task: err %v, want invalid params", err)
	}
}

func TestAskStreaming(t *testing.T) {
	client := connect(t, a2afixture.Start(t))
	ctx := ctxTimeout(t, 5*time.Second)
	var last a2a.Event
	var task *a2a.Task
	for ev, err := range client.SendStreamingMessage(ctx, send("ask")) {
		if err != nil {
			t.Fatal(err)
		}
		if tk, ok := ev.(*a2a.Task); ok {
			task = tk
		}
		last = ev
	}
	su, ok := last.(*a2a.TaskStatusUpdateEvent)
	if task == nil || !ok || !su.Final || su.Status.State != a2a.TaskStateInputRequired {
		t.Fatalf("last event %#v", last)
	}
	follow := a2a.NewMessage(a2a.MessageRoleUser, a2a.TextPart{Text: "Grace"})
	follow.TaskID, follow.ContextID = task.ID, task.ContextID
	var kinds []string
	for ev, err := range client.SendStreamingMessage(ctx, &a2a.MessageSendParams{Message: follow}) {
		if err != nil {
			t.Fatal(err)
		}
		switch ev := ev.(type) {
		case *a2a.TaskArtifactUpdateEvent:
			kinds = append(kinds, "artifact:"+text(ev.Artifact.Parts))
		case *a2a.TaskStatusUpdateEvent:
			kinds = append(kinds, "status:"+string(ev.Status.State))
		default:
			kinds = append(kinds, "other")
		}
	}
	if !slices.Equal(kinds, []string{"artifact:hello Grace", "status:completed"}) {
		t.Fatalf("follow-up events %v", kinds)
	}
}

func TestWaitCancel(t *testing.T) {
	client := connect(t, a2afixture.Start(t))
	ctx := ctxTimeout(t, 5*time.Second)

	type result struct {
		task *a2a.Task
		err  error
	}
	cancelled := make(chan result, 1)
	var taskID a2a.TaskID
	var working int
	var last a2a.Event
	for ev, err := range client.SendStreamingMessage(ctx, send("wait")) {
		if err != nil {
			t.Fatal(err)
		}
		last = ev
		switch ev := ev.(type) {
		case *a2a.Task:
			taskID = ev.ID
		case *a2a.TaskStatusUpdateEvent:
			if ev.Status.State == a2a.TaskStateWorking {
				working++
				if working == 2 {
					go func() {
						task, err := client.CancelTask(ctx, &a2a.TaskIDParams{ID: taskID})
						cancelled <- result{task, err}
					}()
				}
			}
		}
	}
	su, ok := last.(*a2a.TaskStatusUpdateEvent)
	if !ok || !su.Final || su.Status.State != a2a.TaskStateCanceled || statusText(su.Status) != a2afixture.CancelText {
		t.Fatalf("last stream event %#v", last)
	}
	res := <-cancelled
	if res.err != nil || res.task.Status.State != a2a.TaskStateCanceled {
		t.Fatalf("CancelTask: %+v, %v", res.task, res.err)
	}
	got, err := client.GetTask(ctx, &a2a.TaskQueryParams{ID: taskID})
	if err != nil || got.Status.State != a2a.TaskStateCanceled {
		t.Fatalf("GetTask: %+v, %v", got, err)
	}
	// Cancelling a canceled task returns it again.
	if again, err := client.CancelTask(ctx, &a2a.TaskIDParams{ID: taskID}); err != nil || again.Status.State != a2a.TaskStateCanceled {
		t.Fatalf("second CancelTask: %+v, %v", again, err)
	}
}

func TestFail(t *testing.T) {
	client := connect(t, a2afixture.Start(t))
	ctx := ctxTimeout(t, 5*time.Second)
	task := asTask(t)(client.SendMessage(ctx, send("fail")))
	if task.Status.State != a2a.TaskStateFailed || statusText(task.Status) != a2afixture.FailMessage {
		t.Fatalf("fail: %+v", task.Status)
	}
	if _, err := client.CancelTask(ctx, &a2a.TaskIDParams{ID: task.ID}); !errors.Is(err, a2a.ErrTaskNotCancelable) {
		t.Fatalf("CancelTask on failed task: %v, want ErrTaskNotCancelable", err)
	}
}

func TestNonBlocking(t *testing.T) {
	client := connect(t, a2afixture.Start(t))
	ctx := ctxTimeout(t, 5*time.Second)
	params := send("stream 5")
	blocking := false
	params.Config = &a2a.MessageSendConfig{Blocking: &blocking}

	start := time.Now()
	task := asTask(t)(client.SendMessage(ctx, params))
	if elapsed := time.Since(start); elapsed > 5*a2afixture.StepInterval {
		t.Fatalf("non-blocking send took %v", elapsed)
	}
	if task.Status.State.Terminal() {
		t.Fatalf("non-blocking send returned a terminal task: %+v", task.Status)
	}

	seen := map[string]bool{}
	for {
		got, err := client.GetTask(ctx, &a2a.TaskQueryParams{ID: task.ID})
		if err != nil {
			t.Fatal(err)
		}
		if got.Status.State == a2a.TaskStateWorking {
			seen[statusText(got.Status)] = true
		}
		if got.Status.State == a2a.TaskStateCompleted {
			if len(got.Artifacts) != 1 || text(got.Artifacts[0].Parts) != "done after 5 steps" || len(got.History) != 6 {
				t.Fatalf("completed task: %+v", got)
			}
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if len(seen) < 2 {
		t.Fatalf("polling saw too little progress: %v", seen)
	}

	// historyLength trims the history GetTask returns.
	one := 1
	got, err := client.GetTask(ctx, &a2a.TaskQueryParams{ID: task.ID, HistoryLength: &one})
	if err != nil || len(got.History) != 1 || text(got.History[0].Parts) != "step 5 of 5" {
		t.Fatalf("GetTask historyLength=1: %+v, %v", got, err)
	}
}

func TestSlow(t *testing.T) {
	client := connect(t, a2afixture.Start(t))
	task := asTask(t)(client.SendMessage(ctxTimeout(t, 5*time.Second), send("slow 50")))
	if task.Status.State != a2a.TaskStateCompleted || text(task.Artifacts[0].Parts) != "slept 50ms" {
		t.Fatalf("slow: %+v", task)
	}

	// A client that gives up early gets its context error; the execution
	// carries on in the agent until Close stops it.
	ctx := ctxTimeout(t, 100*time.Millisecond)
	if _, err := client.SendMessage(ctx, send("slow 60000")); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("slow 60000 with 100ms timeout: %v", err)
	}
}

func TestUnknownCommand(t *testing.T) {
	client := connect(t, a2afixture.Start(t))
	ctx := ctxTimeout(t, 5*time.Second)
	for _, in := range []string{"dance", "", "stream x", "slow -1"} {
		if _, err := client.SendMessage(ctx, send(in)); !errors.Is(err, a2a.ErrInvalidParams) {
			t.Errorf("%q: err %v, want invalid params", in, err)
		}
	}
	if _, err := client.GetTask(ctx, &a2a.TaskQueryParams{ID: "nope"}); !errors.Is(err, a2a.ErrTaskNotFound) {
		t.Errorf("GetTask unknown: %v, want ErrTaskNotFound", err)
	}
}

// TestWire checks the JSON a gateway with its own JSON-RPC code sees.
func TestWire(t *testing.T) {
	agent := a2afixture.Start(t)
	rpc := func(method string, params any) map[string]any {
		t.Helper()
		body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
		resp, err := agent.HTTPClient().Post(agent.Card.URL, "application/json", bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var out map[string]any
		if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
			t.Fatal(err)
		}
		return out
	}
	msg := func(text string) map[string]any {
		return map[string]any{"message": map[string]any{
			"kind": "message", "messageId": "m-" + text, "role": "user",
			"parts": []any{map[string]any{"kind": "text", "text": text}},
		}}
	}

	out := rpc("message/send", msg("reply hi"))
	res := out["result"].(map[string]any)
	if res["kind"] != "message" || res["role"] != "agent" {
		t.Fatalf("reply: %v", out)
	}

	out = rpc("message/send", msg("ask"))
	res = out["result"].(map[string]any)
	status := res["status"].(map[string]any)
	if res["kind"] != "task" || status["state"] != "input-required" {
		t.Fatalf("ask: %v", out)
	}

	params := msg("wait")
	params["configuration"] = map[string]any{"blocking": false}
	out = rpc("message/send", params)
	id := out["result"].(map[string]any)["id"]
	out = rpc("tasks/cancel", map[string]any{"id": id})
	if out["result"].(map[string]any)["status"].(map[string]any)["state"] != "canceled" {
		t.Fatalf("cancel: %v", out)
	}

	out = rpc("message/send", msg("dance"))
	if e := out["error"].(map[string]any); e["code"] != float64(-32602) {
		t.Fatalf("unknown command: %v", out)
	}
}

// TestCloseStopsRunningTasks checks that Close ends executions that no
// client is waiting for and leaves no goroutine behind.
func TestCloseStopsRunningTasks(t *testing.T) {
	ignore := goleak.IgnoreCurrent()
	agent := a2afixture.Start(t)
	client := connect(t, agent)
	ctx := ctxTimeout(t, 5*time.Second)

	blocking := false
	params := send("wait")
	params.Config = &a2a.MessageSendConfig{Blocking: &blocking}
	asTask(t)(client.SendMessage(ctx, params))

	streamDone := make(chan error, 1)
	started := make(chan struct{})
	go func() {
		var err error
		first := true
		for _, e := range client.SendStreamingMessage(ctx, send("wait")) {
			if first {
				close(started)
				first = false
			}
			if e != nil {
				err = e
			}
		}
		streamDone <- err
	}()
	<-started

	agent.Close()
	if err := <-streamDone; err == nil {
		t.Fatal("stream of a running task ended without error on Close")
	}
	goleak.VerifyNone(t, ignore)
}
