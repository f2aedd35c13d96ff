package tools

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/ardgate/ardgate/attach"
	"github.com/ardgate/ardgate/config"
	"github.com/ardgate/ardgate/guard"
	"github.com/ardgate/ardgate/guard/jsonrpc"
)

// progressCall is a raw tools/call of tool with a progress token (its
// JSON).
func progressCall(id int, tool, args, token string) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":%q,"arguments":%s,"_meta":{"progressToken":%s}}}`, id, tool, args, token)
}

// checkProgress checks the messages that answered call id, in order: at
// least min notifications/progress for token, nothing else, then the
// response, holding want.
func checkProgress(t *testing.T, msgs []string, id int, token string, min int, want string) {
	t.Helper()
	if len(msgs) == 0 {
		t.Fatal("no answer")
	}
	last := msgs[len(msgs)-1]
	if !strings.HasPrefix(last, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"result":`, id)) || !strings.Contains(last, want) {
		t.Fatalf("the answer is %.300s; want the result of call %d, holding %s", last, id, want)
	}
	for _, m := range msgs[:len(msgs)-1] {
		var n struct {
			Method string
			Params map[string]json.RawMessage
		}
		if err := json.Unmarshal([]byte(m), &n); err != nil || n.Method != "notifications/progress" {
			t.Fatalf("before the result: %.300s (%v); want progress only", m, err)
		}
		if got := string(n.Params["progressToken"]); got != token {
			t.Fatalf("progress for token %s: %s; want the client's token %s", got, m, token)
		}
		if n.Params["progress"] == nil || n.Params["total"] == nil || len(n.Params) != 3 {
			t.Fatalf("progress relayed as %s; want the fixture's progress, total and the token only", m)
		}
	}
	if got := len(msgs) - 1; got < min {
		t.Fatalf("%d progress notifications before the result, want at least %d", got, min)
	}
}

// Over HTTP, a call with a progress token takes the fast path, on a
// connection of net/http's and on a kept one alike. While the upstream
// reports nothing the answer is JSON; its progress turns the answer into
// an event stream, of that progress under the client's token and then
// the result. The connection is kept after either.
func TestFastPathProgressHTTP(t *testing.T) {
	tg, up, sid := keptGateway(t, HTTPOptions{})
	c := dialRaw(t, tg, sid)

	// The first call on a connection: net/http's server writes the stream.
	slow := func(id int, token string) {
		t.Helper()
		c.send(c.request(progressCall(id, "mcp_remote__slow", `{"ms":180}`, token)))
		resp, body := c.response()
		if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
			t.Fatalf("call %d: Content-Type %q, want an event stream: %s", id, ct, body)
		}
		checkProgress(t, sseMessages(t, body), id, token, 2, `"text":"slept 180ms"`)
		if !fastPathTaken(up.lastID()) {
			t.Fatalf("call %d did not take the fast path (upstream saw id %s)", id, up.lastID())
		}
	}
	slow(1, `"tok-1"`)
	if n := tg.h.KeptServed(); n != 0 {
		t.Fatalf("%d calls answered in place; the first is net/http's", n)
	}
	// net/http's server answers the next call too, then the gateway
	// takes the connection; the calls that follow are answered in place,
	// a stream in chunks.
	c.echo(2, "kept")
	slow(3, `42`)
	c.send(c.request(progressCall(4, "mcp_remote__echo", `{"message":"quiet"}`, `"tok-4"`)))
	resp, body := c.response()
	if ct := resp.Header.Get("Content-Type"); ct != "application/json" || !strings.Contains(body, `"text":"quiet"`) {
		t.Fatalf("a call that reports no progress: %q %s; want JSON", ct, body)
	}
	c.echo(5, "after the streams")
	if n := tg.h.KeptServed(); n != 3 {
		t.Fatalf("%d calls answered in place, want 3", n)
	}

	// A real client hears the progress and gets the result.
	s := tg.connect(t)
	attachRemote(t, s)
	req := mcp.CallToolRequest{}
	req.Params.Name = "mcp_remote__slow"
	req.Params.Arguments = map[string]any{"ms": 180}
	req.Params.Meta = &mcp.Meta{ProgressToken: "from-client"}
	res, err := s.c.CallTool(context.Background(), req)
	if err != nil || firstText(res) != "slept 180ms" {
		t.Fatalf("slow with progress: %v %+v", err, res)
	}
	if !fastPathTaken(up.lastID()) {
		t.Fatalf("the client's call did not take the fast path (upstream saw id %s)", up.lastID())
	}
	s.mu.Lock()
	var heard int
	for _, n := range s.notes {
		if n.Method == "notifications/progress" && n.Params.AdditionalFields["progressToken"] == "from-client" {
			heard++
		}
	}
	s.mu.Unlock()
	if heard < 2 {
		t.Fatalf("the client heard %d progress notifications for its token, want 2 or more", heard)
	}
}

// sseMessages returns the data of each event in body, an event stream.
func sseMessages(t *testing.T, body string) []string {
	t.Helper()
	var msgs []string
	for _, ev := range strings.Split(strings.TrimSuffix(body, "\n\n"), "\n\n") {
		var data []string
		for _, line := range strings.Split(ev, "\n") {
			if v, ok := strings.CutPrefix(line, "data: "); ok {
				data = append(data, v)
			}
		}
		if data == nil {
			t.Fatalf("an event without data in %q", body)
		}
		msgs = append(msgs, strings.Join(data, "\n"))
	}
	return msgs
}

// Over stdio, a call with a progress token takes the fast path to a
// stdio upstream (answered from its pipe) and to a remote one alike:
// the upstream's progress comes first, as frames under the client's
// token, then the result. Calls in flight at once each hear only their
// own progress.
func TestFastPathProgressStdio(t *testing.T) {
	up := newRecordingUpstream(t)
	m := pinnedFixture(buildFixture(t), 30*time.Second)
	d := &guard.Dialer{AllowLocal: true}
	m.Pinned = append(m.Pinned, config.Server{Name: "fh", URL: up.URL})
	m.HTTP = d.Client()
	t.Cleanup(m.HTTP.CloseIdleConnections)
	c := rawStdio(t, New(m, quietLog, Options{Version: "test"}))
	c.caller(t, `"mcp_fx__echo","arguments":{"message":"ready?"}`, `"text":"ready?"`)
	c.caller(t, `"mcp_fh__echo","arguments":{"message":"ready?"}`, `"text":"ready?"`)

	// Four calls in one write, two to each upstream.
	tokens := map[int]string{10: `"a"`, 11: `11`, 12: `"c"`, 13: `-4.5`}
	var burst strings.Builder
	for id, token := range tokens {
		tool := "mcp_fx__slow"
		if id%2 == 1 {
			tool = "mcp_fh__slow"
		}
		burst.WriteString(progressCall(id, tool, `{"ms":180}`, token) + "\n")
	}
	if _, err := c.w.Write([]byte(burst.String())); err != nil {
		t.Fatal(err)
	}
	byCall := map[int][]string{}
	byToken := map[string]int{}
	for id, token := range tokens {
		byToken[token] = id
	}
	for done := 0; done < len(tokens); {
		line, err := c.out.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		line = strings.TrimSuffix(line, "\n")
		var f struct {
			ID     *int
			Method string
			Params struct{ ProgressToken json.RawMessage }
		}
		if err := json.Unmarshal([]byte(line), &f); err != nil {
			t.Fatalf("%v: %s", err, line)
		}
		if f.ID == nil && f.Method != string(mcp.MethodNotificationProgress) {
			// A pinned server's tools are callable before the server
			// announces them: its tools/list_changed may come now.
			continue
		}
		id := 0
		if f.ID != nil {
			id, done = *f.ID, done+1
		} else if id = byToken[string(f.Params.ProgressToken)]; id == 0 {
			t.Fatalf("progress for no call of the client's: %s", line)
		}
		byCall[id] = append(byCall[id], line)
	}
	for id, token := range tokens {
		checkProgress(t, byCall[id], id, token, 2, `"text":"slept 180ms"`)
	}
	if !fastPathTaken(up.lastID()) {
		t.Fatalf("the remote's calls did not take the fast path (upstream saw id %s)", up.lastID())
	}
	c.caller(t, `"mcp_fx__echo","arguments":{"message":"after"}`, `"text":"after"`)()
}

// An upstream that reports progress in a loop has it coalesced on the
// way to the client: at most one notification every attach.MinUpdate, the
// latest last, then the result; over stdio from a stdio upstream and from
// a remote one. 100,000 notifications in 3 s were relayed, one frame each.
func TestUpstreamProgressCoalesced(t *testing.T) {
	up := newRecordingUpstream(t)
	m := pinnedFixture(buildFixture(t), 30*time.Second)
	m.Pinned = append(m.Pinned, config.Server{Name: "fh", URL: up.URL})
	m.HTTP = (&guard.Dialer{AllowLocal: true}).Client()
	t.Cleanup(m.HTTP.CloseIdleConnections)
	c := rawStdio(t, New(m, quietLog, Options{Version: "test"}))
	c.caller(t, `"mcp_fx__echo","arguments":{"message":"ready?"}`, `"text":"ready?"`)
	c.caller(t, `"mcp_fh__echo","arguments":{"message":"ready?"}`, `"text":"ready?"`)

	for i, way := range []struct {
		tool, args string
		count      int
		// last: the upstream's last progress comes before its answer.
		// mcp-go's HTTP server hands a notification to whichever of the
		// session's streams reads first: some go on the GET stream the
		// gateway listens on, and may come after the answer.
		last bool
	}{
		{"mcp_fx__progress", `{"count":100000,"inline":true}`, 100000, true},
		{"mcp_fh__progress", `{"count":3000}`, 3000, false},
	} {
		id := 20 + i
		start := time.Now()
		if _, err := c.w.Write([]byte(progressCall(id, way.tool, way.args, `"p"`) + "\n")); err != nil {
			t.Fatal(err)
		}
		var msgs []string
		for {
			line, err := c.out.ReadString('\n')
			if err != nil {
				t.Fatal(err)
			}
			if strings.Contains(line, `"method":"notifications/tools/list_changed"`) {
				continue // a pinned server's, which may come late
			}
			msgs = append(msgs, strings.TrimSuffix(line, "\n"))
			if strings.HasPrefix(line, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,`, id)) {
				break
			}
		}
		took := time.Since(start)
		checkProgress(t, msgs, id, `"p"`, 1, fmt.Sprintf(`"text":"sent %d progress notifications"`, way.count))
		// The first at once, one per MinUpdate after it, the one held
		// at the end.
		if most := 2 + int(took/attach.MinUpdate); len(msgs)-1 > most {
			t.Errorf("%s: %d progress notifications in %s; want at most %d", way.tool, len(msgs)-1, took, most)
		}
		if last := msgs[len(msgs)-2]; way.last && !strings.Contains(last, fmt.Sprintf(`"progress":%d,`, way.count)) {
			t.Errorf("%s: the last progress before the result is %s; want progress %d", way.tool, last, way.count)
		}
	}
}

// StartRaw relays a stdio upstream's progress from its pipe's reader,
// each notification before the result, with the caller's token, and
// none once the call has ended.
func TestStartRawProgress(t *testing.T) {
	g := New(pinnedFixture(buildFixture(t), 30*time.Second), quietLog, Options{Version: "test"})
	cl := serveStdio(t, g)
	waitCallable(t, cl, "mcp_fx__echo", map[string]any{"message": "ready?"})

	var mu sync.Mutex
	var heard []string
	ended := make(chan string, 1)
	progress := &attach.Progress{Token: json.RawMessage(`"mine"`), To: func(n mcp.JSONRPCNotification) {
		b, _ := json.Marshal(n)
		mu.Lock()
		heard = append(heard, string(b))
		mu.Unlock()
	}}
	var before int // progress heard before the result
	_, ok := g.stdio.Load().att.StartRaw("mcp_fx__slow", json.RawMessage(`{"ms":180}`), nil, progress, nil, func(raw json.RawMessage, err error, _ *jsonrpc.Batch) {
		mu.Lock()
		before = len(heard)
		mu.Unlock()
		ended <- fmt.Sprint(string(raw), err)
	})
	if !ok {
		t.Fatal("StartRaw did not take a call to a stdio upstream")
	}
	if r := <-ended; !strings.Contains(r, "slept 180ms") || !strings.HasSuffix(r, "<nil>") {
		t.Fatalf("StartRaw with progress: %s", r)
	}
	// The fixture reports every 50 ms, and nothing after its result.
	time.Sleep(100 * time.Millisecond)
	mu.Lock()
	defer mu.Unlock()
	if before < 2 || len(heard) != before {
		t.Fatalf("%d progress notifications before the result and %d after; want 2 or more, then none", before, len(heard)-before)
	}
	for _, n := range heard {
		if !strings.Contains(n, `"progressToken":"mine"`) {
			t.Errorf("progress relayed as %s; want the caller's token", n)
		}
	}
}

// A client that goes away while its call streams progress has the call
// cancelled upstream, on a connection of net/http's and on a kept one,
// and the gateway goes on.
func TestFastPathProgressClientGone(t *testing.T) {
	tg, up, sid := keptGateway(t, HTTPOptions{})
	for _, kept := range []bool{false, true} {
		c := dialRaw(t, tg, sid)
		if kept {
			c.echo(1, "net/http's, then kept")
		}
		c.send(c.request(progressCall(2, "mcp_remote__slow", `{"ms":20000}`, `"bye"`)))
		_ = c.conn.SetReadDeadline(time.Now().Add(10 * time.Second))
		resp, err := http.ReadResponse(c.br, nil)
		if err != nil {
			t.Fatal(err)
		}
		events := bufio.NewReader(resp.Body)
		for {
			line, err := events.ReadString('\n')
			if err != nil {
				t.Fatalf("kept %v: the stream ended before any progress: %v", kept, err)
			}
			if strings.Contains(line, `"progressToken":"bye"`) {
				break
			}
		}
		_ = c.conn.Close()
		for deadline := time.Now().Add(5 * time.Second); up.inflight.Load() != 0; time.Sleep(10 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("kept %v: the upstream kept working on the call of a client that went away", kept)
			}
		}
	}
	dialRaw(t, tg, sid).echo(3, "still serving")
}

// Over HTTP, the progress of a request the MCP server runs goes on that
// request's own stream, in order, and the answer ends it: the gateway's
// own tools (attach_resource's stages) and proxied calls that take the
// server's path, several at once, while the session's GET stream is open.
// mcp-go's server handed each progress notification to whichever of the
// session's streams read first: with the TypeScript SDK, which always
// opens the GET stream, attach's stages came out of order in four runs of
// five.
func TestServerCallProgressOnItsStream(t *testing.T) {
	up := newRecordingUpstream(t)
	tg := newGateway(t, 10*time.Second, remoteEntry(fastURN, up.URL))
	sid := tg.connect(t).c.GetSessionId()
	post := func(body string) string {
		t.Helper()
		_, answer := postMCP(t, tg.url, sid, body)
		return answer
	}
	// progressOf checks that stream holds token's progress, rising, and
	// nothing else of anyone's but its answer to id, last.
	progressOf := func(what, stream, token string, id int) {
		t.Helper()
		last, n := -1.0, 0
		for _, event := range strings.Split(strings.TrimSpace(stream), "\n\n") {
			data, ok := strings.CutPrefix(event[strings.Index(event, "data: ")+1:], "ata: ")
			if !ok {
				t.Fatalf("%s: not an event: %q", what, event)
			}
			var m struct {
				ID     *int
				Method string
				Params struct {
					ProgressToken string
					Progress      float64
				}
			}
			if err := json.Unmarshal([]byte(data), &m); err != nil {
				t.Fatalf("%s: %v in %q", what, err, data)
			}
			switch {
			case m.Method == string(mcp.MethodNotificationProgress) && m.Params.ProgressToken == token && m.Params.Progress > last && n >= 0:
				last, n = m.Params.Progress, n+1
			case strings.HasSuffix(m.Method, "/list_changed"): // tools, prompts, resources
			case m.ID != nil && *m.ID == id && n > 0:
				n = -n // the answer: nothing may follow
			default:
				t.Fatalf("%s: %q out of place in %q", what, data, stream)
			}
		}
		if n >= 0 {
			t.Fatalf("%s: no progress, or no answer last: %q", what, stream)
		}
	}

	getReq, _ := http.NewRequest(http.MethodGet, tg.url, nil)
	getReq.Header.Set("Accept", "text/event-stream")
	getReq.Header.Set("Mcp-Session-Id", sid)
	ctx, stopGET := context.WithCancel(context.Background())
	getResp, err := http.DefaultClient.Do(getReq.WithContext(ctx))
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan string, 1)
	go func() {
		b, _ := io.ReadAll(getResp.Body)
		got <- string(b)
	}()

	stream := post(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"attach_resource","arguments":{"urn":"` + fastURN + `","name":"again"},"_meta":{"progressToken":"a"}}}`)
	progressOf("attach_resource", stream, "a", 1)
	var wg sync.WaitGroup
	for i := range 3 {
		wg.Go(func() {
			token, id := fmt.Sprint("s", i), 10+i
			// The method spelled with an escape takes the server's path.
			stream := post(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools\/call","params":{"name":"mcp_again__slow","arguments":{"ms":400},"_meta":{"progressToken":%q}}}`, id, token))
			progressOf("a proxied call on the server's path", stream, token, id)
		})
	}
	wg.Wait()
	stopGET()
	if get := <-got; strings.Contains(get, "progressToken") {
		t.Errorf("progress on the GET stream: %q", get)
	}
	http.DefaultClient.CloseIdleConnections()
}

// A call that asked for progress gets the call timeout again at each
// progress the upstream reports, up to the most a call may take; one that
// did not is cut at the timeout. On each way a call goes: to a stdio
// server from the fast path (StartRaw), through call_attached_tool, and
// through mcp-go's server and client (a progress token that is not a
// string or a number keeps a call off the fast path); to a streamable
// HTTP server (CallRaw).
func TestProgressGivesTime(t *testing.T) {
	up := upstream(t)
	// A timeout shorter than attach.MinUpdate: each progress the server
	// reports gives time, not only those relayed to the client.
	m := pinnedFixture(buildFixture(t), 200*time.Millisecond)
	m.MaxCallTime = 2 * time.Second
	m.Pinned = append(m.Pinned, config.Server{Name: "remote", URL: up.URL})
	m.HTTP = (&guard.Dialer{AllowLocal: true}).Client()
	t.Cleanup(m.HTTP.CloseIdleConnections)
	c := serveStdio(t, New(m, quietLog, Options{Version: "test"}))

	// call calls slow for ms, through call_attached_tool when via is set,
	// with the progress token when there is one; it returns the text of
	// the result or of the error.
	call := func(tool string, via bool, ms int, token any) string {
		req := mcp.CallToolRequest{}
		req.Params.Name, req.Params.Arguments = tool, map[string]any{"ms": ms}
		if via {
			req.Params.Name, req.Params.Arguments = "call_attached_tool", map[string]any{"name": tool, "arguments": req.Params.Arguments}
		}
		if token != nil {
			req.Params.Meta = &mcp.Meta{ProgressToken: token}
		}
		res, err := c.CallTool(context.Background(), req)
		if err != nil {
			return err.Error()
		}
		return firstText(res)
	}
	for deadline := time.Now().Add(10 * time.Second); call("mcp_fx__slow", false, 0, nil) != "slept 0ms" || call("mcp_remote__slow", false, 0, nil) != "slept 0ms"; {
		if time.Now().After(deadline) {
			t.Fatal("the pinned servers never became callable")
		}
		time.Sleep(20 * time.Millisecond)
	}

	for _, way := range []struct {
		name  string
		tool  string
		via   bool
		token any
	}{
		{"stdio fast path", "mcp_fx__slow", false, "p"},
		{"call_attached_tool", "mcp_fx__slow", true, 7},
		{"server path", "mcp_fx__slow", false, map[string]any{"off": "the fast path"}},
		{"http", "mcp_remote__slow", false, "p"},
	} {
		t.Run(way.name, func(t *testing.T) {
			var wg sync.WaitGroup
			check := func(ms int, token any, want string) {
				defer wg.Done()
				if got := call(way.tool, way.via, ms, token); !strings.Contains(got, want) {
					t.Errorf("slow %dms, progress token %v: %q; want %q", ms, token, got, want)
				}
			}
			wg.Add(3)
			go check(1200, way.token, "slept 1200ms")
			go check(1200, nil, "did not answer slow within 200ms")
			go check(60000, way.token, "was still working on slow after 2s, the most one call may take (max_call_time)")
			wg.Wait()
		})
	}
}

// A fast call with a progress token from a client whose Accept takes no
// event stream is answered in JSON, on net/http's connections and on the
// ones the gateway serves itself (the second request on a connection),
// its upstream not asked for progress; one that takes a stream gets the
// progress.
func TestProgressOnlyWhereAccepted(t *testing.T) {
	up := newRecordingUpstream(t)
	tg := newGateway(t, 10*time.Second, remoteEntry(fastURN, up.URL))
	s := tg.connect(t)
	if res := s.call("attach_resource", map[string]any{"urn": fastURN, "name": "up"}); res.IsError {
		t.Fatal(firstText(res))
	}
	for accept, stream := range map[string]bool{"application/json": false, "application/json;q=0.9, text/event-stream": true, "": true} {
		for i := range 2 { // net/http's connection, then the gateway's
			req, _ := http.NewRequest(http.MethodPost, tg.url, strings.NewReader(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"mcp_up__slow","arguments":{"ms":160},"_meta":{"progressToken":"t"}}}`))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Mcp-Session-Id", s.c.GetSessionId())
			if accept != "" {
				req.Header.Set("Accept", accept)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			ct := resp.Header.Get("Content-Type")
			progress := strings.Contains(string(body), "notifications/progress")
			if stream != (ct == "text/event-stream") || stream != progress || !strings.Contains(string(body), "slept 160ms") {
				t.Errorf("Accept %q, request %d: %s %q", accept, i, ct, body)
			}
		}
	}
	http.DefaultClient.CloseIdleConnections()
}
