package tools

import (
	"bytes"
	"cmp"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/ardgate/ardgate/attach"
	"github.com/ardgate/ardgate/guard"
)

const attachSchema = `{
  "type": "object",
  "properties": {
    "urn": {"type": "string", "description": "URN of the entry, e.g. from discover_resources (urn:air:<publisher>:<name>)."},
    "registry_id": {"type": "string", "description": "Registry to resolve the URN in; omit to try each configured registry in order."},
    "name": {"type": "string", "description": "Name for the attachment; its tools are named mcp_<name>__<tool>. Defaults to the URN's last segment."}
  },
  "required": ["urn"],
  "additionalProperties": false
}`

func (g *Gateway) attachTool() server.ServerTool {
	use := "Its tools appear as mcp_<name>__<tool> (the client is told the tool list changed) " +
		"and can be called on the next turn where the client lists tools again; a framework that fixes a run's tools at its start " +
		"lists them only in its next run: call them at once through call_attached_tool, with the input schemas the result gives."
	if g.manager.Deferred {
		use = "Its tools stay out of your tool list (deferred tool mode): find them with tool_search and call them through call_attached_tool."
	}
	return newTool("attach_resource", "Attach resource",
		"Attach an MCP server to this session by URN. "+use+" Attaching the same URN again is harmless.",
		attachSchema, hints{idempotent: true, openWorld: true}, g.attach)
}

type attachArgs struct {
	URN        string `json:"urn"`
	RegistryID string `json:"registry_id"`
	Name       string `json:"name"`
}

type attachResult struct {
	Status     string         `json:"status"`
	Kind       string         `json:"kind"`
	Name       string         `json:"name"`
	URN        string         `json:"urn"`
	RegistryID string         `json:"registry_id"`
	Endpoint   string         `json:"endpoint"`
	Tools      []attachedTool `json:"tools,omitempty"`
	Skills     []attach.Skill `json:"skills,omitempty"`
	Protocol   string         `json:"a2a_protocol,omitempty"`
	// Instructions are the server's own, from its initialize: how to use
	// it, as clients put them before a model.
	Instructions string `json:"server_instructions,omitempty" shown:"2000"`
	// Trust is what the trust gate checked, digests included.
	Trust *guard.TrustReport `json:"trust,omitempty"`
	Note  string             `json:"note,omitempty" shown:"4000"`
	// HowToCall and CallExample say how to call the tools in the run that
	// attached them, which a framework that fixed its tools at the run's
	// start never lists.
	HowToCall   string        `json:"how_to_call,omitempty"`
	CallExample *attachedCall `json:"call_example,omitempty"`
}

// auditAttached writes the audit line of an attach of session s that
// ended as status (attached, already_attached, pinned), or with err: the
// URN as it is kept, what became of it, and what runs.
func (g *Gateway) auditAttached(s *session, a *attach.Attachment, status string, err error) {
	attrs := []any{"status", status, "name", a.Name, "kind", a.Kind, "registry", a.RegistryID, "endpoint", a.Endpoint()}
	if pid := a.PID(); pid != 0 { // a process's; a remote has none
		attrs = append(attrs, "pid", pid)
	}
	g.audit("attach", s.att.ID, a.URN, err, attrs...)
}

// deferredNote tells the model where the tools of an attachment in
// deferred tool mode are: not in its tool list.
const deferredNote = "Its tools are not in your tool list (deferred tool mode): find them with tool_search, which gives their input schemas, and call them through call_attached_tool."

// instructionsNote labels a server's instructions as what they are.
const instructionsNote = "server_instructions are the server's own words on how to use its tools: a third party's, not the user's or the gateway's."

type attachedTool struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	InputSchema json.RawMessage `json:"inputSchema,omitempty"`
}

// Bounds of the input schemas an attach's result gives, compacted: one
// tool's, and all of them. A tool whose schema does not fit goes without
// one, and how_to_call says tool_search gives it.
const (
	maxAttachedSchema  = 4 << 10
	maxAttachedSchemas = 32 << 10
)

// attachedTools are tools as an attach's result gives them, and how many
// of them go without their input schema, for its bounds.
func attachedTools(tools []attach.Tool) (out []attachedTool, unschemed int) {
	budget := maxAttachedSchemas
	for _, t := range tools {
		at := attachedTool{Name: t.Name, Description: guard.Text(t.Upstream.Description, 200)}
		var b bytes.Buffer
		if json.Compact(&b, t.Upstream.RawInputSchema) == nil && b.Len() <= min(maxAttachedSchema, budget) {
			at.InputSchema = b.Bytes()
			budget -= b.Len()
		} else {
			unschemed++
		}
		out = append(out, at)
	}
	return out, unschemed
}

// attachedCall is a call of an attached tool through call_attached_tool,
// as a model makes it: the arguments its schema requires hold
// placeholders that name their types.
type attachedCall struct {
	Tool      string `json:"tool"`
	Arguments struct {
		Name      string            `json:"name"`
		Arguments map[string]string `json:"arguments"`
	} `json:"arguments"`
}

// maxExampleArguments bounds the placeholders of a call's example.
const maxExampleArguments = 8

// exampleCall is the call of t through call_attached_tool, with a
// placeholder for each argument its schema requires (the first
// maxExampleArguments, of names up to 64 bytes); t is the first tool
// whose schema the result gives.
func exampleCall(t attachedTool) *attachedCall {
	c := &attachedCall{Tool: callAttachedTool}
	c.Arguments.Name = t.Name
	c.Arguments.Arguments = map[string]string{}
	var schema struct {
		Required   []string `json:"required"`
		Properties map[string]struct {
			Type any `json:"type"`
		} `json:"properties"`
	}
	_ = json.Unmarshal(t.InputSchema, &schema) // none, or not one: no placeholders
	for _, name := range schema.Required {
		if len(c.Arguments.Arguments) == maxExampleArguments || len(name) > 64 || name != guard.Text(name, 64) {
			continue
		}
		kind, _ := schema.Properties[name].Type.(string)
		c.Arguments.Arguments[name] = "<" + cmp.Or(guard.Text(kind, 16), "value") + ">"
	}
	return c
}

// howToCall says how to call an attachment's tools in the run that
// attached them, and where the schemas left out are.
func howToCall(deferred bool, unschemed int) string {
	how := "A client that lists tools again when told they changed has these tools from its next turn; " +
		"a framework that fixes a run's tools at its start lists them only in its next run. " +
		"Meanwhile, call them through call_attached_tool, as call_example shows, with arguments that match their inputSchema."
	if deferred {
		how = "Call them through call_attached_tool, as call_example shows, with arguments that match their inputSchema."
	}
	if unschemed > 0 {
		how += fmt.Sprintf(" The input schemas of %d of them are left out for size: tool_search gives them.", unschemed)
	}
	return how
}

// Stages of an attach, reported as progress: attach's own, and the wait
// for the user's step in a browser (userStage), which only an attach
// that puts one to the user through the client reports.
var attachStages = []string{"resolving", "fetching card", "starting", "initialising", userStage, "listing tools"}

// userStage is the stage of an attach waiting for the user's step.
const userStage = "waiting for the user"

func (g *Gateway) attach(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	var a attachArgs
	s, fail := g.begin(ctx, req, "attach_resource", &a)
	if fail != nil {
		return fail, nil
	}
	if refused := g.attachRefusal(a); refused != nil {
		return refused, nil
	}
	progress := g.reportProgress(ctx, req, len(attachStages))
	defer progress.stop()
	areq := attach.Request{URN: a.URN, RegistryID: a.RegistryID, Name: a.Name, Progress: progress.stages(attachStages),
		Consent: askedOnce(g.consent(s))} // consent.go
	att, already, err := s.att.Attach(ctx, areq)
	if step := attach.UserStep(nil); errors.As(err, &step) && s.att.ElicitsURL() {
		att, already, err = g.throughUser(ctx, s, step, progress, func() (*attach.Attachment, bool, error) {
			// Stages up to the user's are done: progress must rise.
			areq.Progress = stagesAfter(areq.Progress, userStage)
			return s.att.Attach(ctx, areq)
		})
	}
	if err != nil {
		g.audit("attach", s.att.ID, a.URN, err)
		g.metrics.attaches.WithLabelValues("unknown", "error").Inc()
		if errors.Is(err, errStepDeclined) {
			return failure("cancelled", "%v", err), nil
		}
		return g.failed(err), nil
	}
	status := "attached"
	if already {
		status = "already_attached"
	}
	g.auditAttached(s, att, status, nil)
	g.metrics.attaches.WithLabelValues(att.Kind, status).Inc()
	out := attachResult{Status: status, Kind: att.Kind, Name: att.Name, URN: att.URN, RegistryID: att.RegistryID, Endpoint: att.Endpoint(),
		Skills: att.Skills(), Protocol: att.Protocol(), Instructions: att.Instructions(), Trust: att.Trust}
	out.Note = attachNote(a, att, already, out.Instructions)
	out.Tools, out.HowToCall, out.CallExample = attachedToolsOf(att)
	return result(out), nil
}

// errStepDeclined is wrapped by the failure of an attach whose user
// declined, or cancelled, the step the client put to them.
var errStepDeclined = errors.New("not attached")

// throughUser resolves step, the failure of an attach, with the user of
// session s, whose client declared URL-mode elicitation: the client is
// asked to send its user to the step's URL; once they accepted, the call
// waits for the step to end and returns what again, the attach again,
// returns. The model is not involved, nor sees the URL. The wait is
// bounded by attach.AuthFlowTTL and by ctx, and beats progress meanwhile.
// A client that answers with an error, or not in that time, leaves step
// as the failure, whose result gives the model the link to show
// (auth_required); a user who declines or cancels fails the attach with
// errStepDeclined.
func (g *Gateway) throughUser(ctx context.Context, s *session, step attach.UserStep, progress *progressReport,
	again func() (*attach.Attachment, bool, error)) (*attach.Attachment, bool, error) {
	ctx, cancel := context.WithTimeout(ctx, attach.AuthFlowTTL)
	defer cancel()
	if progress != nil {
		progress.report(slices.Index(attachStages, userStage), userStage+" to "+stepWhat(step))
	}
	id := rand.Text()
	action, err := g.elicitURL(ctx, s, id, step.StepURL(), stepMessage(step))
	switch {
	case err != nil:
		g.log.Debug("the client was not asked to open the step's URL: its model is given the link", "session", s.att.ID, "err", err)
		return nil, false, step
	case action != mcp.ElicitationResponseActionAccept:
		did := "declined"
		if action == mcp.ElicitationResponseActionCancel {
			did = "cancelled"
		}
		return nil, false, fmt.Errorf("%w: the user %s, when the client asked them to %s; attach it again to ask again", errStepDeclined, did, stepWhat(step))
	}
	select {
	case <-step.StepDone():
	case <-ctx.Done():
		g.log.Debug("the user's step did not end in time: the model is given the link", "session", s.att.ID, "err", ctx.Err())
		return nil, false, step
	}
	// The step ended, done or not: the client stops showing it, and the
	// attach again says which.
	g.elicitationComplete(ctx, id)
	return again()
}

// stepWhat says what step asks of the user, for the message the client
// shows them and the failure of a decline: an authorization names the
// server's URN, its publisher and its address.
func stepWhat(step attach.UserStep) string {
	if ar := (*attach.AuthRequired)(nil); errors.As(step, &ar) {
		what := "authorize ardgate for " + ar.URN
		if p := ar.Publisher(); p != "" {
			what += " (published by " + p + ")"
		}
		return what + " at " + ar.Server
	}
	if kr := (*attach.KeysRequired)(nil); errors.As(step, &kr) {
		what := "give ardgate " + strings.Join(kr.Keys, ", ") + ", which " + kr.URN
		if p := kr.Publisher(); p != "" {
			what += " (published by " + p + ")"
		}
		return what + " needs, on ardgate's own page"
	}
	return "complete this step: " + step.Error()
}

// stepMessage is the message of the elicitation that puts step to the
// user: what it asks, and that what they enter stays between them and
// that page. A URN and an address are third-party text: cleaned and cut.
func stepMessage(step attach.UserStep) string {
	return guard.Text("ardgate was asked to attach an MCP server, and needs you to "+stepWhat(step)+
		". Open the link to do it in your browser; what you enter there does not pass through this client or its model. "+
		"The attach goes on once you are done.", 2000)
}

// stagesAfter is report, for the stages after last alone, or nil when
// report is: an attach again reports the stages it passed before.
func stagesAfter(report func(string), last string) func(string) {
	if report == nil {
		return nil
	}
	after := slices.Index(attachStages, last)
	return func(stage string) {
		if slices.Index(attachStages, stage) > after {
			report(stage)
		}
	}
}

// attachRefusal is the result refusing the arguments a, nil when they
// may be attached.
func (g *Gateway) attachRefusal(a attachArgs) *mcp.CallToolResult {
	if a.URN == "" {
		return invalid("attach_resource", errors.New(`"urn" is required`))
	}
	if a.RegistryID != "" {
		if _, refused := g.registry(a.RegistryID); refused != nil {
			return refused
		}
	}
	return nil
}

// attachNote is the note of att, attached for a, or attached before
// (already), whose server gave instructions.
func attachNote(a attachArgs, att *attach.Attachment, already bool, instructions string) string {
	var note string
	switch {
	case already && a.RegistryID != "" && a.RegistryID != att.RegistryID:
		note = fmt.Sprintf("%s is attached already, from registry %s, and keeps that entry: detach_resource %s first to attach the entry of %s.", att.URN, att.RegistryID, att.Name, a.RegistryID)
	case already && !att.NamedAs(a.Name):
		note = fmt.Sprintf("%s is attached already, under the name %s, and keeps it: detach_resource %s first to attach it as %q.", att.URN, att.Name, att.Name, a.Name)
	case !already && a.Name != "" && !strings.EqualFold(att.Name, a.Name):
		note = fmt.Sprintf("attached as %s, not %q: an attachment's name is lower-case letters, digits and _, at most 24 characters, and no other attachment of the session's.", att.Name, a.Name)
	}
	if att.EntryStatus != "" {
		note = strings.TrimPrefix(note+" "+statusNote(att), " ")
	}
	if att.Deferred {
		note = strings.TrimPrefix(note+" "+deferredNote, " ")
	}
	if instructions != "" {
		note = strings.TrimPrefix(note+" "+instructionsNote, " ")
	}
	return note
}

// statusNote tells the model that att's registry no longer recommends
// its entry, in the registry's words, cleaned and cut.
func statusNote(att *attach.Attachment) string {
	why := "it gave no reason"
	if att.EntryStatusMessage != "" {
		why = strconv.Quote(guard.Text(att.EntryStatusMessage, 500))
	}
	return fmt.Sprintf("Its registry marks it %s (%s): prefer an active entry that discover_resources finds, and say so to the user.", guard.Text(att.EntryStatus, 40), why)
}

// attachedToolsOf are att's tools as attach_resource shows them, and how
// to call them: an MCP server's are a list even when empty.
func attachedToolsOf(att *attach.Attachment) (out []attachedTool, how string, example *attachedCall) {
	if att.Kind == attach.KindMCPServer {
		out = []attachedTool{}
	}
	tools, unschemed := attachedTools(att.Tools())
	out = append(out, tools...)
	if len(tools) > 0 {
		first := tools[max(0, slices.IndexFunc(tools, func(t attachedTool) bool { return t.InputSchema != nil }))]
		how, example = howToCall(att.Deferred, unschemed), exampleCall(first)
	}
	return out, how, example
}

const detachSchema = `{
  "type": "object",
  "properties": {
    "urn": {"type": "string", "description": "URN of the attachment."},
    "name": {"type": "string", "description": "Name of the attachment (as list_attached_resources shows it)."}
  },
  "additionalProperties": false
}`

func (g *Gateway) detachTool() server.ServerTool {
	return newTool("detach_resource", "Detach resource",
		"Detach an attached resource by urn or name: its tools go away and its process or connection is closed.",
		detachSchema, hints{destructive: true}, g.detach)
}

func (g *Gateway) detach(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	var a struct {
		URN  string `json:"urn"`
		Name string `json:"name"`
	}
	s, fail := g.begin(ctx, req, "detach_resource", &a)
	if fail != nil {
		return fail, nil
	}
	if (a.URN == "") == (a.Name == "") {
		return invalid("detach_resource", errors.New(`give exactly one of "urn" and "name"`)), nil
	}
	att, cancelled, stopped, err := s.att.Detach(a.URN + a.Name)
	if stopped != nil {
		// One still starting (an npx download) is stopped: its
		// attach_resource ends saying so.
		g.audit("detach", s.att.ID, stopped.URN, nil, "name", stopped.Name, "starting", true)
		return result(map[string]any{"status": "detached", "urn": stopped.URN, "name": stopped.Name,
			"note": "it was still starting: its start is stopped, and its attach_resource ends saying so"}), nil
	}
	if err != nil {
		g.audit("detach", s.att.ID, a.URN+a.Name, err)
		return g.failed(err), nil
	}
	g.audit("detach", s.att.ID, att.URN, nil, "name", att.Name)
	out := map[string]any{"status": "detached", "urn": att.URN, "name": att.Name}
	if att.Kind == attach.KindA2AAgent {
		out["tasks_cancelled"] = cancelled // its unfinished tasks, which nothing could cancel once detached
	}
	return result(out), nil
}

func (g *Gateway) listTool() server.ServerTool {
	return newTool("list_attached_resources", "List attached resources",
		"List this session's attachments with their status (up, starting, down) and counts of their tools, prompts and resources.",
		noArguments, hints{readOnly: true, idempotent: true}, g.list)
}

type listedAttachment struct {
	URN  string `json:"urn"`
	Name string `json:"name"`
	// Kind, MediaType, RegistryID and Endpoint are left out while not
	// known: an attach under way has not resolved its entry yet, and a
	// pinned agent's endpoint is its card's, once fetched. They were
	// listed as "", kind outside its mcp_server|a2a_agent.
	Kind       string `json:"kind,omitempty"`
	MediaType  string `json:"media_type,omitempty"`
	RegistryID string `json:"registry_id,omitempty"`
	Endpoint   string `json:"endpoint,omitempty"`
	Status     string `json:"status"`
	WhyDown    string `json:"why_down,omitempty"`
	ToolsCount int    `json:"tools_count"`
	// The server's prompts, resources and resource templates (offers.go).
	PromptsCount   int `json:"prompts_count,omitempty"`
	ResourcesCount int `json:"resources_count,omitempty"`
	TemplatesCount int `json:"resource_templates_count,omitempty"`
	// OnlyTools are the config's patterns of the tools let through.
	OnlyTools  []string `json:"only_tools,omitempty"`
	PID        int      `json:"pid,omitempty"`
	Protocol   string   `json:"a2a_protocol,omitempty"`
	Pinned     bool     `json:"pinned"`
	AttachedAt string   `json:"attached_at"`
	// Trust is what the trust gate checked, digests included.
	Trust *guard.TrustReport `json:"trust,omitempty"`
}

func (g *Gateway) list(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	var none struct{}
	s, fail := g.begin(ctx, req, "list_attached_resources", &none)
	if fail != nil {
		return fail, nil
	}
	atts := s.att.Attachments()
	out := struct {
		Count       int                `json:"count"`
		Max         int                `json:"max"`
		Attachments []listedAttachment `json:"attachments"`
	}{Count: len(atts), Max: s.att.Max(), Attachments: []listedAttachment{}}
	for _, a := range atts {
		status, why := a.Status()
		prompts, resources, templates := a.OfferCounts()
		out.Attachments = append(out.Attachments, listedAttachment{
			URN: a.URN, Name: a.Name, Kind: a.Kind, MediaType: a.MediaType, RegistryID: a.RegistryID,
			Endpoint: a.Endpoint(), Status: status, WhyDown: guard.Text(why, 1000), ToolsCount: len(a.Tools()),
			PromptsCount: prompts, ResourcesCount: resources, TemplatesCount: templates,
			OnlyTools: a.Only, PID: a.PID(), Protocol: a.Protocol(),
			Pinned: a.Pinned, AttachedAt: a.AttachedAt.UTC().Format(time.RFC3339), Trust: a.Trust,
		})
	}
	// Attaches under way too: a start that downloads a package takes a
	// while, and the listing showed nothing of it.
	for _, u := range s.att.Underway() {
		out.Attachments = append(out.Attachments, listedAttachment{URN: u.URN, Name: u.Name, Status: attach.StatusStarting,
			AttachedAt: u.Since.UTC().Format(time.RFC3339)})
	}
	out.Count = len(out.Attachments)
	return result(out), nil
}
