package serve

import (
	"bytes"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
)

// unanswered keeps ids as mcp-go tells them apart, drops only the
// server's answers to them, forgets one dropped or reused, and keeps
// maxUnanswered at most.
func TestUnanswered(t *testing.T) {
	var u unanswered
	var out bytes.Buffer
	d := dropAnswers{w: &out, u: &u}
	answer := func(id string) string { return `{"jsonrpc":"2.0","id":` + id + `,"result":{}}` + "\n" }
	dropped := func(frame string) bool {
		t.Helper()
		out.Reset()
		if n, err := d.Write([]byte(frame)); n != len(frame) || err != nil {
			t.Fatalf("Write: %d, %v", n, err)
		}
		return out.Len() == 0
	}
	if dropped(answer("1")) {
		t.Fatal("an answer dropped while no id is kept")
	}
	for _, id := range []string{`7`, `"a"`, `"b\"c"`, `-2`} {
		u.Add(id)
	}
	for _, c := range []struct {
		frame string
		want  bool
	}{
		{answer(`"7"`), false},                              // a string is another id
		{`{"jsonrpc":"2.0","id":7,"method":"ping"}`, false}, // a request of the server's
		{`{"jsonrpc":"2.0","method":"notifications/progress","params":{"id":7}}`, false},
		{answer(`7.0`), true},
		{answer(`7`), false}, // dropped once
		{`{"jsonrpc":"2.0","id":"\u0061","error":{"code":-1,"message":"x"}}`, true},
		{answer(`"b\"c"`), true},
		{`{"jsonrpc":"2.0","id":"b\"c","result":{}}`, false},
		{`{"id":-2,"jsonrpc":"2.0","result":{}}`, false}, // not as mcp-go writes
		{`{"jsonrpc":"2.0","id":-2`, false},
	} {
		if got := dropped(c.frame); got != c.want {
			t.Errorf("%s dropped: %v, want %v", c.frame, got, c.want)
		}
	}
	u.Forget([]byte(`{"jsonrpc":"2.0","method":"ping","id":-2.0}`)) // reused
	if dropped(answer(`-2`)) {
		t.Error("an answer to a reused id dropped")
	}

	for i := range maxUnanswered + 1 {
		u.Add(fmt.Sprint(i))
	}
	if dropped(answer("0")) {
		t.Error("the oldest id was kept past the bound")
	}
	if !dropped(answer(fmt.Sprint(maxUnanswered))) {
		t.Error("the newest id was not kept")
	}
}

// A request the server answered is forgotten when its handler returns,
// after the answer went out: by then the client may have sent another
// request under the same id, a fast call, which a notice must still stop.
// (The mcp-go client's attach_resource and the test's next call shared an
// id, and the call ran on uncancelled about once in 40 runs under load.)
func TestServerCallForgottenAfterReuse(t *testing.T) {
	var in Inflight
	answered := &ServerCall{}
	in.Add("2", answered)
	stopped := false
	in.Add("2", StopCause(func(error) { stopped = true })) // the next request, a fast call
	in.removeServerCall("2", answered)
	if _, ok := in.Cancel([]byte(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":2}}`)); !ok || !stopped {
		t.Fatal("the fast call under a reused id was forgotten with the request before it")
	}
	in.removeServerCall("2", answered) // not recorded: nothing happens
	in.Add("3", answered)
	in.removeServerCall("3", answered)
	if _, ok := in.Cancel([]byte(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":3}}`)); ok {
		t.Fatal("a request was not forgotten")
	}
}

// A call's writer writes its own events (progress) only before the
// server's answer began as JSON, and the server's headers as the server
// set them: a late progress wrote an event, and a second head, into a
// JSON answer.
func TestCallWriter(t *testing.T) {
	rec := httptest.NewRecorder()
	w := &callWriter{ResponseWriter: rec, call: &ServerCall{}}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Mcp-Session-Id", "s1")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write([]byte(`{"jsonrpc":"2.0","id":1,"result":{}}` + "\n"))
	if !w.event([]byte(`{"jsonrpc":"2.0","method":"notifications/progress"}`)) {
		t.Error("a late event was not taken (dropped)")
	}
	if got := rec.Body.String(); got != `{"jsonrpc":"2.0","id":1,"result":{}}`+"\n" {
		t.Errorf("the JSON answer reads %q", got)
	}
	if rec.Header().Get("Content-Type") != "application/json" || rec.Header().Get("Mcp-Session-Id") != "s1" {
		t.Errorf("the server's headers reached the client as %v", rec.Header())
	}

	// Begun by an event, the stream takes the answer, meant as JSON, as
	// its last event.
	rec = httptest.NewRecorder()
	w = &callWriter{ResponseWriter: rec, call: &ServerCall{}}
	w.event([]byte(`{"jsonrpc":"2.0","method":"notifications/progress"}`))
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write([]byte(`{"jsonrpc":"2.0","id":1,"result":{}}` + "\n"))
	want := "event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\"}\n\nevent: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n\n"
	if got := rec.Body.String(); got != want || rec.Header().Get("Content-Type") != "text/event-stream" {
		t.Errorf("the stream reads %q (%s), want %q", got, rec.Header().Get("Content-Type"), want)
	}
}
