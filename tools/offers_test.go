package tools

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/ardgate/ardgate/config"
	"github.com/ardgate/ardgate/testdata/mcpfixture"
)

// The attached servers' prompts and resources, over streamable HTTP: two
// attachments of the fixture, listed and served each under its own name,
// a resource read from the server that lists it or whose template matches,
// the servers' errors passed on under their names, a prompt the server
// adds announced and served, and a detach taking its prompts away.
func TestPromptsAndResourcesHTTP(t *testing.T) {
	up := upstream(t)
	const one, two = "urn:air:ardgate.test:mcp:one", "urn:air:ardgate.test:mcp:two"
	tg := newGateway(t, 10*time.Second, remoteEntry(one, up.URL), remoteEntry(two, up.URL))
	s := tg.connect(t, transport.WithContinuousListening()) // notices come on its GET stream, as the TypeScript SDK's do
	caps := s.c.GetServerCapabilities()
	if caps.Prompts == nil || !caps.Prompts.ListChanged || caps.Resources == nil || !caps.Resources.ListChanged {
		t.Fatalf("capabilities: prompts %+v, resources %+v; want both with listChanged", caps.Prompts, caps.Resources)
	}
	if got := promptNames(t, s.c); len(got) != 0 {
		t.Fatalf("prompts before any attach: %v", got)
	}
	if n := s.count(mcp.MethodNotificationPromptsListChanged) + s.count(mcp.MethodNotificationResourcesListChanged); n != 0 {
		t.Fatalf("%d list_changed of prompts or resources before any attach", n)
	}
	for _, urn := range []string{one, two} {
		if res := s.call("attach_resource", map[string]any{"urn": urn}); res.IsError {
			t.Fatalf("attach %s: %s", urn, firstText(res))
		}
	}
	waitNote(t, s, mcp.MethodNotificationPromptsListChanged, 1)
	waitNote(t, s, mcp.MethodNotificationResourcesListChanged, 1)
	checkOffers(t, s.c, "one", "two")
	if res := s.call("list_attached_resources", map[string]any{}); !strings.Contains(string(res.RawStructuredContent), `"tools_count":18,"prompts_count":1,"resources_count":4,"resource_templates_count":3,`) {
		t.Fatalf("list_attached_resources: %s; want the counts of prompts and resources", res.RawStructuredContent)
	}

	// A subscription is taken by the server that lists the resource; its
	// update reaches the client, another server's does not, and after
	// unsubscribing none does.
	subscribe := func(method mcp.MCPMethod, uri string) error {
		if method == mcp.MethodResourcesSubscribe {
			return s.c.Subscribe(context.Background(), mcp.SubscribeRequest{Params: mcp.SubscribeParams{URI: uri}})
		}
		return s.c.Unsubscribe(context.Background(), mcp.UnsubscribeRequest{Params: mcp.UnsubscribeParams{URI: uri}})
	}
	if err := subscribe(mcp.MethodResourcesSubscribe, "fixture://readme"); err != nil {
		t.Fatalf("subscribe: %v", err)
	}
	if res := s.call("mcp_one__touch", map[string]any{"uri": "fixture://readme"}); firstText(res) != "updated" {
		t.Fatalf("touch at one, the server subscribed at: %q", firstText(res))
	}
	waitNote(t, s, mcp.MethodNotificationResourceUpdated, 1)
	if res := s.call("mcp_two__touch", map[string]any{"uri": "fixture://readme"}); firstText(res) != "not subscribed" {
		t.Fatalf("touch at two: %q; the subscription went to both servers", firstText(res))
	}
	if err := subscribe(mcp.MethodResourcesUnsubscribe, "fixture://readme"); err != nil {
		t.Fatalf("unsubscribe: %v", err)
	}
	if res := s.call("mcp_one__touch", map[string]any{"uri": "fixture://readme"}); firstText(res) != "not subscribed" {
		t.Fatalf("touch at one after unsubscribing: %q", firstText(res))
	}
	if err := subscribe(mcp.MethodResourcesUnsubscribe, "fixture://readme"); err == nil || !strings.Contains(err.Error(), "no subscription") {
		t.Fatalf("unsubscribe again: %v", err)
	}
	s.mu.Lock()
	for _, n := range s.notes {
		if n.Method == mcp.MethodNotificationResourceUpdated && n.Params.AdditionalFields["uri"] != "fixture://readme" {
			t.Errorf("resources/updated of %v", n.Params.AdditionalFields)
		}
	}
	s.mu.Unlock()
	if n := s.count(mcp.MethodNotificationResourceUpdated); n != 1 {
		t.Fatalf("%d resources/updated; want the one of the subscription", n)
	}

	// The metrics count them by method and result.
	if ok, failed := count(tg.g.metrics.offers.WithLabelValues("prompts/get", "ok")), count(tg.g.metrics.offers.WithLabelValues("resources/read", "error")); ok < 2 || failed < 1 {
		t.Errorf("ardgate_offer_requests_total: %v prompts/get ok, %v resources/read error; want 2 and 1 at least", ok, failed)
	}

	// A prompt the server adds is announced, listed and served.
	before := s.count(mcp.MethodNotificationPromptsListChanged)
	if res := s.call("mcp_one__offer", map[string]any{"name": "later"}); res.IsError {
		t.Fatalf("offer: %s", firstText(res))
	}
	// Both attachments share the fixture, so both re-list it: the first
	// notice may come of two's change. Each notice is a chance to look.
	for heard := before + 1; ; heard++ {
		waitNote(t, s, mcp.MethodNotificationPromptsListChanged, heard)
		if slices.Contains(promptNames(t, s.c), "mcp_one__later") {
			break
		}
		if heard == before+2 {
			t.Fatal("two prompts/list_changed since the offer, and no mcp_one__later listed")
		}
	}
	if got := promptText(t, s.c, "mcp_one__later", nil); got != "added prompt later" {
		t.Fatalf("the added prompt: %q", got)
	}
	if got := readText(t, s.c, "fixture://extra/later"); got != "extra later" {
		t.Fatalf("the added resource: %q", got)
	}

	if res := s.call("detach_resource", map[string]any{"name": "two"}); res.IsError {
		t.Fatalf("detach: %s", firstText(res))
	}
	if got := promptNames(t, s.c); slices.ContainsFunc(got, func(n string) bool { return strings.HasPrefix(n, "mcp_two__") }) {
		t.Fatalf("prompts after detaching two: %v", got)
	}
	// One server of resources left: a URI it does not list goes to it,
	// and its answer comes back.
	if _, err := s.c.ReadResource(context.Background(), readReq("other://x")); err == nil || !strings.Contains(err.Error(), "one:") {
		t.Fatalf("read of a URI no one lists, one server left: %v; want the server's own error, under its name", err)
	}
}

// The same over stdio, the fixture a stdio server pinned in the config.
func TestPromptsAndResourcesStdio(t *testing.T) {
	c := serveStdio(t, New(pinnedFixture(buildFixture(t), 10*time.Second), quietLog, Options{Version: "test"}))
	deadline := time.Now().Add(10 * time.Second)
	for !slices.Contains(promptNames(t, c), "mcp_fx__greet") {
		if time.Now().After(deadline) {
			t.Fatalf("the pinned server's prompts never came: %v", promptNames(t, c))
		}
		time.Sleep(20 * time.Millisecond)
	}
	checkOffers(t, c, "fx")

	updated := make(chan string, 1)
	c.OnNotification(func(n mcp.JSONRPCNotification) {
		if n.Method == mcp.MethodNotificationResourceUpdated {
			updated <- fmt.Sprint(n.Params.AdditionalFields["uri"])
		}
	})
	if err := c.Subscribe(context.Background(), mcp.SubscribeRequest{Params: mcp.SubscribeParams{URI: "test://watched-resource"}}); err != nil {
		t.Fatalf("subscribe: %v", err)
	}
	req := mcp.CallToolRequest{}
	// touch has the server say the resource changed, and the client
	// hears it.
	touch := func(when string) {
		t.Helper()
		req.Params.Name, req.Params.Arguments = "mcp_fx__touch", map[string]any{"uri": "test://watched-resource"}
		if res, err := c.CallTool(context.Background(), req); err != nil || firstText(res) != "updated" {
			t.Fatalf("touch %s: %v %v", when, res, err)
		}
		select {
		case uri := <-updated:
			if uri != "test://watched-resource" {
				t.Fatalf("resources/updated of %q %s", uri, when)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("no resources/updated over stdio %s", when)
		}
	}
	touch("subscribed")

	// The server dies; the next call starts it again, subscribed anew
	// before the call goes on.
	req.Params.Name, req.Params.Arguments = "mcp_fx__crash", map[string]any{}
	if res, err := c.CallTool(context.Background(), req); err != nil || !res.IsError {
		t.Fatalf("crash: %v %v", res, err)
	}
	touch("at the server started again")
}

// checkOffers checks what the fixture attached under each of names
// offers through the gateway.
func checkOffers(t *testing.T, c *client.Client, names ...string) {
	t.Helper()
	got := promptNames(t, c)
	for _, n := range names {
		if !slices.Contains(got, "mcp_"+n+"__greet") {
			t.Fatalf("prompts: %v; want mcp_%s__greet", got, n)
		}
		if text := promptText(t, c, "mcp_"+n+"__greet", map[string]string{"name": "Bob"}); text != "Hello, Bob!" {
			t.Fatalf("mcp_%s__greet: %q", n, text)
		}
	}
	ctx := context.Background()
	list, err := c.ListResources(ctx, mcp.ListResourcesRequest{})
	i := slices.IndexFunc(list.Resources, func(r mcp.Resource) bool { return r.URI == "fixture://readme" })
	if err != nil || len(list.Resources) != 4 || i < 0 || list.Resources[i].Description != "The fixture's readme." {
		t.Fatalf("resources: %+v %v; want the fixture's four, each once, as the server lists them", list, err)
	}
	templates, err := c.ListResourceTemplates(ctx, mcp.ListResourceTemplatesRequest{})
	if err != nil || len(templates.ResourceTemplates) != 3 || !slices.ContainsFunc(templates.ResourceTemplates, func(r mcp.ResourceTemplate) bool {
		return r.URITemplate.Raw() == "fixture://items/{id}"
	}) {
		t.Fatalf("templates: %+v %v; want the fixture's three, each once", templates, err)
	}
	if text := readText(t, c, "fixture://readme"); text != mcpfixture.ReadmeText {
		t.Fatalf("fixture://readme: %q", text)
	}
	if text := readText(t, c, "fixture://items/7"); text != "item 7" {
		t.Fatalf("fixture://items/7, by the template: %q", text)
	}

	// What is wrong is said, as JSON-RPC errors the client can act on.
	for _, bad := range []struct {
		name string
		err  error
		want string
	}{
		{"unknown prompt", getPrompt(c, "mcp_nobody__greet", nil), "prompts/list gives"},
		{"no name", getPrompt(c, "", nil), "needs params.name"},
		{"the server's own error", getPrompt(c, "mcp_"+names[0]+"__greet", nil), names[0] + ": "},
		{"no uri", readErr(c, ""), "needs params.uri"},
	} {
		if bad.err == nil || !strings.Contains(bad.err.Error(), bad.want) {
			t.Errorf("%s: %v; want an error saying %q", bad.name, bad.err, bad.want)
		}
	}
	if len(names) > 1 {
		err := readErr(c, "other://x")
		if !errors.Is(err, mcp.ErrResourceNotFound) || !strings.Contains(err.Error(), strings.Join(names, ", ")) {
			t.Errorf("a URI no server lists nor matches: %v; want resource not found, naming %v", err, names)
		}
	}
	// Completion of a prompt's argument, at the server of the prompt; of
	// a template's, at the server of the template (which completes none).
	done, err := c.Complete(ctx, completeReq(mcp.PromptReference{Type: "ref/prompt", Name: "mcp_" + names[0] + "__greet"}, "B"))
	if err != nil || !slices.Equal(done.Completion.Values, []string{"Bea", "Bob"}) {
		t.Errorf("completion of greet's name: %+v %v; want Bea and Bob", done, err)
	}
	if done, err := c.Complete(ctx, completeReq(mcp.ResourceReference{Type: "ref/resource", URI: "fixture://items/{id}"}, "1")); err != nil || len(done.Completion.Values) != 0 {
		t.Errorf("completion of a template's argument: %+v %v; want none", done, err)
	}
	if _, err := c.Complete(ctx, completeReq(mcp.PromptReference{Type: "ref/prompt", Name: "nope"}, "B")); err == nil || !strings.Contains(err.Error(), "prompts/list gives") {
		t.Errorf("completion for an unknown prompt: %v", err)
	}
	// A cursor is refused: the lists come in one page.
	if _, err := c.ListPrompts(ctx, mcp.ListPromptsRequest{PaginatedRequest: mcp.PaginatedRequest{Params: mcp.PaginatedParams{Cursor: "x"}}}); err == nil || !strings.Contains(err.Error(), "one page") {
		t.Errorf("prompts/list with a cursor: %v", err)
	}
}

func promptNames(t *testing.T, c *client.Client) []string {
	t.Helper()
	res, err := c.ListPrompts(context.Background(), mcp.ListPromptsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range res.Prompts {
		names = append(names, p.Name)
	}
	return names
}

func getPrompt(c *client.Client, name string, args map[string]string) error {
	req := mcp.GetPromptRequest{}
	req.Params.Name, req.Params.Arguments = name, args
	_, err := c.GetPrompt(context.Background(), req)
	return err
}

func promptText(t *testing.T, c *client.Client, name string, args map[string]string) string {
	t.Helper()
	req := mcp.GetPromptRequest{}
	req.Params.Name, req.Params.Arguments = name, args
	res, err := c.GetPrompt(context.Background(), req)
	if err != nil {
		t.Fatalf("prompts/get %s: %v", name, err)
	}
	if len(res.Messages) != 1 {
		t.Fatalf("prompts/get %s: %+v", name, res)
	}
	text, _ := res.Messages[0].Content.(mcp.TextContent)
	return text.Text
}

func readReq(uri string) mcp.ReadResourceRequest {
	req := mcp.ReadResourceRequest{}
	req.Params.URI = uri
	return req
}

func readErr(c *client.Client, uri string) error {
	_, err := c.ReadResource(context.Background(), readReq(uri))
	return err
}

func readText(t *testing.T, c *client.Client, uri string) string {
	t.Helper()
	res, err := c.ReadResource(context.Background(), readReq(uri))
	if err != nil {
		t.Fatalf("resources/read %s: %v", uri, err)
	}
	if len(res.Contents) != 1 {
		t.Fatalf("resources/read %s: %+v", uri, res)
	}
	text, _ := res.Contents[0].(mcp.TextResourceContents)
	return text.Text
}

// count is how many notifications of method the session heard.
func (s *clientSession) count(method mcp.MCPMethod) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, note := range s.notes {
		if note.Method == string(method) {
			n++
		}
	}
	return n
}

// waitNote waits until the session heard at least n notifications of
// method.
func waitNote(t *testing.T, s *clientSession, method mcp.MCPMethod, n int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for s.count(method) < n {
		if time.Now().After(deadline) {
			t.Fatalf("heard %d %s, want %d", s.count(method), method, n)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func completeReq(ref any, value string) mcp.CompleteRequest {
	req := mcp.CompleteRequest{}
	req.Params.Ref = ref
	req.Params.Argument.Name, req.Params.Argument.Value = "name", value
	return req
}

// Over stdio, raw frames: a read the client cancels stops at once, gets no
// answer, and its server hears the client's reason; a method spelled with
// escapes is answered as it is without them; a request whose members the
// door cannot read one way is refused, not answered as if the session
// had no prompts; a cursor asking for the first page is taken.
func TestOffersRawStdio(t *testing.T) {
	c := rawStdio(t, New(pinnedFixture(buildFixture(t), 20*time.Second), quietLog, Options{Version: "test"}))
	c.caller(t, `"mcp_fx__echo","arguments":{"message":"ready?"}`, `"text":"ready?"`)
	send := func(frame string) {
		t.Helper()
		if _, err := c.w.Write([]byte(frame + "\n")); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct{ name, frame, want string }{
		{"escaped method", `{"jsonrpc":"2.0","id":31,"method":"prompts\/list"}`, `"name":"mcp_fx__greet"`},
		{"escaped read", `{"jsonrpc":"2.0","id":32,"method":"resources\u002fread","params":{"uri":"fixture://readme"}}`, `"text":"The fixture's readme."`},
		{"member in two cases", `{"jsonrpc":"2.0","id":33,"Id":34,"method":"prompts/list"}`, `"code":-32600`},
		{"first page", `{"jsonrpc":"2.0","id":35,"method":"resources/list","params":{"cursor":null}}`, `"uri":"fixture://readme"`},
	} {
		if got := c.roundTrip(t, []byte(tc.frame+"\n")); !bytes.Contains(got, []byte(tc.want)) {
			t.Errorf("%s: %.300s; want %s", tc.name, got, tc.want)
		}
	}

	send(`{"jsonrpc":"2.0","id":41,"method":"resources/read","params":{"uri":"fixture://slow/30000"}}`)
	time.Sleep(100 * time.Millisecond) // on its way to the server
	send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":41,"reason":"stop the read"}}`)
	heard := []byte(`{"jsonrpc":"2.0","id":42,"method":"tools/call","params":{"name":"mcp_fx__cancellations","arguments":{}}}` + "\n")
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		got := c.roundTrip(t, heard) // an answer to 41 would come first, and fail this
		if !bytes.Contains(got, []byte(`"id":42`)) {
			t.Fatalf("an answer to another request: %.300s", got)
		}
		if bytes.Contains(got, []byte("stop the read")) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the server never heard the read was cancelled: %.300s", got)
		}
	}
}

// Over HTTP, a read the client cancels ends at once, its POST an event
// stream with no message, as a cancelled call's.
func TestOfferCancelledHTTP(t *testing.T) {
	const urn = "urn:air:ardgate.test:mcp:one"
	tg := newGateway(t, 20*time.Second, remoteEntry(urn, upstream(t).URL))
	s := tg.connect(t)
	if res := s.call("attach_resource", map[string]any{"urn": urn}); res.IsError {
		t.Fatalf("attach: %s", firstText(res))
	}
	post := func(body string) (*http.Response, error) { return s.post(tg.url, body) }
	type answer struct {
		contentType, body string
		took              time.Duration
	}
	done := make(chan answer, 1)
	start := time.Now()
	go func() {
		resp, err := post(`{"jsonrpc":"2.0","id":"r1","method":"resources/read","params":{"uri":"fixture://slow/30000"}}`)
		if err != nil {
			done <- answer{body: err.Error()}
			return
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		done <- answer{resp.Header.Get("Content-Type"), string(b), time.Since(start)}
	}()
	waitFastCall(t, tg.g, s.c.GetSessionId())
	resp, err := post(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"r1","reason":"enough"}}`)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	select {
	case a := <-done:
		if !strings.HasPrefix(a.contentType, "text/event-stream") || strings.Contains(a.body, "data:") {
			t.Fatalf("the cancelled read was answered: %s %q after %s", a.contentType, a.body, a.took)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the cancelled read went on")
	}
	if got := readText(t, s.c, "fixture://readme"); got != mcpfixture.ReadmeText {
		t.Fatalf("a read after it: %q", got)
	}
}

// A list the server fails to give when it is listed again (its answer over
// the 4 MiB a list may take) stays as it was; the others are listed anew.
func TestOfferListKeptOnFailure(t *testing.T) {
	t.Parallel()
	const urn = "urn:air:ardgate.test:mcp:one"
	tg := newGateway(t, 20*time.Second, remoteEntry(urn, upstream(t).URL))
	s := tg.connect(t, transport.WithContinuousListening())
	if res := s.call("attach_resource", map[string]any{"urn": urn}); res.IsError {
		t.Fatalf("attach: %s", firstText(res))
	}
	before := s.count(mcp.MethodNotificationPromptsListChanged)
	// A resource whose URI and name hold 3 MiB each: the server's list of
	// resources is over the 4 MiB a list may take, its list of prompts
	// (one name) is not.
	if res := s.call("mcp_one__offer", map[string]any{"name": strings.Repeat("n", 3<<20)}); res.IsError {
		t.Fatalf("offer: %s", firstText(res))
	}
	waitNote(t, s, mcp.MethodNotificationPromptsListChanged, before+1)
	if got := promptNames(t, s.c); len(got) != 2 {
		t.Fatalf("prompts: %d; want greet and the one added", len(got))
	}
	list, err := s.c.ListResources(context.Background(), mcp.ListResourcesRequest{})
	if err != nil || len(list.Resources) != 4 {
		t.Fatalf("resources after a listing over the cap: %d %v; want the four listed before", len(list.Resources), err)
	}
}

// A subscription through the connection that every session of a stateless
// server shares is refused: it would be every session's, and its updates
// no one's.
func TestSubscribeSharedRefused(t *testing.T) {
	pinned := []config.Server{{Name: "fx", URL: upstream(t).URL, Stateless: true}}
	s := newGatewayWith(t, 10*time.Second, Options{Version: "test"}, HTTPOptions{}, pinned).connect(t)
	waitPinned(t, s, "mcp_fx__echo")
	err := s.c.Subscribe(context.Background(), mcp.SubscribeRequest{Params: mcp.SubscribeParams{URI: "test://watched-resource"}})
	if err == nil || !strings.Contains(err.Error(), "all sessions share") {
		t.Fatalf("subscribe through a shared connection: %v", err)
	}
}
