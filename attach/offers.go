package attach

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unique"

	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/tracing"
	"github.com/yosida95/uritemplate/v3"

	"github.com/ardgate/ardgate/guard/jsonrpc"
)

// What an MCP server offers beside its tools: prompts, resources and
// resource templates. The gateway lists them when the server is attached
// (if it declared them), again when it says they changed, and serves
// them to the session's client: prompts under exposed names,
// mcp_<attachment>__<prompt>, as tools are named; resources under their
// own URIs, which tool results link to and which cannot be renamed
// without breaking those links. A read or a subscription goes to the
// server that listed the URI, or whose template matches it; a completion
// to the server of the prompt or template it names.

// Sentinel errors of prompts and resources.
var (
	ErrUnknownPrompt   = errors.New("no attached server has this prompt")
	ErrUnknownResource = errors.New("no attached server has this resource")
	ErrInvalidRef      = errors.New("invalid completion reference")
	ErrNoSubscriptions = errors.New("takes no subscriptions to its resources")
	ErrNotSubscribed   = errors.New("this session has no subscription to it (any it had went with its server's detach)")
)

// Prompt is one upstream prompt as the session exposes it.
type Prompt struct {
	// Name is the exposed name, mcp_<attachment>__<prompt>.
	Name string
	// Upstream is the server's name for it.
	Upstream string
	// Listed is the server's definition under the exposed name, as
	// prompts/list lists it.
	Listed json.RawMessage
}

// Resource is one resource, or resource template, of an attached server,
// as the server listed it.
type Resource struct {
	// URI is the resource's uri, or the template's uriTemplate.
	URI    string
	Listed json.RawMessage
}

// AnswerError is a JSON-RPC error a server answered a request with; the
// client gets its code and message.
type AnswerError struct {
	Server  string
	Method  string
	Code    int
	Message string
}

func (e *AnswerError) Error() string {
	return fmt.Sprintf("%s answered %s with an error (%d): %s", e.Server, e.Method, e.Code, e.Message)
}

// offers are what an upstream offers beside its tools, as it last listed
// them, each list in the server's order.
type offers struct {
	prompts   []offer
	resources []offer
	templates []offer
}

// offer is one listed prompt, resource or template. Both are interned:
// the sessions that attached the same server share one copy of each
// definition, as they share its tools' (tooldefs.go).
type offer struct {
	key string // name, uri or uriTemplate
	raw unique.Handle[string]
}

// json is the offer's definition as the server listed it.
func (o offer) json() json.RawMessage { return json.RawMessage(o.raw.Value()) }

// matches tells whether uri is one of template t's. A template is parsed
// only here, for a read no listed URI serves: parsed at each listing,
// templates took a tenth of a session's heap (the sessions bench).
func (t offer) matches(uri string) bool {
	tmpl, err := uritemplate.New(t.key)
	return err == nil && tmpl.Match(uri) != nil
}

// maxOffers bounds each list of one server, as maxTools bounds its tools.
const maxOffers = 1000

// listOffers lists what the server declared it offers beside tools, the
// lists at once, and keeps it. A list the server fails to give is logged
// and stays as it was (empty at first): a server's tools are not lost to
// its prompts, nor a list to one answer over the cap.
func (u *upstream) listOffers(ctx context.Context) {
	o, was := &offers{}, u.offered.Load()
	if was == nil {
		was = &offers{}
	}
	lists := []struct {
		on                  bool
		method, member, key string
		into                *[]offer
		was                 []offer
	}{
		{u.hasPrompts, string(mcp.MethodPromptsList), "prompts", "name", &o.prompts, was.prompts},
		{u.hasResources, string(mcp.MethodResourcesList), "resources", "uri", &o.resources, was.resources},
		{u.hasResources, string(mcp.MethodResourcesTemplatesList), "resourceTemplates", "uriTemplate", &o.templates, was.templates},
	}
	var wg sync.WaitGroup
	for _, l := range lists {
		if !l.on {
			continue
		}
		wg.Go(func() {
			list, err := u.listAll(ctx, l.method, l.member, l.key)
			var answer *AnswerError
			switch {
			case errors.As(err, &answer) && answer.Code == mcp.METHOD_NOT_FOUND:
				// Many servers of resources have no templates.
			case err != nil && ctx.Err() != nil:
				list = l.was // the session ended, or the attach was cancelled
			case err != nil:
				u.log.Warn("a list of the server's was not read; the session keeps the one it had", "method", l.method, "had", len(l.was), "err", err)
				list = l.was
			}
			*l.into = list
		})
	}
	wg.Wait()
	u.offered.Store(o)
}

// listAll reads every page of a list: member is the result's array, key
// the member of each item that names it (a string). Items without one
// are left out, logged.
func (u *upstream) listAll(ctx context.Context, method, member, key string) ([]offer, error) {
	var out []offer
	var cursor mcp.Cursor
	size := 0
	for page := 0; page < maxOffers; page++ {
		params := map[string]any{}
		if cursor != "" {
			params["cursor"] = cursor
		}
		res, err := u.request(ctx, method, params)
		if err != nil {
			return nil, err
		}
		items, next, err := listPage(res, member)
		if err == nil {
			err = jsonrpc.ScanCheckedArray(items, func(raw []byte) {
				if size += len(raw); size > maxListBytes {
					return
				}
				if name := memberString(raw, key); name != "" {
					out = append(out, offer{key: unique.Make(name).Value(), raw: unique.Make(string(raw))})
				} else {
					u.log.Warn("an item of the server's list left out: it has no "+key, "method", method)
				}
			})
		}
		if err != nil {
			return nil, fmt.Errorf("%s: malformed result: %w", method, err)
		}
		if len(out) > maxOffers {
			return nil, fmt.Errorf("%s: more than %d items", method, maxOffers)
		}
		if size > maxListBytes {
			return nil, fmt.Errorf("%s: its items take more than %d MiB", method, maxListBytes>>20)
		}
		if next == "" || next == cursor {
			return out, nil
		}
		cursor = next
	}
	return nil, fmt.Errorf("%s: more than %d pages", method, maxOffers)
}

// memberString is the string obj, a checked JSON value, holds in member
// key; "" when it is not an object, or has no such string.
func memberString(obj []byte, key string) string {
	var s string
	if !jsonrpc.IsObject(obj) {
		return ""
	}
	_ = jsonrpc.ScanCheckedObject(obj, func(name, value []byte) {
		if string(name) == key && json.Unmarshal(value, &s) != nil {
			s = ""
		}
	})
	return s
}

// request sends one request to the server and returns its result object;
// an error answer is an *AnswerError. params are a map of values or of
// JSON. With tracing on, the request is a client span, whose context goes
// in its _meta and, over HTTP, its headers.
func (u *upstream) request(ctx context.Context, method string, params any) (res json.RawMessage, err error) {
	if why := u.downReason(); why != "" {
		return nil, fmt.Errorf("%w: %s", ErrUpstreamDown, why)
	}
	req := transport.JSONRPCRequest{JSONRPC: mcp.JSONRPC_VERSION, Method: method, Params: params,
		ID: mcp.NewRequestId("ardgate-" + strconv.FormatUint(u.rawIDs.Add(1), 10))}
	if u.trace != nil {
		var span tracing.Span
		var meta map[string]any
		ctx, span, meta = u.trace.start(ctx, method)
		defer func() { endSpan(span, err) }()
		req.Params, req.Header = withMeta(params, meta), u.trace.header(ctx)
	}
	id := req.ID
	resp, err := u.client.GetTransport().SendRequest(ctx, req)
	if err != nil {
		if ctx.Err() != nil {
			u.cancelRequest(context.Cause(ctx).Error(), id)
		}
		return nil, u.failure(u.whyCut(transport.NewError(err)))
	}
	if resp.Error != nil {
		return nil, &AnswerError{Method: method, Code: resp.Error.Code, Message: resp.Error.Message}
	}
	if !jsonrpc.IsObject(resp.Result) {
		return nil, fmt.Errorf("the server answered %s with a result that is not a JSON object", method)
	}
	return resp.Result, nil
}

// withMeta is params with fields added to its _meta.
func withMeta(params any, fields map[string]any) any {
	if len(fields) == 0 {
		return params
	}
	switch p := params.(type) {
	case map[string]any:
		p = maps.Clone(p)
		meta, _ := p["_meta"].(map[string]any)
		meta = maps.Clone(meta)
		if meta == nil {
			meta = map[string]any{}
		}
		maps.Copy(meta, fields)
		p["_meta"] = meta
		return p
	case map[string]json.RawMessage:
		p = maps.Clone(p)
		meta := map[string]json.RawMessage{}
		_ = json.Unmarshal(p["_meta"], &meta) // the client's, an object or absent
		for k, v := range fields {
			meta[k], _ = json.Marshal(v)
		}
		p["_meta"], _ = json.Marshal(meta)
		return p
	}
	return params
}

// offered returns what a's server offers beside tools; nil for an agent,
// or a server not started.
func (a *Attachment) offered() *offers {
	a.mu.Lock()
	up := a.up
	a.mu.Unlock()
	if up == nil {
		return nil
	}
	return up.offered.Load()
}

// OfferCounts returns how many prompts, resources and resource templates
// a's server offers.
func (a *Attachment) OfferCounts() (prompts, resources, templates int) {
	if o := a.offered(); o != nil {
		return len(o.prompts), len(o.resources), len(o.templates)
	}
	return 0, 0, 0
}

// prompts are a's server's prompts under exposed names, given in the
// server's name order as tools are, so they are the same on every attach.
// They are made once per listing of the server's.
func (a *Attachment) prompts() []Prompt {
	o := a.offered()
	if o == nil {
		return nil
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.promptsOf != o {
		a.promptsOf, a.exposedPrompts = o, a.exposePrompts(o)
	}
	return a.exposedPrompts
}

// exposePrompts names o's prompts for the session.
func (a *Attachment) exposePrompts(o *offers) []Prompt {
	out := make([]Prompt, 0, len(o.prompts))
	eachNamed(&a.promptNames, a.Name, slices.Clone(o.prompts), func(p offer) string { return p.key }, func(p offer, name string) {
		if listed, err := renamed(p.json(), "name", name); err == nil { // read as an object when listed
			out = append(out, Prompt{Name: name, Upstream: p.key, Listed: listed})
		}
	})
	return out
}

// renamed is obj with its member key set to name.
func renamed(obj json.RawMessage, key, name string) (json.RawMessage, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(obj, &m); err != nil {
		return nil, err
	}
	m[key], _ = json.Marshal(name)
	return json.Marshal(m)
}

// Prompts returns the prompts of the session's MCP servers, under their
// exposed names, attachment by attachment.
func (s *Session) Prompts() []Prompt {
	var out []Prompt
	for _, a := range s.Attachments() {
		out = append(out, a.prompts()...)
	}
	return out
}

// Resources returns the resources of the session's MCP servers, as they
// listed them. A URI that two servers list is given once, as the first
// attached lists it: a read of it goes there.
func (s *Session) Resources() []Resource {
	return s.resources(func(o *offers) []offer { return o.resources })
}

// ResourceTemplates returns the resource templates of the session's MCP
// servers, as they listed them.
func (s *Session) ResourceTemplates() []Resource {
	return s.resources(func(o *offers) []offer { return o.templates })
}

func (s *Session) resources(of func(*offers) []offer) []Resource {
	var out []Resource
	seen := map[string]bool{}
	for _, a := range s.Attachments() {
		o := a.offered()
		if o == nil {
			continue
		}
		for _, r := range of(o) {
			if !seen[r.key] {
				seen[r.key] = true
				out = append(out, Resource{URI: r.key, Listed: r.json()})
			}
		}
	}
	return out
}

// GetPrompt gets the prompt of that exposed name from its server, with
// params (the client's prompts/get params, its name aside) passed on.
func (s *Session) GetPrompt(ctx context.Context, name string, params map[string]json.RawMessage) (json.RawMessage, error) {
	for _, a := range s.Attachments() {
		for _, p := range a.prompts() {
			if p.Name != name {
				continue
			}
			params = maps.Clone(params)
			if params == nil {
				params = map[string]json.RawMessage{}
			}
			params["name"], _ = json.Marshal(p.Upstream)
			return s.ask(ctx, a, "prompt "+p.Upstream, string(mcp.MethodPromptsGet), params)
		}
	}
	return nil, s.noPrompt(name)
}

// noPrompt says why no attached server has the prompt of that exposed
// name: the server it names is down or still starting (whose prompts are
// not known), or there is none.
func (s *Session) noPrompt(name string) error {
	for _, a := range s.Attachments() {
		if !strings.HasPrefix(name, "mcp_"+a.Name+"__") {
			continue
		}
		switch status, why := a.Status(); status {
		case StatusStarting:
			return fmt.Errorf("%s is still starting; try again shortly", a.Name)
		case StatusDown:
			return fmt.Errorf("%s: %w: %s", a.Name, ErrUpstreamDown, why)
		}
	}
	return fmt.Errorf("%q: %w", name, ErrUnknownPrompt)
}

// noCompletions answers a completion/complete that no server is asked.
var noCompletions = json.RawMessage(`{"completion":{"values":[]}}`)

// Complete asks the server of the prompt or resource template that
// params.ref names for completions of an argument, with the client's
// params (a prompt's name in ref given as the server's). A server that
// offers no completions is not asked: the answer is none.
func (s *Session) Complete(ctx context.Context, params map[string]json.RawMessage) (json.RawMessage, error) {
	var r completionRef
	if err := r.read(params["ref"]); err != nil {
		return nil, err
	}
	var a *Attachment
	var err error
	switch r.kind {
	case "ref/prompt":
		a, err = s.promptCompleter(&r)
	case "ref/resource":
		a, err = s.templateCompleter(r.uri)
	default:
		err = fmt.Errorf("%w: ref.type %q is neither ref/prompt nor ref/resource", ErrInvalidRef, r.kind)
	}
	if err != nil {
		return nil, err
	}
	a.mu.Lock()
	asked := a.up != nil && a.up.hasCompletions
	a.mu.Unlock()
	if !asked {
		return noCompletions, nil
	}
	params = maps.Clone(params)
	params["ref"], _ = json.Marshal(r.ref)
	return s.ask(ctx, a, "completion/complete", string(mcp.MethodCompletionComplete), params)
}

// completionRef is a completion/complete's params.ref: its members as
// the client sent them, and its type, name and uri read.
type completionRef struct {
	ref             map[string]json.RawMessage
	kind, name, uri string
}

// read reads raw into r, and refuses a ref that names neither a prompt
// nor a resource template.
func (r *completionRef) read(raw json.RawMessage) error {
	if json.Unmarshal(raw, &r.ref) != nil || json.Unmarshal(r.ref["type"], &r.kind) != nil {
		return fmt.Errorf("%w: params.ref must be an object with a type", ErrInvalidRef)
	}
	_ = json.Unmarshal(r.ref["name"], &r.name)
	_ = json.Unmarshal(r.ref["uri"], &r.uri)
	switch {
	case r.kind == "ref/prompt" && r.name == "":
		return fmt.Errorf("%w: a ref/prompt needs ref.name, a prompt's name (prompts/list gives them)", ErrInvalidRef)
	case r.kind == "ref/resource" && r.uri == "":
		return fmt.Errorf("%w: a ref/resource needs ref.uri, a resource template's (resources/templates/list gives them)", ErrInvalidRef)
	}
	return nil
}

// promptCompleter is the server of the prompt r names, r's name then
// given as the server's.
func (s *Session) promptCompleter(r *completionRef) (*Attachment, error) {
	for _, att := range s.Attachments() {
		ps := att.prompts()
		if i := slices.IndexFunc(ps, func(p Prompt) bool { return p.Name == r.name }); i >= 0 {
			r.ref = maps.Clone(r.ref)
			r.ref["name"], _ = json.Marshal(ps[i].Upstream)
			return att, nil
		}
	}
	return nil, s.noPrompt(r.name)
}

// templateCompleter is the server that listed the resource or template
// uri, else the one that serves uri (resourceServer).
func (s *Session) templateCompleter(uri string) (*Attachment, error) {
	for _, att := range s.Attachments() {
		if o := att.offered(); o != nil && slices.ContainsFunc(slices.Concat(o.templates, o.resources), func(r offer) bool { return r.key == uri }) {
			return att, nil
		}
	}
	return s.resourceServer(uri) // a URI of a template's, say
}

// ReadResource reads the resource at uri from the server that serves it:
// the one that listed it, else the one whose template matches it, else
// the only attached server that offers resources. params (the client's
// resources/read params) are passed on as they came.
func (s *Session) ReadResource(ctx context.Context, uri string, params map[string]json.RawMessage) (json.RawMessage, error) {
	a, err := s.resourceServer(uri)
	if err != nil {
		return nil, err
	}
	return s.ask(ctx, a, "resource "+uri, string(mcp.MethodResourcesRead), params)
}

// Subscribe subscribes the session to updates of the resource at uri, at
// the server that serves it (as ReadResource finds it), with the client's
// params. Its notifications/resources/updated of uri then reach
// OnUpdated.
func (s *Session) Subscribe(ctx context.Context, uri string, params map[string]json.RawMessage) (json.RawMessage, error) {
	a, err := s.resourceServer(uri)
	if err != nil {
		return nil, err
	}
	a.mu.Lock()
	up := a.up
	a.mu.Unlock()
	switch {
	case up == nil || !up.subscribes:
		return nil, fmt.Errorf("%s %w: read %s again to see it change", a.Name, ErrNoSubscriptions, uri)
	case a.release != nil:
		// A subscription on the connection every session shares would be
		// every session's, and its updates no one's.
		return nil, fmt.Errorf("%s %w through the connection all sessions share (stateless in the gateway's config): read %s again to see it change", a.Name, ErrNoSubscriptions, uri)
	}
	res, err := s.ask(ctx, a, "subscription to "+uri, string(mcp.MethodResourcesSubscribe), params)
	if err != nil {
		return nil, err
	}
	up.listen() // a streamable HTTP server says it between calls
	s.mu.Lock()
	if s.subs == nil {
		s.subs = map[string]*Attachment{}
	}
	s.subs[uri] = a
	s.mu.Unlock()
	return res, nil
}

// Unsubscribe ends the session's subscription to the resource at uri, at
// the server that took it.
func (s *Session) Unsubscribe(ctx context.Context, uri string, params map[string]json.RawMessage) (json.RawMessage, error) {
	s.mu.Lock()
	a := s.subs[uri]
	delete(s.subs, uri)
	s.mu.Unlock()
	if a == nil {
		return nil, fmt.Errorf("%q: %w", uri, ErrNotSubscribed)
	}
	return s.ask(ctx, a, "subscription to "+uri, string(mcp.MethodResourcesUnsubscribe), params)
}

// subscribedAt is what the session subscribed to at a's server. s.mu is
// held.
func (s *Session) subscribedAt(a *Attachment) []string {
	var uris []string
	for uri, at := range s.subs {
		if at == a {
			uris = append(uris, uri)
		}
	}
	return uris
}

// resubscribe subscribes the session anew to uris at a's server, started
// or reached again (revive), where it had subscribed to them, before the
// call that revived it goes on; one the server refuses now is dropped.
func (s *Session) resubscribe(ctx context.Context, a *Attachment, uris []string) {
	for _, uri := range uris {
		params, _ := json.Marshal(map[string]string{"uri": uri})
		if _, err := s.ask(ctx, a, "subscription to "+uri, string(mcp.MethodResourcesSubscribe), json.RawMessage(params)); err != nil {
			s.m.Log.Warn("a subscription was lost when its server came back", "session", s.ID, "upstream", a.Name, "uri", uri, "err", err)
			s.mu.Lock()
			if s.subs[uri] == a {
				delete(s.subs, uri)
			}
			s.mu.Unlock()
		}
	}
	a.mu.Lock()
	up := a.up
	a.mu.Unlock()
	if up != nil {
		up.listen() // a streamable HTTP server says it between calls
	}
}

// updated passes on a's notice that its resource at uri was updated, when
// the session subscribed to it there.
func (s *Session) updated(a *Attachment, uri string) {
	s.mu.Lock()
	subscribed := s.subs[uri] == a
	s.mu.Unlock()
	if subscribed && s.OnUpdated != nil {
		s.OnUpdated(uri)
	}
}

// resourceServer finds the attachment that serves uri.
func (s *Session) resourceServer(uri string) (*Attachment, error) {
	atts := s.Attachments()
	var offering []*Attachment
	for _, a := range atts {
		if o := a.offered(); o != nil && slices.ContainsFunc(o.resources, func(r offer) bool { return r.key == uri }) {
			return a, nil
		}
	}
	for _, a := range atts {
		o := a.offered()
		if o == nil {
			continue
		}
		if slices.ContainsFunc(o.templates, func(t offer) bool { return t.matches(uri) }) {
			return a, nil
		}
		if len(o.resources) > 0 || len(o.templates) > 0 || a.hasResources() {
			offering = append(offering, a)
		}
	}
	switch len(offering) {
	case 0:
		return nil, fmt.Errorf("%q: %w: no server attached to this session offers resources", uri, ErrUnknownResource)
	case 1:
		return offering[0], nil // a URI a tool result linked to, say
	}
	names := make([]string, len(offering))
	for i, a := range offering {
		names[i] = a.Name
	}
	return nil, fmt.Errorf("%q: %w: none of %s lists it or has a template that matches it", uri, ErrUnknownResource, strings.Join(names, ", "))
}

// hasResources tells whether a's server declared it offers resources.
func (a *Attachment) hasResources() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.up != nil && a.up.hasResources
}

// ask sends a request of the client's to a's server within a call's time
// limits, and returns its result.
func (s *Session) ask(ctx context.Context, a *Attachment, what, method string, params any) (json.RawMessage, error) {
	var res json.RawMessage
	err := s.run(ctx, a, what, nil, func(ctx context.Context, up *upstream, _ string) (err error) {
		res, err = up.request(ctx, method, params)
		var answer *AnswerError
		if errors.As(err, &answer) {
			answer.Server = a.Name
		}
		return err
	})
	return res, err
}
