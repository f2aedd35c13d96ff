package attach

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/tracing"

	"github.com/ardgate/ardgate/attach/fault"
	"github.com/ardgate/ardgate/attach/mcpwire"
	"github.com/ardgate/ardgate/config"
	"github.com/ardgate/ardgate/guard"
	"github.com/ardgate/ardgate/guard/jsonrpc"
)

// upstream is one live connection to an MCP server. For stdio servers it
// owns the child process: it starts it, reaps it, and kills its group.
type upstream struct {
	client    *client.Client
	transport transport.Interface // the client's
	log       *slog.Logger
	// requests, when not nil, is what the server was told of the
	// session's client, whose requests it may make (client_requests.go).
	requests *clientRequests
	// unset are the variables its launch may need and has not
	// (Plan.Unset), said when it fails to start.
	unset []string
	// framing is a stdio server's (Plan.Framing).
	framing string
	// answered: the server answered its initialize; before, an npx or
	// uvx may still be installing it (close).
	answered atomic.Bool
	// wrote: a stdio server wrote something on its stdout; a start that
	// timed out with nothing written may be one that waits for a
	// Content-Length header.
	wrote atomic.Bool
	// relaying stops the server's requests on their way to the client,
	// by their ids' JSON; cancelledEarly are the ids it cancelled before
	// their requests got there. Guarded by mu.
	relaying       map[string]relayed
	cancelledEarly map[string]bool
	// waiting holds the server's calls while its requests are relayed
	// (clock.go).
	waiting mcpwire.ClientWait

	cmd    *exec.Cmd     // nil for remotes
	tree   *guard.Tree   // cmd's processes
	exited chan struct{} // closed once a stdio child has exited and been reaped
	stdout io.Closer     // our end of the child's stdout
	stderr *tail
	lines  *stderrLines
	// memoryMiB is the memory limit its processes run under, if any, for
	// what a failure says.
	memoryMiB int

	rawIDs atomic.Uint64   // ids of callRaw's requests and progress tokens
	pipe   *mcpwire.Pipe   // a stdio server's transport; nil for remotes
	post   *mcpwire.Poster // a streamable HTTP server's proxied calls
	trace  *CallTracing    // nil while tracing is off

	mu       sync.Mutex
	downWhy  string // why the upstream is down; "" while up
	progress map[string]func(mcp.JSONRPCNotification)

	// onListsChanged runs when the server says its tools, prompts or
	// resources changed, on a goroutine of its own and one run at a time
	// (listsChanged). Both are guarded by mu.
	onListsChanged func()
	refreshing     refreshState
	// listsChange is whether the server declared it says so.
	listsChange bool

	// hasPrompts, hasResources, hasCompletions and subscribes (to its
	// resources): the server declared them; offered is what it last
	// listed of them (offers.go).
	hasPrompts, hasResources, hasCompletions, subscribes bool
	offered                                              atomic.Pointer[offers]
	// instructions are the server's, from its initialize result, made fit
	// to show a model.
	instructions string

	// onLog hears the server's log messages; guarded by mu. logs is
	// whether the server declared it logs (logging.go).
	onLog func(LogMessage)
	logs  bool
	// onUpdated hears the URIs of notifications/resources/updated;
	// guarded by mu.
	onUpdated func(uri string)
	// listening: the gateway listens to the streamable HTTP server between
	// calls (mcpwire/listen.go), as it said it sends tools/list_changed, or logs
	// to a client that set a level.
	listening atomic.Bool
	// levelWant is the log level the server should have (guarded by
	// levelMu), levelSent the last it was told (guarded by levelSend,
	// held while it is told).
	levelMu   sync.Mutex
	levelWant mcp.LoggingLevel
	levelSend sync.Mutex
	levelSent mcp.LoggingLevel

	// cut is set when an answer of the server's was cut at the message
	// cap: mcp-go's transport may say only that no answer came.
	cut atomic.Bool

	defs    *toolDefs // where its tools' definitions are shared
	listed  []toolKey // the definitions of its latest listing; guarded by mu
	retired bool      // closed: it keeps no definitions; guarded by mu
}

// upstreamProtocol is pinned so Initialize skips the server/discover
// probe, which costs old servers a 5 s wait.
const upstreamProtocol = mcp.LATEST_LEGACY_PROTOCOL_VERSION

// dial starts or connects to the upstream and completes the MCP handshake,
// with what m gives every upstream: its HTTP client and connections, its
// version, its client options (tracing). progress, when not nil, hears
// "initialising" once the handshake is sent: for an npx or uvx package,
// the wait that follows includes fetching it.
func (m *Manager) dial(ctx context.Context, plan Plan, log *slog.Logger, progress func(string), requests *clientRequests) (*upstream, error) {
	u := &upstream{log: log, progress: map[string]func(mcp.JSONRPCNotification){}, trace: m.Tracing, defs: &m.tools, requests: requests}
	t, err := m.transport(u, plan)
	if err != nil {
		return nil, err
	}
	if err := u.start(t, m.ClientOptions); err != nil {
		if plan.Transport == TransportSSE && streamableInstead(err) {
			return m.dialStreamable(ctx, plan, log, progress, requests)
		}
		return nil, err
	}
	if progress != nil {
		progress("initialising")
	}
	if err := u.initialize(ctx, m.Version); err != nil {
		return nil, err
	}
	return u, nil
}

// streamableInstead tells whether err, of starting the SSE transport, is
// a server that takes no GET: one that speaks streamable HTTP, declared
// sse, as OpenFang's config declares its POST-only endpoint. mcp-go says
// so only in words.
func streamableInstead(err error) bool {
	return strings.Contains(err.Error(), "unexpected status code: 405")
}

// dialStreamable dials plan, declared sse, as streamable HTTP, and says
// so; or fails saying what both tries met.
func (m *Manager) dialStreamable(ctx context.Context, plan Plan, log *slog.Logger, progress func(string), requests *clientRequests) (*upstream, error) {
	plan.Transport = TransportStreamableHTTP
	u, err := m.dial(ctx, plan, log, progress, requests)
	if err != nil {
		return nil, fmt.Errorf("declared sse, it answered a GET of its url with 405, and as streamable HTTP it failed too: %w", err)
	}
	log.Warn("the server is declared sse but answers as streamable HTTP: it is reached as streamable HTTP; declare it so", "url", guard.Text(plan.URL, 200))
	return u, nil
}

// transport is the transport of plan for u: a process started, or a
// remote's HTTP transport, its answers capped.
func (m *Manager) transport(u *upstream, plan Plan) (transport.Interface, error) {
	hc := m.client(plan.Own)
	if plan.grant != nil {
		hc = &http.Client{Transport: plan.grant.Transport(hc.Transport), CheckRedirect: hc.CheckRedirect, Jar: hc.Jar, Timeout: hc.Timeout}
	}
	switch plan.Transport {
	case TransportStdio:
		st, err := u.startProcess(plan, m.Stdio.Limits)
		if err != nil {
			return nil, err
		}
		u.pipe = st
		return st, nil
	case TransportStreamableHTTP:
		ht, err := transport.NewStreamableHTTP(plan.URL,
			transport.WithHTTPBasicClient(mcpwire.Capped(mcpwire.WithHeaders(hc, plan.URL, plan.Headers), u.cutAnswer)), // the poster caps its own
			transport.WithHTTPLogger(u.log)) // not listening: the poster does (mcpwire/listen.go)
		if err != nil {
			return nil, err
		}
		u.post = mcpwire.NewPoster(plan.URL, plan.Headers, hc, &m.conns, ht.GetSessionId, u.onNotification, u.answerRequest)
		if m.Tracing != nil {
			u.post.Trace = m.Tracing.header
		}
		return ht, nil
	case TransportSSE:
		st, err := transport.NewSSE(plan.URL, transport.WithHTTPClient(mcpwire.Capped(mcpwire.WithHeaders(hc, plan.URL, plan.Headers), u.cutAnswer)), transport.WithSSELogger(u.log))
		if err != nil {
			return nil, err
		}
		return st, nil
	}
	return nil, fmt.Errorf("unknown transport %q", plan.Transport)
}

// start starts mcp-go's client over t, and has u hear what the server
// sends.
func (u *upstream) start(t transport.Interface, opts []client.ClientOption) error {
	u.client = client.NewClient(t, append([]client.ClientOption{client.WithProtocolVersion(upstreamProtocol)}, opts...)...)
	// Start's context lives as long as the connection (stdio keeps it for
	// serving server-to-client requests), so it is not the caller's, nor
	// derived from it: that would keep the attach request's values (its
	// session, its span) alive for the attachment's life.
	if err := u.client.Start(context.Background()); err != nil {
		return u.abort(fmt.Errorf("start: %w", err))
	}
	u.client.OnNotification(u.onNotification)
	u.client.OnConnectionLost(func(err error) { u.markDown("connection lost: " + err.Error()) })
	u.transport = t
	if b, ok := t.(transport.BidirectionalInterface); ok {
		// In place of the client's own, which answers the server's
		// requests from handlers of decoded structs: they are relayed as
		// they came (client_requests.go).
		b.SetRequestHandler(func(ctx context.Context, req transport.JSONRPCRequest) (*transport.JSONRPCResponse, error) {
			return u.answerRequest(ctx, req), nil
		})
	}
	return nil
}

// initialize makes the MCP handshake, as ardgate at version, and keeps
// what the server said of itself.
func (u *upstream) initialize(ctx context.Context, version string) error {
	init := mcp.InitializeRequest{}
	init.Params.ProtocolVersion = upstreamProtocol
	init.Params.ClientInfo = mcp.Implementation{Name: "ardgate", Version: version}
	if u.requests != nil {
		init.Params.Capabilities = u.requests.caps
	}
	res, err := u.client.Initialize(ctx, init)
	if err != nil && u.pipe != nil && ctx.Err() != nil && !u.wrote.Load() {
		err = fmt.Errorf("%w; no frame came back on its stdout: %s", err, u.framingHint())
	}
	if err != nil {
		return u.abort(fmt.Errorf("initialize: %w", err))
	}
	u.answered.Store(true)
	if u.post != nil {
		u.post.Version = res.ProtocolVersion
	}
	c := res.Capabilities
	u.hasPrompts, u.hasResources, u.hasCompletions = c.Prompts != nil, c.Resources != nil, c.Completions != nil
	u.instructions = guard.Text(res.Instructions, maxInstructions)
	u.subscribes = c.Resources != nil && c.Resources.Subscribe
	u.listsChange = c.Tools != nil && c.Tools.ListChanged || c.Prompts != nil && c.Prompts.ListChanged || c.Resources != nil && c.Resources.ListChanged
	u.logs = res.Capabilities.Logging != nil
	return nil
}

// watch is what hears an upstream's notices once its tools are listed.
type watch struct {
	// listsChanged runs when the server says its tools, prompts or
	// resources changed.
	listsChanged func()
	// log, when not nil, hears its log messages.
	log func(LogMessage)
	// updated, when not nil, hears the URIs of its resources updated.
	updated func(uri string)
	// requests, when not nil, are the client's capabilities declared to
	// the server, and the relay of its requests.
	requests *clientRequests
}

// open dials the upstream and lists its tools, prompts and resources; then
// w hears its notices. A streamable HTTP server that declared it says its
// tools (prompts, resources) changed is
// listened to between calls for that (mcpwire/listen.go), as is one that logs once
// the client set a level (logging.go); of the others, the gateway hears
// only what they say during a call. Over stdio and SSE, mcp-go's transport
// reads all the server sends.
func (m *Manager) open(ctx context.Context, plan Plan, log *slog.Logger, progress func(string), w watch) (*upstream, []*Definition, error) {
	up, err := m.dial(ctx, plan, log, progress, w.requests)
	if err != nil {
		return nil, nil, err
	}
	if progress != nil {
		progress("listing tools")
	}
	// Listed beside the tools: four lists one after the other made an
	// attach a third slower (BenchmarkAttachRemote).
	offered := make(chan struct{})
	go func() {
		defer close(offered)
		up.listOffers(ctx)
	}()
	list, err := up.listTools(ctx)
	<-offered
	if err != nil {
		up.close()
		return nil, nil, fmt.Errorf("list tools: %w", err)
	}
	up.mu.Lock()
	up.onListsChanged, up.onLog, up.onUpdated = w.listsChanged, w.log, w.updated
	up.mu.Unlock()
	if up.listsChange || up.requests != nil && up.post != nil {
		// A server that may ask the client sends its requests on the
		// stream it is listened to on, between calls.
		up.listen()
	}
	return up, list, nil
}

// listen starts listening to a streamable HTTP server between calls, once.
func (u *upstream) listen() {
	if u.post != nil && u.listening.CompareAndSwap(false, true) {
		go u.post.Listen(u.log)
	}
}

// startProcess launches a stdio server with pipes the upstream owns, so
// that reaping the child never races the transport's reads.
func (u *upstream) startProcess(plan Plan, limits guard.Rlimits) (*mcpwire.Pipe, error) {
	u.unset, u.framing = plan.Unset, plan.Framing
	cmd, err := guard.Command(plan.Program, plan.Args, plan.Env)
	if errors.Is(err, exec.ErrNotFound) {
		// An IDE started from a desktop, or a shell's nvm, often gives the
		// gateway a PATH without npx: it said "exec: not found".
		return nil, fmt.Errorf("%w: %s is not on the gateway's PATH: give ardgate a PATH that has it in the client's config (its \"env\")", ErrStartFailed, plan.Program)
	}
	if err != nil {
		return nil, fmt.Errorf("launch %s: %w", plan.Program, err)
	}
	removeDir := func() {}
	if plan.OwnDir {
		var release func()
		if cmd.Dir, release, err = guard.RunDir(); err != nil {
			return nil, fmt.Errorf("launch %s: its directory: %w", plan.Program, err)
		}
		removeDir = func() {
			release()
			_ = os.RemoveAll(cmd.Dir)
		}
	}
	inR, inW, err := os.Pipe()
	if err != nil {
		removeDir()
		return nil, err
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		removeDir()
		return nil, err
	}
	redact := newRedactor(plan.given)
	u.stderr = &tail{max: 4 << 10, redact: redact}
	u.lines = newStderrLines(u.log, redact)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = inR, outW, io.MultiWriter(u.stderr, u.lines)
	cmd.WaitDelay = time.Second // a grandchild holding stderr must not stall Wait
	tree, err := guard.Start(cmd, limits)
	inR.Close() // the child's ends; ours are inW and outR
	outW.Close()
	if err != nil {
		inW.Close()
		outR.Close()
		removeDir()
		return nil, fmt.Errorf("launch %s: %w", plan.Program, err)
	}
	u.memoryMiB = limits.MemoryMiB
	u.cmd, u.tree = cmd, tree
	u.stdout = outR
	u.exited = make(chan struct{})
	go func() {
		err := cmd.Wait() // stderr copied to its end
		u.lines.Close()
		removeDir()
		why := "the process exited"
		if err != nil {
			why = "the process " + describeExit(err)
		}
		u.markDown(why + u.stderrTail())
		close(u.exited)
	}()
	out, in := io.Reader(outR), io.WriteCloser(inW)
	if plan.Framing == config.FramingContentLength {
		out, in = jsonrpc.ContentLengthLines(outR), framedInput{jsonrpc.ContentLengthWriter(inW), inW}
	}
	return mcpwire.NewPipe(&noteErrors{r: jsonrpc.LimitFrames(out, maxFlood), u: u, framing: plan.Framing}, in, u.log, u.clientWait()), nil
}

// framedInput is a server's stdin written through its framing.
type framedInput struct {
	io.Writer
	io.Closer
}

// clientWait is what holds the server's calls while it waits on the
// client; nil for a server that was told it could ask nothing.
func (u *upstream) clientWait() *mcpwire.ClientWait {
	if u.requests == nil {
		return nil
	}
	return &u.waiting
}

// maxFlood bounds a line of a server's stdout. A line over the message cap
// is read through to its end, to fail only the call it answers (or answer
// the request it makes) and keep the server; past maxFlood the server is
// taken to flood, and cut off.
const maxFlood = 8 * jsonrpc.MaxMessage

func describeExit(err error) string {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return fmt.Sprintf("was ended by signal %d (%s)", int(ws.Signal()), ws.Signal()) // "killed" names SIGKILL
		}
		return fmt.Sprintf("exited with status %d", ee.ExitCode())
	}
	return "ended: " + err.Error()
}

// abort ends an upstream that failed to start, explaining why: how the
// process ended and what it said on stderr, where a server that cannot
// start usually says why.
func (u *upstream) abort(err error) error {
	err = fmt.Errorf("%w: %w", ErrStartFailed, u.explain(err))
	if u.cmd != nil {
		err = processFailed{err}
	}
	u.close()
	return err
}

// processFailed is the failed start of a process that ran: it exited,
// or its handshake failed. Unlike a launcher not found, it may be the
// keys it was given that it refused (Session.keysFailed).
type processFailed struct{ error }

func (p processFailed) Unwrap() error { return p.error }

func (u *upstream) explain(err error) error {
	if _, ok := fault.Unreachable(err); ok {
		err = brief{transportWhy(err), err}
	}
	if errors.Is(err, transport.ErrAuthorizationRequired) || errors.Is(err, transport.ErrUnauthorized) {
		err = brief{"it asks for authorization (HTTP 401): give the gateway a token for it (a pinned server's token_env), or check the one it has", err}
	}
	if u.exited != nil {
		select {
		case <-u.exited:
		case <-time.After(500 * time.Millisecond):
		}
	}
	if why := u.downReason(); why != "" {
		err = fmt.Errorf("%w (%s)", err, why)
	}
	if errors.Is(err, transport.ErrTransportClosed) && u.exited == nil {
		err = fmt.Errorf("%w (the server closed the connection)", err)
	}
	if tail := u.stderrTail(); !strings.Contains(err.Error(), tail) {
		err = fmt.Errorf("%w%s", err, tail)
	}
	if len(u.unset) > 0 && u.downReason() != "" {
		err = fmt.Errorf("%w; its package declares %s, which the operator has not passed: it may need them (set them, and list them in stdio.env)", err, strings.Join(u.unset, ", "))
	}
	return err
}

// transportWhy says why a transport failed, once: mcp-go's transports say
// it over and over ("transport error: failed to send request: failed to
// send request: Post …"). A dial that failed is said alone.
func transportWhy(err error) string {
	if op, ok := fault.Unreachable(err); ok {
		return "cannot reach it: " + op.Error()
	}
	if ue := (*url.Error)(nil); errors.As(err, &ue) && errors.Is(ue.Err, io.EOF) {
		// net/http's words for it; said as the fast path says it.
		return mcpwire.ErrClosedUnanswered.Error()
	}
	const again = "failed to send request: "
	s := err.Error()
	for strings.Count(s, again) > 1 {
		s = strings.Replace(s, again, "", 1)
	}
	return s
}

// brief says an error in fewer words, and unwraps to it.
type brief struct {
	msg string
	err error
}

func (b brief) Error() string { return b.msg }
func (b brief) Unwrap() error { return b.err }

func (u *upstream) onNotification(n mcp.JSONRPCNotification) {
	switch n.Method {
	case string(mcp.MethodNotificationToolsListChanged), string(mcp.MethodNotificationPromptsListChanged), string(mcp.MethodNotificationResourcesListChanged):
		u.listsChanged()
	case string(mcp.MethodNotificationProgress):
		tok := fmt.Sprint(n.Params.AdditionalFields["progressToken"])
		u.mu.Lock()
		sink := u.progress[tok]
		u.mu.Unlock()
		if sink != nil {
			sink(n)
		}
	case mcp.MethodNotificationResourceUpdated:
		u.mu.Lock()
		sink := u.onUpdated
		u.mu.Unlock()
		if uri, ok := n.Params.AdditionalFields["uri"].(string); ok && sink != nil {
			sink(uri)
		}
	case string(mcp.MethodNotificationCancelled):
		u.cancelled(n)
	case string(mcp.MethodNotificationMessage):
		u.mu.Lock()
		sink := u.onLog
		u.mu.Unlock()
		if m, ok := logMessage(n); ok && sink != nil {
			sink(m)
		}
	}
}

// refreshState is where an upstream's re-listing of its tools is.
type refreshState int

const (
	refreshIdle    refreshState = iota
	refreshRunning              // onListsChanged runs
	refreshAgain                // and runs once more after
)

// listsChanged runs onListsChanged, one run at a time: however often the
// server says its lists changed while a run lists them, one more run
// follows. A server that floods the notice costs a re-listing or two, not
// a goroutine and a tools/list each.
func (u *upstream) listsChanged() {
	u.mu.Lock()
	run, state := u.onListsChanged, u.refreshing
	if run != nil { // else not listed yet: the listing to come is new
		u.refreshing = min(state+1, refreshAgain)
	}
	u.mu.Unlock()
	if run == nil || state != refreshIdle {
		return
	}
	go func() {
		for {
			run()
			u.mu.Lock()
			u.refreshing--
			again := u.refreshing != refreshIdle
			u.mu.Unlock()
			if !again {
				return
			}
		}
	}()
}

// cutAnswer notes that an answer of the server's was cut at the cap.
func (u *upstream) cutAnswer() { u.cut.Store(true) }

// whyCut adds to err, of a request through mcp-go's transport, that the
// server's answer was cut at the cap, if it was.
func (u *upstream) whyCut(err error) error {
	if u.cut.Swap(false) && !errors.Is(err, fault.ErrAnswerTooLarge) && !errors.Is(err, jsonrpc.ErrFrameTooLarge) {
		return fmt.Errorf("%w (the server's answer was cut: %w)", err, fault.ErrAnswerTooLarge)
	}
	return err
}

// detachedReason is why an upstream closed by the gateway is down.
const detachedReason = "detached"

// markDown records why the upstream is down, the first reason given. An
// upstream the gateway did not close itself is logged as a warning: the
// model is told when it calls, the operator only so.
func (u *upstream) markDown(why string) {
	u.mu.Lock()
	first := u.downWhy == ""
	if first {
		u.downWhy = why
	}
	u.mu.Unlock()
	if first && why != detachedReason {
		u.log.Warn("upstream down", "why", why)
	}
}

func (u *upstream) downReason() string {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.downWhy
}

// maxInstructions bounds the server's instructions shown to a model, in
// runes.
const maxInstructions = 2000

// maxTools bounds how many tools one upstream may declare.
const maxTools = 1000

// maxListBytes bounds the definitions of one upstream's list (its tools,
// its prompts, …) together, as it encodes them: within the count and the
// cap on a message, a server of 30 pages of one tool of 8 MiB each took
// the gateway to 1.4 GB and sent its client a listing of 250 MB. The
// largest real servers list some hundreds of KiB.
const maxListBytes = 4 << 20

// listTools returns the upstream's tools with their whole input and output
// schemas. mcp.Tool's schema struct keeps only a few keywords, so the
// listing is read raw and the schemas kept as bytes.
func (u *upstream) listTools(ctx context.Context) (tools []*Definition, err error) {
	var keys []toolKey
	defer func() {
		if err != nil {
			u.defs.drop(keys)
		} else {
			u.keepListed(keys)
		}
	}()
	var cursor mcp.Cursor
	size := 0
	for page := 0; ; page++ {
		params := map[string]any{}
		if cursor != "" {
			params["cursor"] = cursor
		}
		resp, err := u.client.GetTransport().SendRequest(ctx, transport.JSONRPCRequest{
			JSONRPC: mcp.JSONRPC_VERSION,
			ID:      mcp.NewRequestId(fmt.Sprintf("ardgate-tools-list-%d", page)),
			Method:  string(mcp.MethodToolsList),
			Params:  params,
		})
		if err != nil {
			return nil, u.failure(u.whyCut(err))
		}
		if resp.Error != nil {
			return nil, fmt.Errorf("tools/list: %s", resp.Error.Message)
		}
		list, next, err := listPage(resp.Result, "tools")
		if err != nil {
			return nil, fmt.Errorf("tools/list: malformed result: %w", err)
		}
		err = jsonrpc.ScanCheckedArray(list, func(raw []byte) {
			if size += len(raw); size > maxListBytes {
				return
			}
			t, key, err := u.defs.take(raw)
			if err != nil {
				u.log.Warn("upstream tool left out", "err", err)
				return
			}
			tools = append(tools, t)
			keys = append(keys, key)
		})
		if err != nil {
			return nil, fmt.Errorf("tools/list: malformed result: %w", err)
		}
		if len(tools) > maxTools {
			return nil, fmt.Errorf("tools/list: more than %d tools", maxTools)
		}
		if size > maxListBytes {
			return nil, fmt.Errorf("tools/list: its tools' definitions take more than %d MiB", maxListBytes>>20)
		}
		if next == "" || next == cursor {
			return tools, nil
		}
		if page+1 >= maxTools { // a page may bring one tool, but not none forever
			return nil, fmt.Errorf("tools/list: more than %d pages", maxTools)
		}
		cursor = next
	}
}

// listPage reads a page of a list (tools/list, prompts/list, …), checked
// as JSON by the client that read it: its member that holds the list, as
// an array ("[]" for none), and its next cursor. It is split with guard's
// scanner instead of decoded again: an attach of a server of 99 large
// tools takes a tenth less time that way (BenchmarkAttachRemote).
func listPage(result json.RawMessage, member string) (items []byte, next mcp.Cursor, err error) {
	var cursor []byte
	items = []byte("[]")
	if string(bytes.TrimSpace(result)) == "null" {
		return items, "", nil // as encoding/json decodes it: nothing
	}
	err = jsonrpc.ScanCheckedObject(result, func(name, value []byte) {
		// Members matched as encoding/json matches them: in any case, the
		// last one winning.
		switch {
		case bytes.EqualFold(name, []byte(member)):
			items = value
		case bytes.EqualFold(name, []byte("nextCursor")):
			cursor = value
		}
	})
	switch {
	case err != nil:
		return nil, "", err
	case string(items) == "null":
		items = []byte("[]")
	case items[0] != '[':
		return nil, "", fmt.Errorf("%s is %.20s, not an array", member, items)
	}
	if cursor != nil && string(cursor) != "null" {
		if err := json.Unmarshal(cursor, &next); err != nil {
			return nil, "", fmt.Errorf("nextCursor: %w", err)
		}
	}
	return items, next, nil
}

// keepListed keeps the definitions of the upstream's latest listing, and
// gives back those of the one before; a closed upstream keeps none.
func (u *upstream) keepListed(keys []toolKey) {
	u.mu.Lock()
	old := u.listed
	if u.retired {
		old = keys
	} else {
		u.listed = keys
	}
	u.mu.Unlock()
	u.defs.drop(old)
}

// decodeTool reads a listed tool in one pass, its schemas kept as they
// came: the outer fields take "inputSchema" and "outputSchema" from the
// embedded mcp.Tool's lossy structs.
func decodeTool(raw json.RawMessage) (mcp.Tool, error) {
	var t struct {
		mcp.Tool
		InputSchema  json.RawMessage `json:"inputSchema"`
		OutputSchema json.RawMessage `json:"outputSchema"`
	}
	if err := json.Unmarshal(raw, &t); err != nil {
		var named struct {
			Name string `json:"name"`
		}
		if json.Unmarshal(raw, &named) == nil && named.Name != "" {
			return mcp.Tool{}, fmt.Errorf("tool %s: %w", named.Name, err)
		}
		return mcp.Tool{}, fmt.Errorf("malformed tool: %w", err)
	}
	if t.Name == "" {
		return mcp.Tool{}, errors.New("tool without a name")
	}
	tool := t.Tool
	// The gateway relays no MCP tasks (mcp-go's server would answer a
	// task-augmented call with a task of its own that ends at once, and
	// no tasks/get): a tool that requires one cannot be served, and one
	// that may take one is listed as one called plainly.
	if tool.Execution != nil {
		if tool.Execution.TaskSupport == mcp.TaskSupportRequired {
			return mcp.Tool{}, fmt.Errorf("tool %s: it requires an MCP task (taskSupport \"required\"), and the gateway relays none", t.Name)
		}
		tool.Execution = nil
	}
	tool.RawInputSchema = t.InputSchema
	if len(tool.RawInputSchema) == 0 || string(tool.RawInputSchema) == "null" {
		tool.RawInputSchema = json.RawMessage(`{"type":"object"}`)
	}
	if len(t.OutputSchema) > 0 && string(t.OutputSchema) != "null" {
		tool.RawOutputSchema = t.OutputSchema
	}
	// mcp-go refuses to serve a tool whose x-mcp-header annotations break
	// SEP-2243's rules: with an error for the whole batch of a session's
	// tools, and over stdio by panicking. Such a tool is left out here.
	if mayAnnotateHeaders(tool.RawInputSchema) {
		if err := mcp.ValidateParamHeaderAnnotations(&tool); err != nil {
			return mcp.Tool{}, fmt.Errorf("tool %s: invalid x-mcp-header annotations: %w", t.Name, err)
		}
	}
	return tool, nil
}

// headerKey is the schema keyword of SEP-2243's header annotations.
const headerKey = "x-mcp-header"

// mayAnnotateHeaders tells whether a raw schema may hold the x-mcp-header
// keyword as encoding/json reads keys: in any case, or spelled with
// escapes or with non-ASCII letters that fold to it. Checking one takes a
// marshal and an unmarshal of the schema (mcp-go's check), a third of the
// time to attach a server of large schemas; most schemas cannot hold it.
func mayAnnotateHeaders(schema []byte) bool {
	for i, c := range schema {
		switch {
		case c >= utf8.RuneSelf, c == '\\' && i+1 < len(schema) && schema[i+1] == 'u':
			return true
		case (c == 'x' || c == 'X') && len(schema)-i >= len(headerKey) && bytes.EqualFold(schema[i:i+len(headerKey)], []byte(headerKey)):
			return true
		}
	}
	return false
}

// call forwards one tool call, with the client's _meta, meta (nil for
// none). progress, when not nil, hears the upstream's progress on the
// call.
func (u *upstream) call(ctx context.Context, tool string, args any, meta *mcp.Meta, progress *Progress) (*mcp.CallToolResult, error) {
	if why := u.downReason(); why != "" {
		return nil, fmt.Errorf("%w: %s", ErrUpstreamDown, why)
	}
	req := mcp.CallToolRequest{}
	req.Params.Name = tool
	req.Params.Arguments = args
	if meta != nil && len(meta.AdditionalFields) > 0 {
		// The client's, but its progress token: the gateway's own goes.
		req.Params.Meta = &mcp.Meta{AdditionalFields: maps.Clone(meta.AdditionalFields)}
	}
	if progress != nil {
		tok, forget := u.relayProgress(progress)
		defer forget()
		if req.Params.Meta == nil {
			req.Params.Meta = &mcp.Meta{}
		}
		req.Params.Meta.ProgressToken = tok
	}
	res, err := u.client.CallTool(ctx, req)
	if err != nil {
		return nil, u.failure(err)
	}
	return res, nil
}

// Progress asks for the upstream's progress on a call: what it reports
// reaches To with the caller's own Token in it.
type Progress struct {
	Token any // a string, a number, or their JSON
	To    func(mcp.JSONRPCNotification)
	// heard, when not nil, runs after each progress: it gives the call
	// more time (clock.go). reported is set at the first progress.
	heard    func()
	reported atomic.Bool
}

// relayProgress gives a call whose caller asked for progress a token of
// the gateway's for the upstream, unique on this connection: clients pick
// theirs freely, and a connection shared by sessions must not hand one
// session's progress to another. The progress is coalesced (Coalescer): a
// server that reported it in a loop had 100,000 notifications relayed to
// the client in 3 s. Each one gives the call more time all the same.
// forget ends the relay once the call has ended, sending the progress
// held back first; the upstream's progress after that goes nowhere.
func (u *upstream) relayProgress(p *Progress) (tok string, forget func()) {
	tok = "ardgate-progress-" + strconv.FormatUint(u.rawIDs.Add(1), 10)
	relay := NewCoalescer(0, func(n mcp.JSONRPCNotification, _ int) { p.To(p.relayed(n)) })
	u.mu.Lock()
	u.progress[tok] = func(n mcp.JSONRPCNotification) {
		relay.Offer(n)
		p.reported.Store(true)
		if p.heard != nil {
			p.heard()
		}
	}
	u.mu.Unlock()
	return tok, func() {
		u.mu.Lock()
		delete(u.progress, tok)
		u.mu.Unlock()
		relay.Stop()
	}
}

// relayed is the upstream's progress n as the caller gets it, under its
// own token.
func (p *Progress) relayed(n mcp.JSONRPCNotification) mcp.JSONRPCNotification {
	n.Params.AdditionalFields = maps.Clone(n.Params.AdditionalFields)
	n.Params.AdditionalFields["progressToken"] = p.Token
	n.Params.Meta = nil // the upstream's _meta was for the gateway
	return n
}

// callRaw forwards one tool call with the arguments as the client sent
// them and returns the upstream's result as it sent it: the transport
// decodes the reply frame once, and nothing else decodes or encodes it.
// meta is the client's _meta (rawCall). progress, when not nil, hears
// the upstream's progress on the call.
func (u *upstream) callRaw(ctx context.Context, tool string, args, meta json.RawMessage, progress *Progress) (res json.RawMessage, err error) {
	if why := u.downReason(); why != "" {
		return nil, fmt.Errorf("%w: %s", ErrUpstreamDown, why)
	}
	c := u.rawCall(tool, args, meta)
	if progress != nil {
		var forget func()
		c.progress, forget = u.relayProgress(progress)
		defer forget()
	}
	if u.trace != nil {
		var span tracing.Span
		ctx, span, c.trace = u.trace.start(ctx, string(mcp.MethodToolsCall))
		defer func() { endSpan(span, err) }()
	}
	var resp *transport.JSONRPCResponse
	switch {
	case u.post != nil:
		resp, err = u.post.Call(ctx, c.key, c.line())
	case u.pipe != nil:
		resp, err = u.pipe.RoundTrip(ctx, c.key, c.appendHead, c.args, lineTail+"\n")
	default:
		req := c.request()
		req.Header = u.trace.header(ctx) // mcp-go's HTTP transports send it
		resp, err = u.client.GetTransport().SendRequest(ctx, req)
	}
	if err != nil {
		if ctx.Err() != nil {
			u.cancelRequest(context.Cause(ctx).Error(), c.requestID()) // "timed out", as on the fast path
		}
		return nil, u.failure(transport.NewError(err))
	}
	return rawResult(tool, resp)
}

// startRaw is callRaw without waiting, for a stdio server that is up; ok
// is false otherwise, and the caller takes callRaw, which says what is
// wrong. The request is held in b (pipeTransport.send). done hears the
// result or the error once, on the goroutine that saw it; a result is the
// pipe reader's bytes, valid only until done returns. stop ends the call
// early with cause. A request refused because the server has stopped
// reading (jsonrpc.ErrBacklog) ends at once, through done.
func (u *upstream) startRaw(att *Attachment, tool string, args, meta json.RawMessage, progress *Progress, limits callLimits, b *jsonrpc.Batch, done RawDone) (stop func(cause error), ok bool) {
	if u.pipe == nil || u.downReason() != "" {
		return nil, false
	}
	call := u.rawCall(tool, args, meta)
	c := &rawStart{u: u, att: att, key: call.key, tool: tool, limits: limits, progress: progress, start: time.Now(), done: done}
	if progress != nil {
		// c.key, not call's: a closure over call would move it to the
		// heap on every call, progress or not.
		progress.heard = func() { u.pipe.Extend(c.key, c.limits.deadline(c.start, time.Now())) }
		call.progress, c.forget = u.relayProgress(progress)
	}
	if err := u.pipe.Send(call.key, c, limits.wire(), b, call.appendHead, call.args, lineTail+"\n"); err != nil {
		if !errors.Is(err, jsonrpc.ErrBacklog) {
			c.forgetProgress() // callRaw relays it anew
			return nil, false
		}
		c.finish(nil, err, nil) // refused, the server up: said now, not tried again
		return func(error) {}, true
	}
	return c.stop, true
}

// rawStart is a call startRaw started, waiting on the pipe (a waiter).
// It is all that such a call allocates in this package, besides its key.
type rawStart struct {
	u        *upstream
	att      *Attachment
	key      string
	tool     string
	limits   callLimits
	progress *Progress // nil when the call asked for none
	start    time.Time
	done     RawDone
	forget   func() // ends the relay of the call's progress; nil without one
}

func (c *rawStart) Answered(f mcpwire.Frame, b *jsonrpc.Batch) {
	if f.Error == nil || string(f.Error) == "null" {
		res, err := objectResult(c.tool, f.Result) // not copied: done writes it on
		c.finish(res, err, b)
		return
	}
	res, err := rawResult(c.tool, mcpwire.ResponseOf(f, false))
	c.finish(res, err, b)
}

func (c *rawStart) Failed(err error) {
	// Off the reader: telling why a connection broke may wait for the
	// process to be reaped.
	go func() {
		if errors.Is(err, ErrTimeout) || errors.Is(err, context.Canceled) {
			// Said before the server hears of it: its requests to the
			// client, which the saying names, end with the call.
			out := c.outOfTime(err)
			c.u.cancelRequest(err.Error(), rawID(c.key))
			c.end(nil, err, out, nil)
			return
		}
		c.finish(nil, c.u.failure(transport.NewError(err)), nil)
	}()
}

func (c *rawStart) finish(res json.RawMessage, err error, b *jsonrpc.Batch) {
	c.end(res, err, c.outOfTime(err), b)
}

// outOfTime says how the call ran out of time, when err says it did.
func (c *rawStart) outOfTime(err error) error {
	if !errors.Is(err, ErrTimeout) {
		return nil
	}
	return c.limits.outOfTime(c.att, c.tool, time.Since(c.start), c.progress)
}

// end ends the call with res or err, out saying how it ran out of time.
func (c *rawStart) end(res json.RawMessage, err, out error, b *jsonrpc.Batch) {
	c.forgetProgress()
	c.done(res, callError(c.att, c.tool, err, out), b)
}

func (c *rawStart) forgetProgress() {
	if c.forget != nil {
		c.forget()
	}
}

func (c *rawStart) stop(cause error) { c.u.pipe.Stop(c.key, cause) }

// rawCall is a tools/call that carries the client's argument bytes as
// they came, under a request id of the gateway's own.
type rawCall struct {
	key      string // rawKeyPrefix and a number: the id's key, as requestID().String() gives it
	tool     string
	args     json.RawMessage // nil when the client sent none
	progress string          // the progress token the upstream gets; "" for none
	trace    map[string]any  // the _meta members carrying the trace context; nil for none
	// client is the client's _meta, an object, as it sent it: the
	// upstream gets its members but those the gateway sets (progressToken,
	// and the trace context when the gateway traces); nil for none.
	client json.RawMessage
}

// rawKeyPrefix starts the key of every raw call's id, "ardgate-<n>" (the
// client numbers its requests 1, 2, …); the id follows "string:".
const rawKeyPrefix = "string:"

func (u *upstream) rawCall(tool string, args, meta json.RawMessage) rawCall {
	var b [48]byte
	key := strconv.AppendUint(append(b[:0], rawKeyPrefix+"ardgate-"...), u.rawIDs.Add(1), 10)
	return rawCall{key: string(key), tool: tool, args: args, client: meta}
}

func (c rawCall) requestID() mcp.RequestId { return rawID(c.key) }

// rawID is the request id whose key is key.
func rawID(key string) mcp.RequestId { return mcp.NewRequestId(strings.TrimPrefix(key, rawKeyPrefix)) }

// request is the call for a transport that encodes requests itself.
func (c rawCall) request() transport.JSONRPCRequest {
	return transport.JSONRPCRequest{
		JSONRPC: mcp.JSONRPC_VERSION,
		ID:      c.requestID(),
		Method:  string(mcp.MethodToolsCall),
		Params:  rawCallParams{Name: c.tool, Arguments: c.args, Meta: c.meta()},
	}
}

// meta is the call's _meta: its progress token and trace context, if it
// has them, and the client's other members.
func (c rawCall) meta() *mcp.Meta {
	if c.progress == "" && c.trace == nil && c.client == nil {
		return nil
	}
	m := &mcp.Meta{AdditionalFields: map[string]any{}}
	c.clientMeta(func(name string, value []byte) { m.AdditionalFields[name] = json.RawMessage(value) })
	maps.Copy(m.AdditionalFields, c.trace)
	if c.progress != "" {
		m.ProgressToken = c.progress
	}
	return m
}

// clientMeta calls member with each member of the client's _meta that
// the upstream gets: not progressToken, nor the trace context when the
// gateway puts its own.
func (c rawCall) clientMeta(member func(name string, value []byte)) {
	if c.client == nil {
		return
	}
	_ = jsonrpc.ScanCheckedObject(c.client, func(name, value []byte) { // checked with the client's frame
		if passesOn(string(name), c.trace != nil) {
			member(string(name), value)
		}
	})
}

// passesOn tells whether the client's _meta member name goes on to the
// upstream: not progressToken, for which the gateway's own goes, nor,
// when the gateway puts its own trace context (traced), the client's, all
// of it (a client's tracestate beside the gateway's traceparent would mix
// two traces).
func passesOn(name string, traced bool) bool {
	return name != "progressToken" && !(traced && (name == "traceparent" || name == "tracestate"))
}

// appendLine appends the call's frame, as encoding/json writes request(),
// put together around the argument bytes: encoding/json would check them
// again, and they were checked when the client's frame was read. The id
// needs no escaping. The frame is appendHead, the arguments, then
// lineTail, so that large arguments can be written where they lie.
func (c rawCall) appendLine(b []byte) []byte {
	return append(append(c.appendHead(b), c.args...), lineTail...)
}

// lineTail ends a call's frame, after its arguments.
const lineTail = "}}"

// appendHead appends the call's frame up to its arguments. _meta comes
// before them (rawCallParams), so that what follows them is always
// lineTail.
func (c rawCall) appendHead(b []byte) []byte {
	b = append(b, `{"jsonrpc":"2.0","id":"`...)
	b = append(b, c.key[len(rawKeyPrefix):]...)
	b = append(b, `","method":"tools/call","params":{"name":`...)
	b = appendJSONString(b, c.tool)
	if c.progress != "" || c.trace != nil || c.client != nil {
		b = c.appendMeta(append(b, `,"_meta":{`...))
	}
	if c.args != nil {
		b = append(b, `,"arguments":`...)
	}
	return b
}

// appendMeta appends the members of the call's _meta: the gateway's, in
// the order of their names, as encoding/json writes a map, then the
// client's, in its order.
func (c rawCall) appendMeta(b []byte) []byte {
	start := len(b)
	if c.progress != "" { // the gateway's token needs no escaping either
		b = append(append(append(b, `"progressToken":"`...), c.progress...), '"')
	}
	for _, k := range slices.Sorted(maps.Keys(c.trace)) { // after "progressToken": trace…
		if len(b) > start {
			b = append(b, ',')
		}
		b = append(appendJSONString(b, k), ':')
		v, _ := json.Marshal(c.trace[k]) // strings, from the propagator
		b = append(b, v...)
	}
	if c.client != nil {
		m := metaAppender{b: b, comma: len(b) > start, traced: c.trace != nil}
		_ = jsonrpc.ScanCheckedObject(c.client, m.member) // checked with the client's frame
		b = m.b
	}
	return append(b, '}')
}

// metaAppender appends the members of a client's _meta that the upstream
// gets (rawCall.clientMeta), each after a comma when one came before. A
// type, not a closure over the buffer: that put every call's frame
// buffer on the heap, _meta or not (an allocation more per call).
type metaAppender struct {
	b      []byte
	comma  bool
	traced bool // the gateway puts its own trace context
}

func (m *metaAppender) member(name, value []byte) {
	if !passesOn(string(name), m.traced) {
		return
	}
	if m.comma {
		m.b = append(m.b, ',')
	}
	m.comma = true
	m.b = append(append(appendJSONString(m.b, string(name)), ':'), value...)
}

// line is the call's frame in a buffer of its size: the text around the
// id, name, arguments and progress token is under 128 bytes.
func (c rawCall) line() []byte {
	return c.appendLine(make([]byte, 0, 128+len(c.key)+len(c.tool)+len(c.args)+len(c.progress)+len(c.client)))
}

// appendJSONString appends s as encoding/json writes a string. Tool names
// are nearly always plain ASCII, which needs no escape; anything else
// takes encoding/json.
func appendJSONString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c > 0x7e || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			q, _ := json.Marshal(s) // a string always encodes
			return append(b, q...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

// rawResult is the result of a tools/call response as the server sent it,
// or the error it answered with.
func rawResult(tool string, resp *transport.JSONRPCResponse) (json.RawMessage, error) {
	if resp.Error != nil {
		return nil, resp.Error.AsError()
	}
	return objectResult(tool, resp.Result)
}

// objectResult is result, when it is the object a tools/call answers with.
func objectResult(tool string, result json.RawMessage) (json.RawMessage, error) {
	if !jsonrpc.IsObject(result) {
		return nil, fmt.Errorf("the server answered %s with a result that is not a JSON object", tool)
	}
	return result, nil
}

// rawCallParams are tools/call's parameters with the arguments as bytes.
type rawCallParams struct {
	Name      string          `json:"name"`
	Meta      *mcp.Meta       `json:"_meta,omitempty"`
	Arguments json.RawMessage `json:"arguments,omitempty"`
}

// Cancelled is a request's end by its caller (fault.Cancelled).
func Cancelled(cause error) error { return fault.Cancelled(cause) }

// CancelReason says why a call was cancelled with cause
// (fault.CancelReason).
func CancelReason(cause error) string { return fault.CancelReason(cause) }

// cancelRequest tells a stdio server that the caller gave up on a request,
// as mcp-go's client does for its own requests: over stdio a
// notifications/cancelled is the only way to stop the work. Over HTTP the
// ended request says so. It is best effort and off the caller's path.
func (u *upstream) cancelRequest(reason string, id mcp.RequestId) {
	if u.cmd == nil {
		return
	}
	if reason == context.Canceled.Error() { // CancelReason, from a string
		reason = fault.ClientGone
	}
	n := mcp.JSONRPCNotification{JSONRPC: mcp.JSONRPC_VERSION, Notification: mcp.Notification{
		Method: string(mcp.MethodNotificationCancelled),
		Params: mcp.NotificationParams{AdditionalFields: map[string]any{"requestId": id, "reason": reason}},
	}}
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_ = u.client.GetTransport().SendNotification(ctx, n)
	}()
}

// failure classifies an error from the client: a broken transport marks the
// upstream down; a JSON-RPC error or the caller's deadline does not.
func (u *upstream) failure(err error) error {
	var te *transport.Error
	// A server too busy to take the call is not down, nor one whose
	// answer was over the cap or malformed, or whose event stream ended
	// without it: that request failed, not the connection (over a pipe
	// the answer was read through and dropped).
	if errors.Is(err, jsonrpc.ErrBacklog) || errors.Is(err, fault.ErrAnswerTooLarge) || errors.Is(err, mcpwire.ErrMalformedAnswer) || errors.Is(err, mcpwire.ErrStreamEnded) {
		if errors.As(err, &te) {
			return te.Err
		}
		return err
	}
	if errors.As(err, &te) && !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded) {
		if u.exited != nil {
			// Give the reaper a moment: "exited with status 3" beats
			// "transport closed".
			select {
			case <-u.exited:
			case <-time.After(200 * time.Millisecond):
			}
		}
		u.markDown(transportWhy(te.Err))
		return fmt.Errorf("%w: %s", ErrUpstreamDown, u.downReason())
	}
	return err
}

// pid returns the stdio child's process id, or 0 for remotes.
func (u *upstream) pid() int {
	if u.cmd == nil {
		return 0
	}
	return u.cmd.Process.Pid
}

// close ends the connection. A stdio child gets its stdin closed and a
// moment to exit, then SIGTERM (on Unix), then its whole process tree is
// killed: npx's node and anything it started go with it.
func (u *upstream) close() {
	u.markDown(detachedReason)
	u.mu.Lock()
	u.retired = true
	listed := u.listed
	u.listed = nil
	u.mu.Unlock()
	u.defs.drop(listed)
	if u.cmd != nil {
		select {
		case <-u.exited: // reaped: its pid may be another's now
		default:
			// Seen while the server runs, before its stdin closes: a
			// process that left its group (setsid) is found only as its
			// descendant.
			u.tree.Survey()
		}
	}
	if u.post != nil {
		u.post.Close() // its calls in flight end, as mcp-go's do on Close
	}
	if u.client != nil {
		_ = u.client.Close()
	}
	if u.cmd == nil {
		return
	}
	// npm cut by SIGKILL while it installs a package leaves npx's cache
	// entry half written (its lock, part of node_modules), and every later
	// npx of that package fails: given SIGTERM, it cleans up in about 3 s.
	termGrace := time.Second
	if !u.answered.Load() {
		termGrace = installGrace
	}
	select {
	case <-u.exited:
	case <-time.After(500 * time.Millisecond):
		u.tree.Terminate()
		select {
		case <-u.exited:
		case <-time.After(termGrace):
		}
	}
	// The leader may be gone while children it left behind still run.
	u.tree.Kill()
	<-u.exited
	_ = u.stdout.Close()
}

// installGrace is how long a server that has not yet answered its
// initialize (an npx or uvx perhaps installing it) is given to end after
// SIGTERM, before SIGKILL.
const installGrace = 6 * time.Second

// noteErrors records why reading the child's stdout failed (a flood, above
// all) as the reason the upstream is down: the transport only says
// "closed". A server that floods is ended at once: nothing reads its
// output any more, and it would go on writing until detached.
//
// It also tells a server whose framing is not the one set: its start
// fails at once, saying what to set, instead of at start_timeout.
type noteErrors struct {
	r       io.Reader
	u       *upstream
	framing string
	head    []byte // the first bytes the server wrote, up to len(contentLength)
}

// contentLength is how a Content-Length framed message begins.
const contentLength = "content-length:"

func (n *noteErrors) Read(p []byte) (int, error) {
	c, err := n.r.Read(p)
	if c > 0 {
		n.u.wrote.Store(true)
		n.misframed(p[:c])
	}
	switch {
	case errors.Is(err, jsonrpc.ErrFrameTooLarge):
		n.u.markDown(fmt.Sprintf("the server wrote a line of over %d MiB (the cap on a message is %d MiB): it was ended as a flood", maxFlood>>20, jsonrpc.MaxMessage>>20))
		n.u.tree.Kill()
	case errors.Is(err, jsonrpc.ErrNotContentLength):
		n.u.markDown(fmt.Sprintf(`the server's stdout is not framed as set (%v): if it frames one message a line, leave "framing" out`, err))
		n.u.tree.Kill()
	case err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, os.ErrClosed):
		n.u.markDown("the server " + err.Error())
	}
	return c, err
}

// misframed ends a server set to frame a message a line whose output
// begins with a Content-Length header.
func (n *noteErrors) misframed(b []byte) {
	if n.framing == config.FramingContentLength || len(n.head) >= len(contentLength) {
		return
	}
	n.head = append(n.head, b[:min(len(b), len(contentLength)-len(n.head))]...)
	if len(n.head) == len(contentLength) && strings.EqualFold(string(n.head), contentLength) {
		n.u.markDown(misframedHint)
		n.u.tree.Kill()
	}
}

// framingHint says what to try for a stdio server that answered nothing.
func (u *upstream) framingHint() string {
	if u.framing == config.FramingContentLength {
		return `its initialize went with a Content-Length header; if it frames one message a line, leave "framing" out`
	}
	return `its initialize went as one line of JSON; if it frames messages with Content-Length headers, as LSP does, set "framing": "content-length"`
}

// misframedHint says what to set for a server that frames its messages
// with Content-Length headers.
const misframedHint = `the server frames its messages with Content-Length headers, as LSP does: set "framing": "content-length"`
