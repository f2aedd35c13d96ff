package tools

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/server"
)

// A client resuming its listening stream after events the store no
// longer holds (256 on) gets the stream anew, and is told its lists
// changed, so that it lists again; mcp-go answered 400, and the
// TypeScript SDK then never listened again. A stream resumed after an
// event still held replays what followed, as before; so is one resumed
// while another GET of the session is open refused, as before.
func TestResumeAfterEventsGone(t *testing.T) {
	tg := newGateway(t, 0)
	s := tg.connect(t)
	sid := s.c.GetSessionId()
	defer http.DefaultClient.CloseIdleConnections()

	// listen opens the session's listening stream, resuming after last
	// if given, and returns its status and the data of its events as
	// they come, with their ids.
	type event struct{ id, data string }
	listen := func(ctx context.Context, last string) (int, <-chan event) {
		t.Helper()
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, tg.url, nil)
		req.Header.Set("Accept", "text/event-stream")
		req.Header.Set(server.HeaderKeySessionID, sid)
		if last != "" {
			req.Header.Set("Last-Event-ID", last)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		events := make(chan event, 512)
		go func() {
			defer resp.Body.Close()
			defer close(events)
			var e event
			for r := bufio.NewReader(resp.Body); ; {
				line, err := r.ReadString('\n')
				if err != nil {
					return
				}
				switch line = strings.TrimRight(line, "\r\n"); {
				case strings.HasPrefix(line, "id: "):
					e.id = strings.TrimPrefix(line, "id: ")
				case strings.HasPrefix(line, "data: "):
					e.data = strings.TrimPrefix(line, "data: ")
				case line == "" && e.data != "":
					events <- e
					e = event{}
				}
			}
		}()
		return resp.StatusCode, events
	}
	note := func(n int) {
		t.Helper()
		for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(time.Millisecond) {
			err := tg.g.mcp.SendNotificationToSpecificClient(sid, "notifications/message", map[string]any{"level": "info", "data": fmt.Sprintf("note %d", n)})
			if err == nil {
				return
			}
			if time.Now().After(deadline) { // its queue full: sent faster than the session's pump records them
				t.Fatal(err)
			}
		}
	}
	await := func(events <-chan event, want string) event {
		t.Helper()
		timeout := time.After(5 * time.Second)
		for {
			select {
			case e, ok := <-events:
				if !ok {
					t.Fatalf("the stream ended before %q", want)
				}
				if strings.Contains(e.data, want) {
					return e
				}
			case <-timeout:
				t.Fatalf("no %q on the stream", want)
			}
		}
	}

	ctx, stop := context.WithCancel(context.Background())
	if code, events := listen(ctx, ""); code != http.StatusOK {
		t.Fatalf("GET: %d", code)
	} else {
		note(0)
		first := await(events, `"note 0"`)
		stop()
		// Missed while away, and still held: replayed.
		note(1)
		ctx, stop = context.WithCancel(context.Background())
		code, events := listen(ctx, first.id)
		if code != http.StatusOK {
			t.Fatalf("resuming after a held event: %d", code)
		}
		await(events, `"note 1"`)
		stop()
		// Missed while away, more than the store holds: the stream
		// after first is gone.
		for n := 2; n < 300; n++ {
			note(n)
		}
		for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
			if _, err := tg.h.Events().ReplayEventsAfter(context.Background(), sid, first.id, func(string, json.RawMessage) error { return nil }); err != nil {
				break
			}
			if time.Now().After(deadline) {
				t.Fatal("the store still holds the stream after the first note")
			}
		}
		ctx, stop = context.WithCancel(context.Background())
		defer stop()
		code, events = listen(ctx, first.id)
		if code != http.StatusOK {
			t.Fatalf("resuming after events gone: %d", code)
		}
		for _, list := range []string{"tools", "prompts", "resources"} {
			await(events, `"method":"notifications/`+list+`/list_changed"`)
		}
		note(300) // and it is the session's listening stream
		await(events, `"note 300"`)
		// While it is open, a resume after events gone, perhaps of a
		// POST's stream, is refused as before: given the listening
		// stream, it and this one took it from each other without end.
		other, stopOther := context.WithCancel(context.Background())
		defer stopOther()
		if code, _ := listen(other, first.id); code != http.StatusBadRequest {
			t.Fatalf("a second resume after events gone: %d", code)
		}
		note(301)
		await(events, `"note 301"`)
	}
}
