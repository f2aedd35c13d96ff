package attach

import (
	"cmp"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/a2aproject/a2a-go/a2a"

	"github.com/ardgate/ardgate/guard"
	"github.com/ardgate/ardgate/registry"
)

// Errors of the task tools.
var (
	ErrTaskNotFound = errors.New("no such task in this session")
	ErrTaskLost     = errors.New("the agent no longer knows the task")
	ErrNoAgent      = errors.New("no such agent")
	ErrStoreFull    = errors.New("task store full")
	ErrTaskFinished = errors.New("the task takes no more messages")
	ErrTaskBusy     = errors.New("the task is not waiting for input")
	ErrOtherContext = errors.New("another agent's conversation")
	// ErrAnsweredMeanwhile refuses a message to a task whose question
	// another message answered while it waited its turn.
	ErrAnsweredMeanwhile = errors.New("another message answered the question first")
)

// TaskView is a task as the tools show it.
type TaskView struct {
	ID        string        `json:"task_id"`
	Agent     string        `json:"agent"`
	ContextID string        `json:"context_id,omitempty"`
	State     string        `json:"state"`
	Final     bool          `json:"final"`
	Messages  []TaskMessage `json:"messages"`
	// EarlierDropped tells that the task had more messages than the
	// newest maxMessages that Messages holds.
	EarlierDropped bool           `json:"earlier_messages_dropped,omitempty"`
	Artifacts      []TaskArtifact `json:"artifacts"`
	// NotShown tells of the parts left out past the view's text budget.
	NotShown *NotShown `json:"not_shown,omitempty"`
	// Media are the task's inline images and audio, for the tools to
	// give as content of their own beside the view (a model reads an
	// image; "11 bytes inline, not shown" it could do nothing with).
	Media []TaskMedia `json:"-"`
	// Lost says why the agent can no longer tell of the task, which is
	// then over (Final), as last seen.
	Lost string `json:"lost,omitempty"`
}

// NotShown says what of a task's parts a view left out: its parts'
// text, messages' and artifacts' together and in that order, is shown up
// to a budget, and the parts past it are not.
type NotShown struct {
	Parts     int    `json:"parts"`
	Messages  int    `json:"messages"`  // that lost parts
	Artifacts int    `json:"artifacts"` // that lost parts
	Bytes     int    `json:"bytes"`     // of the text they would have shown
	Note      string `json:"note"`
}

// TaskMedia is an inline image or audio file of a task's parts.
type TaskMedia struct {
	Audio    bool   // else an image
	MIMEType string // image/… or audio/…
	Data     string // base64, as the agent sent it
}

// Inline media a view gives as content, at most: enough for a few
// screenshots or charts, and with the view's text well within what a
// client reads as one message (10 MiB for the TypeScript SDK).
const (
	maxMedia      = 8
	maxMediaBytes = 4 << 20 // of base64
)

// mediaType matches the media types given as content.
var mediaType = regexp.MustCompile(`^(image|audio)/[a-z0-9][a-z0-9.+-]{0,60}$`)

// TaskMessage is one message of a task, its parts rendered as text. Its
// text is bounded by the view's budget (viewText) as it is rendered; the
// bound of its tag, twice that, holds the newlines joining its parts.
type TaskMessage struct {
	Role string `json:"role"`
	Text string `json:"text" shown:"524288,lines"`
}

// TaskArtifact is one artifact, its parts rendered as text; file and data
// parts are described, not inlined. A part shows at most maxPartText
// characters, after "[data] " for a data part and before the note of its
// cut: its tag's bound holds them.
type TaskArtifact struct {
	Name  string   `json:"name,omitempty"`
	Parts []string `json:"parts" shown:"4100,lines"`
}

// task is one task the session started, bound to the agent that runs it.
type task struct {
	// id is the task's id in the session, unique in it (taskStore.add):
	// remote, the agent's own, unless another task of the session has it
	// (two agents that both number their tasks 1, 2, …) or it is not fit
	// to show.
	id        string
	remote    string
	agent     *Attachment
	contextID string
	direct    bool // the agent answered with a message: there is no remote task

	mu   sync.Mutex
	last *a2a.Task
	// dropped: messages older than the newest maxMessages were left out.
	dropped bool
	// lost says why the agent can no longer tell of the task (it forgot
	// it, or was detached); a lost task is over.
	lost string

	// sending is held while a message goes to the task, and its wait:
	// a second message goes after the first has, and is refused when the
	// first answered the question it was sent for (sent tells).
	sending sync.Mutex
	sent    int // messages the agent took into the task (not those it answered with a message of its own), under mu
}

// taskStore keeps a session's tasks, up to max; when full, the oldest
// finished task goes; unfinished tasks are never dropped.
type taskStore struct {
	mu    sync.Mutex
	max   int
	order []string
	byID  map[string]*task
}

// DefaultMaxTasks bounds each session's task store.
const DefaultMaxTasks = 1000

// add keeps t, under an id of its own in the store: t.id, or, when that
// is taken or not fit to show, one made of it (sessionTaskID).
func (s *taskStore) add(t *task) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.byID == nil {
		s.byID = map[string]*task{}
	}
	if len(s.order) >= s.max {
		i := s.evictable()
		if i < 0 {
			return s.full()
		}
		delete(s.byID, s.order[i])
		s.order = slices.Delete(s.order, i, i+1)
	}
	t.id = s.sessionTaskID(t.id, t.agent.Name)
	s.byID[t.id] = t
	s.order = append(s.order, t.id)
	return nil
}

// maxTaskID bounds an id the session shows for a task; an agent picks its
// tasks' ids, and one of 200,000 characters went into every listing.
const maxTaskID = 100

// sessionTaskID is the id the session gives a task whose agent, named
// agent, calls it remote: remote itself when it is free and fit to show,
// else "<agent>:<remote>", cleaned and bounded, then with "#2", "#3", …
// until free. s.mu is held.
func (s *taskStore) sessionTaskID(remote, agent string) string {
	id := guard.Text(remote, maxTaskID)
	if id == "" {
		id = "task"
	}
	if _, taken := s.byID[id]; !taken && id == remote {
		return id
	}
	base := agent + ":" + id
	id = base
	for n := 2; ; n++ {
		if _, taken := s.byID[id]; !taken {
			return id
		}
		id = base + "#" + strconv.Itoa(n)
	}
}

// room says whether a task could be added now, so that a spawn is refused
// before its message goes to the agent: refused after, the agent would
// run a task nobody can see or cancel.
func (s *taskStore) room() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.order) >= s.max && s.evictable() < 0 {
		return s.full()
	}
	return nil
}

// evictable is the index of the oldest finished (or lost) task, or -1.
// s.mu is held.
func (s *taskStore) evictable() int {
	return slices.IndexFunc(s.order, func(id string) bool { return s.byID[id].final() })
}

func (s *taskStore) full() error {
	return fmt.Errorf("%w: %d tasks are unfinished; cancel some with cancel_task", ErrStoreFull, len(s.order))
}

// contextOf names the agent whose conversation contextID is, when that is
// not a: an agent knows only its own contexts, and another's would begin a
// new conversation, not go on with the one the caller means. It returns ""
// for a context a has tasks in, or none of the session's tasks has.
func (s *taskStore) contextOf(contextID string, a *Attachment) string {
	if contextID == "" {
		return ""
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	other := ""
	for _, t := range s.byID {
		switch {
		case t.contextID != contextID:
		case t.agent.URN == a.URN:
			return ""
		default:
			other = t.agent.Name
		}
	}
	return other
}

// agentContext is the context id, as its agent gave it, that the
// session's tasks show as shown (cleaned and bounded, as task views show
// ids); shown itself when none does.
func (s *taskStore) agentContext(shown string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, t := range s.byID {
		if t.contextID == shown {
			return shown
		}
	}
	for _, t := range s.byID {
		if guard.Text(t.contextID, maxTaskID) == shown {
			return t.contextID
		}
	}
	return shown
}

func (s *taskStore) get(id string) (*task, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t, ok := s.byID[id]
	if !ok {
		return nil, fmt.Errorf("%w: %q (unknown, or evicted as one of the oldest finished tasks); list_tasks shows the session's tasks", ErrTaskNotFound, id)
	}
	return t, nil
}

func (s *taskStore) all() []*task {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]*task, 0, len(s.order))
	for _, id := range s.order {
		out = append(out, s.byID[id])
	}
	return out
}

func (t *task) final() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.lost != "" || t.last != nil && t.last.Status.State.Terminal()
}

// lose records that the agent can no longer tell of the task, and why.
func (t *task) lose(why string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.lost == "" {
		t.lost = why
	}
}

// asking reports whether the task waits for the client: for input, or
// for authentication.
func (t *task) asking() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.last != nil && (t.last.Status.State == a2a.TaskStateInputRequired || t.last.Status.State == a2a.TaskStateAuthRequired)
}

// apply records a fresh view of the task, bounded; it reports whether
// anything a caller would see changed. An answer that is no task, or
// another task, is not taken.
func (t *task) apply(next *a2a.Task) bool {
	if !t.takes(next) {
		return false
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.applyLocked(next)
}

// takes tells whether next is a view of this task.
func (t *task) takes(next *a2a.Task) bool {
	return next != nil && (t.direct || next.ID == "" || string(next.ID) == t.remote)
}

// applyLocked is apply with t.mu held.
func (t *task) applyLocked(next *a2a.Task) bool {
	keepSaid(t.last, next)
	if bound(next) {
		t.dropped = true
	}
	changed := t.last == nil || t.last.Status.State != next.Status.State || len(t.last.Artifacts) != len(next.Artifacts) ||
		len(t.last.History) != len(next.History) || (next.Status.Message != nil && (t.last.Status.Message == nil || t.last.Status.Message.ID != next.Status.Message.ID))
	t.last = next
	return changed
}

// keepSaid puts next's history in the order its messages were said, as
// far as the task's last view (prev) tells: the messages prev had, its
// status message too, come before the ones new since, and those next
// dropped are kept. An agent on a2a-go takes in the answer to its
// question while the question is still only its status, and later puts
// the question after the answer ("ask, Ada, what is your name?");
// another may drop the question. The messages before the first one prev
// had stay first: they are older ones that prev, bounded, no longer kept.
func keepSaid(prev, next *a2a.Task) {
	if prev == nil {
		return
	}
	first := slices.IndexFunc(next.History, func(m *a2a.Message) bool { return hasMessage(prev.History, m.ID) || isStatus(prev, m) })
	if first < 0 {
		first = len(next.History)
	}
	rest := next.History[first:]
	var fresh []*a2a.Message
	for _, m := range rest {
		if !hasMessage(prev.History, m.ID) && !isStatus(prev, m) {
			fresh = append(fresh, m)
		}
	}
	said := prev.History
	// prev's status message, unless it is still only next's status and
	// nothing came after it.
	if m := prev.Status.Message; m != nil && !hasMessage(said, m.ID) && (len(fresh) > 0 || hasMessage(next.History, m.ID) || !isStatus(next, m)) {
		said = append(slices.Clone(said), m)
	}
	out := append(append(slices.Clone(next.History[:first]), said...), fresh...)
	if !slices.EqualFunc(out, next.History, func(a, b *a2a.Message) bool { return a.ID == b.ID }) {
		next.History = out
	}
}

// look asks the agent for the task as it is now and records it; changed
// says whether anything a caller would see changed. A task the agent no
// longer knows is lost.
func (t *task) look(ctx context.Context, conn *agentConn) (changed bool, err error) {
	cur, err := conn.client.GetTask(ctx, &a2a.TaskQueryParams{ID: a2a.TaskID(t.remote)})
	if err != nil {
		return t.forgotten(err), err
	}
	return t.apply(cur), nil
}

// forgotten loses the task if err is its agent saying it does not know
// it, and reports whether it did.
func (t *task) forgotten(err error) bool {
	if !errors.Is(err, a2a.ErrTaskNotFound) || t.final() {
		return false
	}
	t.lose("the agent no longer knows this task (it may have restarted, or dropped it); what it last said is kept")
	return true
}

// isStatus tells whether m is t's status message.
func isStatus(t *a2a.Task, m *a2a.Message) bool {
	return t.Status.Message != nil && t.Status.Message.ID == m.ID
}

func hasMessage(list []*a2a.Message, id string) bool {
	return slices.ContainsFunc(list, func(m *a2a.Message) bool { return m.ID == id })
}

// update applies what change makes of a copy of the task as last seen,
// unless change says there is nothing to apply. The copy is taken and
// applied under one lock: a look or another wait applying in between
// would otherwise be overwritten by a copy older than it.
func (t *task) update(change func(next *a2a.Task) bool) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	next := &a2a.Task{ID: a2a.TaskID(t.remote), ContextID: t.contextID}
	if t.last != nil {
		c := *t.last
		next = &c
	}
	return change(next) && t.applyLocked(next)
}

// applyEvent folds one streamed event into the task.
func (t *task) applyEvent(ev a2a.Event) bool {
	if snap, ok := ev.(*a2a.Task); ok {
		return t.apply(snap)
	}
	return t.update(func(next *a2a.Task) bool {
		switch e := ev.(type) {
		case *a2a.TaskStatusUpdateEvent:
			if e.TaskID != "" && string(e.TaskID) != t.remote {
				return false // another task's
			}
			// The status message a new status replaces joins the history,
			// unless the agent's snapshot already had it there.
			if m := next.Status.Message; m != nil && !hasMessage(next.History, m.ID) {
				next.History = append(slices.Clone(next.History), m)
			}
			next.Status = e.Status
		case *a2a.TaskArtifactUpdateEvent:
			if e.Artifact == nil || e.TaskID != "" && string(e.TaskID) != t.remote {
				return false
			}
			next.Artifacts = mergeArtifact(next.Artifacts, e)
		default:
			return false
		}
		return true
	})
}

func mergeArtifact(list []*a2a.Artifact, e *a2a.TaskArtifactUpdateEvent) []*a2a.Artifact {
	list = slices.Clone(list)
	for i, a := range list {
		if a.ID == e.Artifact.ID {
			if e.Append {
				merged := *a
				merged.Parts = appendParts(a.Parts, e.Artifact.Parts)
				list[i] = &merged
			} else {
				list[i] = e.Artifact
			}
			return list
		}
	}
	return append(list, e.Artifact)
}

// appendParts appends more to a copy of parts. Text streamed in chunks
// (a token or a line each) is joined into parts of up to maxPartText, the
// most a part shows, so that a long answer is kept whole in few parts.
func appendParts(parts, more a2a.ContentParts) a2a.ContentParts {
	out := slices.Clone(parts)
	for _, p := range more {
		next, ok := p.(a2a.TextPart)
		if n := len(out); ok && n > 0 && len(next.Metadata) == 0 {
			if last, ok := out[n-1].(a2a.TextPart); ok && len(last.Metadata) == 0 && len(last.Text)+len(next.Text) <= maxPartText {
				out[n-1] = a2a.TextPart{Text: last.Text + next.Text}
				continue
			}
		}
		out = append(out, p)
	}
	return out
}

// Bounds of what a task keeps and its view carries to the model.
const (
	maxPartText  = 4000
	maxMessages  = 20
	maxArtifacts = 50
	maxParts     = 200 // of one artifact
)

// bound keeps of a task what its view can show: its newest maxMessages
// messages (dropped tells that there were more), its first maxArtifacts
// artifacts and maxParts parts of each, a marker standing for those left
// out. An agent may stream any number of status updates and artifact
// chunks; each is folded into a copy of what is kept, which would
// otherwise grow with every one, in memory and in time.
func bound(t *a2a.Task) (dropped bool) {
	if n := len(t.History); n > maxMessages {
		t.History = slices.Clone(t.History[n-maxMessages:])
		dropped = true
	}
	if len(t.Artifacts) > maxArtifacts+1 {
		t.Artifacts = append(slices.Clone(t.Artifacts[:maxArtifacts]), moreArtifacts)
	}
	cloned := false
	for i, a := range t.Artifacts {
		if len(a.Parts) <= maxParts+1 {
			continue
		}
		if !cloned { // the slice may be shared with what was kept before
			t.Artifacts, cloned = slices.Clone(t.Artifacts), true
		}
		c := *a
		c.Parts = append(slices.Clone(a.Parts[:maxParts]), moreParts)
		t.Artifacts[i] = &c
	}
	return dropped
}

// The markers of what bound left out.
var (
	moreArtifacts = &a2a.Artifact{ID: "ardgate-more-artifacts", Name: "(more artifacts, not kept)"}
	moreParts     = a2a.TextPart{Text: "(more parts, not kept)"}
)

// viewText bounds the text of its parts that a view of a task shows, its
// messages' and artifacts' together. A view goes into a model's context,
// and onto the wire twice (structuredContent, and the same as text): each
// part and artifact was bounded and the whole was not, and 50 artifacts of
// 200 parts of 4,000 characters made one wait_task answer of 80 MB, past
// the 10 MiB a TypeScript client reads in one line (its session died).
const viewText = 256 << 10

// summaryText bounds the text of a task's last message in a listing,
// which shows 300 characters of it.
const summaryText = 2 << 10

func (t *task) view() TaskView {
	return t.render(viewText, true)
}

// summary is the task as a listing shows it: every message and artifact
// counted, the last message's text alone rendered. A listing built whole
// views, 1000 of them up to 256 MB, to show 300 characters of each.
func (t *task) summary() TaskView {
	return t.render(0, false)
}

// render is the task's view, its parts' text shown up to budget bytes,
// its inline media given when media is set; a budget of 0 renders its
// summary.
func (t *task) render(budget int, media bool) (v TaskView) {
	t.mu.Lock()
	defer t.mu.Unlock()
	v = TaskView{ID: t.id, Agent: t.agent.Name, ContextID: guard.Text(t.contextID, maxTaskID), State: string(a2a.TaskStateSubmitted),
		Messages: []TaskMessage{}, Artifacts: []TaskArtifact{}, Lost: t.lost, Final: t.lost != ""}
	if t.last == nil {
		return v
	}
	v.State = cmp.Or(guard.Text(string(t.last.Status.State), 40), string(a2a.TaskStateUnknown))
	v.Final = v.Final || t.last.Status.State.Terminal()
	msgs := slices.Clone(t.last.History)
	if m := t.last.Status.Message; m != nil && !hasMessage(msgs, m.ID) {
		msgs = append(msgs, m)
	}
	v.EarlierDropped = t.dropped || len(msgs) > maxMessages
	if len(msgs) > maxMessages {
		msgs = msgs[len(msgs)-maxMessages:]
	}
	if budget == 0 {
		for i, m := range msgs {
			v.Messages = append(v.Messages, TaskMessage{Role: string(m.Role)})
			if i == len(msgs)-1 {
				b := textBudget{left: summaryText}
				parts, _ := b.show(m.Parts)
				v.Messages[i].Text = strings.Join(parts, "\n")
			}
		}
		for _, a := range t.last.Artifacts {
			v.Artifacts = append(v.Artifacts, TaskArtifact{Name: guard.Text(a.Name, 120), Parts: []string{}})
		}
		return v
	}
	b := textBudget{left: budget, media: media}
	for _, m := range msgs {
		parts, cut := b.show(m.Parts)
		v.Messages = append(v.Messages, TaskMessage{Role: string(m.Role), Text: strings.Join(parts, "\n")})
		b.not.Messages += cut
	}
	for _, a := range t.last.Artifacts {
		parts, cut := b.show(a.Parts)
		v.Artifacts = append(v.Artifacts, TaskArtifact{Name: guard.Text(a.Name, 120), Parts: parts})
		b.not.Artifacts += cut
	}
	if b.not.Parts > 0 {
		b.not.Note = fmt.Sprintf("%d parts (about %d bytes of text) of %d messages and %d artifacts are not shown: a view shows at most %d bytes of the task's parts' text, "+
			"messages' then artifacts', in order, the same ones every time",
			b.not.Parts, b.not.Bytes, b.not.Messages, b.not.Artifacts, budget)
		v.NotShown = &b.not
	}
	v.Media = b.given
	return v
}

// textBudget spends a view's text budget on parts, in order: once a part
// does not fit, neither it nor any after it is shown, so that what a
// view shows is all that came before what it does not.
type textBudget struct {
	left int
	full bool // a part did not fit
	not  NotShown
	// media says to give inline images and audio as content (given), up
	// to maxMedia of them and maxMediaBytes.
	media      bool
	given      []TaskMedia
	mediaBytes int
}

// show renders the parts that fit; cut is 1 when some did not.
func (b *textBudget) show(parts a2a.ContentParts) (shown []string, cut int) {
	shown = []string{}
	for i, p := range parts {
		var text string
		if !b.full {
			text = b.give(p)
			b.full = len(text) > b.left
		}
		if b.full {
			b.not.Parts += len(parts) - i
			for _, rest := range parts[i:] {
				b.not.Bytes += partSize(rest)
			}
			return shown, 1
		}
		b.left -= len(text)
		shown = append(shown, text)
	}
	return shown, 0
}

// give renders p, and when it is an inline image or audio that media
// takes, gives it as content, the text saying where it went.
func (b *textBudget) give(p a2a.Part) string {
	fp, ok := p.(a2a.FilePart)
	f, inline := fp.File.(a2a.FileBytes)
	mime := strings.ToLower(strings.TrimSpace(f.MimeType))
	if !ok || !inline || !b.media || !mediaType.MatchString(mime) || len(b.given) == maxMedia || b.mediaBytes+len(f.Bytes) > maxMediaBytes {
		return partText(p)
	}
	data, err := base64.StdEncoding.DecodeString(f.Bytes)
	if err != nil {
		return partText(p) // what a client could not show
	}
	text := fmt.Sprintf("[file %q (%s), %d bytes inline: given after this view, as the result's media %d]", guard.Text(f.Name, 120), mime, len(data), len(b.given)+1)
	if len(text) > b.left {
		return text // not shown, so not given: no media the view does not tell of
	}
	b.given = append(b.given, TaskMedia{Audio: strings.HasPrefix(mime, "audio/"), MIMEType: mime, Data: f.Bytes})
	b.mediaBytes += len(f.Bytes)
	return text
}

// partSize is about the length of partText(p), without rendering a text
// part: a view leaves out up to 10,000 of them, on every update.
func partSize(p a2a.Part) int {
	if v, ok := p.(a2a.TextPart); ok {
		return min(len(v.Text), maxPartText)
	}
	return len(partText(p))
}

// partText renders a part for the model: text as text, its lines kept
// (sanitised and bounded: it is another party's output), files and data
// described.
func partText(p a2a.Part) string {
	switch v := p.(type) {
	case a2a.TextPart:
		return guard.Body(v.Text, maxPartText)
	case a2a.DataPart:
		b, _ := json.Marshal(v.Data)
		return "[data] " + guard.Body(string(b), maxPartText)
	case a2a.FilePart:
		switch f := v.File.(type) {
		case a2a.FileURI:
			return fmt.Sprintf("[file %q (%s) at %s]", guard.Text(f.Name, 120), guard.Text(f.MimeType, 80), guard.Text(f.URI, 300))
		case a2a.FileBytes:
			return fmt.Sprintf("[file %q (%s), %d bytes inline, not shown]", guard.Text(f.Name, 120), guard.Text(f.MimeType, 80), len(strings.TrimRight(f.Bytes, "="))*3/4)
		}
	}
	return "[part of an unknown kind]"
}

// agentFor picks the agent a spawn names (attachment name or URN); with
// no name and exactly one agent attached, that one.
func (s *Session) agentFor(name string) (*Attachment, error) {
	var agents []*Attachment
	key := registry.CanonicalURN(name)
	for _, a := range s.Attachments() {
		switch {
		case a.Kind == KindA2AAgent:
			agents = append(agents, a)
		case name != "" && (a.Name == name || a.URN == key):
			return nil, fmt.Errorf("%w: %s is an MCP server, not an A2A agent: call its tools, named mcp_%s__<tool>", ErrNoAgent, a.Name, a.Name)
		}
	}
	names := func() string {
		var n []string
		for _, a := range agents {
			n = append(n, a.Name)
		}
		if len(n) == 0 {
			return "none are attached; attach an A2A agent with attach_resource first"
		}
		return "attached agents: " + strings.Join(n, ", ")
	}
	if name == "" {
		if len(agents) == 1 {
			return agents[0], nil
		}
		return nil, fmt.Errorf("%w: say which agent (%s)", ErrNoAgent, names())
	}
	for _, a := range agents {
		if a.Name == name || a.URN == key {
			return a, nil
		}
	}
	return nil, fmt.Errorf("%w: %q (%s)", ErrNoAgent, name, names())
}

// Spawn sends message to an agent without waiting and returns the task.
// An agent that answers with a message, not a task, gives a task that is
// already completed.
func (s *Session) Spawn(ctx context.Context, agentName, message, contextID string) (TaskView, error) {
	a, err := s.agentFor(agentName)
	if err != nil {
		return TaskView{}, err
	}
	if contextID != "" {
		contextID = s.tasks.agentContext(contextID)
	}
	if other := s.tasks.contextOf(contextID, a); other != "" {
		return TaskView{}, fmt.Errorf("%w: context_id %s is a conversation with %s, not %s; spawn_agent on %s to go on with it, or leave context_id out to begin a new one",
			ErrOtherContext, contextID, other, a.Name, other)
	}
	conn, err := s.agentReached(ctx, a)
	if err != nil {
		return TaskView{}, err
	}
	if err := s.tasks.room(); err != nil {
		return TaskView{}, err
	}
	msg := a2a.NewMessage(a2a.MessageRoleUser, a2a.TextPart{Text: message})
	msg.ContextID = contextID
	var res a2a.SendMessageResult
	if err := s.askAgent(ctx, a, "the message", func(ctx context.Context) (err error) {
		res, err = conn.client.SendMessage(ctx, &a2a.MessageSendParams{Message: msg})
		return err
	}); err != nil {
		return TaskView{}, err
	}
	t := &task{agent: a}
	switch r := res.(type) {
	case *a2a.Task:
		t.remote, t.contextID = string(r.ID), r.ContextID
		t.id = t.remote
		t.apply(r)
	case *a2a.Message:
		t.id, t.contextID, t.direct = "msg-"+r.ID, r.ContextID, true
		t.apply(&a2a.Task{ContextID: r.ContextID,
			History: []*a2a.Message{msg, r}, Status: a2a.TaskStatus{State: a2a.TaskStateCompleted}})
	default:
		return TaskView{}, fmt.Errorf("%s: the agent answered neither a task nor a message", a.Name)
	}
	if err := s.tasks.add(t); err != nil {
		// Filled by spawns running alongside since room said yes.
		if !t.direct && !t.final() {
			go cancelTask(context.Background(), conn, t.remote)
		}
		return TaskView{}, err
	}
	return t.view(), nil
}

// askAgent runs one request to agent a, bounded as a proxied call is: an
// agent that never answered held the tool call, and the client, for
// good. Its error says which agent failed and how.
func (s *Session) askAgent(ctx context.Context, a *Attachment, what string, do func(context.Context) error) error {
	parent := ctx
	timeout := s.timeout(a)
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	err := do(ctx)
	a.reached(err)
	switch {
	case err == nil:
		return nil
	case parent.Err() == nil && errors.Is(ctx.Err(), context.DeadlineExceeded):
		return &AgentError{URN: a.URN, Err: errNoAnswer(a, what, timeout)}
	}
	return &AgentError{URN: a.URN, Err: fmt.Errorf("%s: %w", a.Name, describeA2AError(err))}
}

// Wait waits up to timeout for a task to finish or to need input,
// following the agent's stream when it streams and polling when not.
// onUpdate hears every change on the way.
func (s *Session) Wait(ctx context.Context, id string, timeout time.Duration, onUpdate func(TaskView)) (TaskView, error) {
	t, err := s.tasks.get(id)
	if err != nil {
		return TaskView{}, err
	}
	return s.wait(ctx, t, timeout, onUpdate, "")
}

// wait is Wait on a task; answered, if set, is the status message of a
// question just answered: until the agent moves past it, the task is not
// waiting for input again, only not yet updated.
func (s *Session) wait(ctx context.Context, t *task, timeout time.Duration, onUpdate func(TaskView), answered string) (TaskView, error) {
	id := t.id
	if t.direct || t.final() {
		return t.view(), nil
	}
	conn, err := t.agent.agentConn()
	if err != nil {
		return t.view(), fmt.Errorf("task %s is bound to %s: %w", id, t.agent.Name, err)
	}
	// The first look is made whatever the timeout, within the agent's
	// call timeout: a wait of 0 asks for the task as it is now, not as the
	// gateway last saw it. Every look is bounded so: an agent that does
	// not answer one is said not to, where the wait went on, or ended, with
	// the task as last seen, saying nothing.
	at := s.timeout(t.agent)
	parent := ctx
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	settled := func() bool {
		v := t.view()
		if v.Final {
			return true
		}
		if v.State != string(a2a.TaskStateInputRequired) && v.State != string(a2a.TaskStateAuthRequired) {
			return false
		}
		return answered == "" || t.statusMessageID() != answered
	}
	// refresh looks at the task within the agent's timeout, from within
	// (the first look's parent, else the wait's).
	refresh := func(within context.Context) error {
		look, cancel := context.WithTimeout(within, at)
		defer cancel()
		changed, err := t.look(look, conn)
		if changed && onUpdate != nil {
			onUpdate(t.view())
		}
		switch {
		case err == nil, errors.Is(err, a2a.ErrTaskNotFound): // lost: the view says so
			return nil
		case within.Err() == nil && errors.Is(look.Err(), context.DeadlineExceeded):
			return &AgentError{URN: t.agent.URN, Err: fmt.Errorf("%w; task %s is shown as last seen, %s", errNoAnswer(t.agent, "the look at task "+id, at), id, t.view().State)}
		}
		return describeA2AError(err)
	}
	if err := refresh(parent); err != nil {
		return t.view(), s.waitError(parent, t, err)
	}
	if conn.streaming && !settled() {
		for ev, err := range conn.client.ResubscribeToTask(ctx, &a2a.TaskIDParams{ID: a2a.TaskID(t.remote)}) {
			if err != nil {
				break // fall back to polling
			}
			if t.applyEvent(ev) && onUpdate != nil {
				onUpdate(t.view())
			}
			if settled() {
				break
			}
		}
		// The stream tells only of what happened after it was joined,
		// after the first look: what the agent said in between (an
		// artifact) would be missing from a task the stream saw settle.
		// One more look takes the agent's own record; should it fail,
		// the stream's view stands.
		if settled() && ctx.Err() == nil {
			_ = refresh(ctx)
		}
	}
	for !settled() {
		if !sleep(ctx, 250*time.Millisecond) {
			return t.view(), s.waitError(ctx, t, ctx.Err())
		}
		if err := refresh(ctx); err != nil {
			return t.view(), s.waitError(ctx, t, err)
		}
	}
	return t.view(), nil
}

// waitError says why a wait ended early: its own deadline (not an error
// the model must handle: the task still runs), or the agent.
func (s *Session) waitError(ctx context.Context, t *task, err error) error {
	switch {
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		return nil // the view says the task is still running
	case ctx.Err() != nil && errors.Is(err, context.Canceled):
		err = Cancelled(context.Cause(ctx))
	}
	t.agent.reached(err)
	return &AgentError{URN: t.agent.URN, Err: fmt.Errorf("task %s on %s: %w", t.id, t.agent.Name, err)}
}

// Reply continues a task (one that asked for input) in its context, then
// waits like Wait.
func (s *Session) Reply(ctx context.Context, id, message string, timeout time.Duration, onUpdate func(TaskView)) (TaskView, error) {
	t, err := s.tasks.get(id)
	if err != nil {
		return TaskView{}, err
	}
	if t.direct {
		return TaskView{}, fmt.Errorf("%w: task %s was a direct reply; start a new one with spawn_agent (context_id %s keeps the conversation)", ErrTaskFinished, id, t.contextID)
	}
	if t.final() { // before the agent: one detached ended its tasks
		return t.view(), s.finished(t)
	}
	conn, err := t.agent.agentConn()
	if err != nil {
		return t.view(), fmt.Errorf("task %s is bound to %s: %w", id, t.agent.Name, err)
	}
	// The question the message answers, as the caller last saw it, and
	// the messages taken by then, read together: a message taken is
	// counted and its task's answer applied together too.
	question, sent := t.askedAfter()
	t.sending.Lock()
	defer t.sending.Unlock()
	if t.final() { // perhaps after a message sent just before
		return t.view(), s.finished(t)
	}
	if _, now := t.askedAfter(); now != sent {
		// Sent now, it would answer a question its sender never saw:
		// of "Ann" and "Bea" sent at once to a task asking a name, then
		// an age, one became the name and the other the age.
		return t.view(), t.answeredMeanwhile(question)
	}
	msg := a2a.NewMessage(a2a.MessageRoleUser, a2a.TextPart{Text: message})
	msg.TaskID, msg.ContextID = a2a.TaskID(t.remote), t.contextID
	var res a2a.SendMessageResult
	var answered string // the question the message answers, if it asked one
	asking := t.asking()
	if err := s.askAgent(ctx, t.agent, "the message", func(ctx context.Context) (err error) {
		if !asking {
			// The task may have asked since the gateway last looked (a
			// spawn_agent answered "submitted", no wait_task since): its
			// question is taken in first, so that it reads before the
			// answer in the task's history, and wait knows what was
			// answered.
			if _, gerr := t.look(ctx, conn); gerr == nil {
				asking = t.asking()
			}
		}
		answered = t.statusMessageID()
		res, err = conn.client.SendMessage(ctx, &a2a.MessageSendParams{Message: msg})
		for _, d := range replyRetries {
			if !asking || !errors.Is(err, a2a.ErrInternalError) || !sleep(ctx, d) {
				break
			}
			res, err = conn.client.SendMessage(ctx, &a2a.MessageSendParams{Message: msg})
		}
		if err != nil && asking {
			// Refused while the gateway's view said it asked: the task
			// may have ended since (refused tells that from the rest).
			_, _ = t.look(ctx, conn)
		}
		return err
	}); err != nil {
		return t.view(), s.refused(t, err, asking)
	}
	if r, ok := res.(*a2a.Message); ok {
		// The agent answered the message itself, not with a task update
		// ("that is not a number"): that is its answer, and the task is
		// as it was, still asking what it asked. It was dropped, and the
		// wait held its whole timeout. Nor is it counted as taken: a
		// message sent alongside for the same question still goes.
		t.answeredWith(msg, r)
		return t.view(), nil
	}
	r, _ := res.(*a2a.Task)
	t.took(r)
	return s.wait(ctx, t, timeout, onUpdate, answered)
}

// answeredWith records a message sent to the task and the agent's reply
// to it, a message, as the agent's: both join the task's history, after
// the question they answer (keepSaid), the task's state unchanged.
func (t *task) answeredWith(sent, reply *a2a.Message) {
	r := *reply
	r.Role = a2a.MessageRoleAgent
	if r.ID == "" { // the history tells messages apart by their ids
		r.ID = a2a.NewMessageID()
	}
	t.update(func(next *a2a.Task) bool {
		next.History = append(slices.Clone(next.History), sent, &r)
		return true
	})
}

// askedAfter is the task's status message's id ("" when it has none) and
// the count of messages it had taken when it was last seen so.
func (t *task) askedAfter() (question string, sent int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.last != nil && t.last.Status.Message != nil {
		question = t.last.Status.Message.ID
	}
	return question, t.sent
}

// took counts a message the agent took into the task, and applies the
// task it answered with, if any, at once.
func (t *task) took(answer *a2a.Task) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.sent++
	if t.takes(answer) {
		t.applyLocked(answer)
	}
}

// answeredMeanwhile refuses a message sent for question (a status
// message's id), which another message answered while it waited: it
// quotes what the task asks now, if it asks something else.
func (t *task) answeredMeanwhile(question string) error {
	if t.asking() && t.statusMessageID() != question {
		return fmt.Errorf("%w: task %s now asks %q, as another message_task answered the question this message was sent for; this one was not sent: answer the new question with message_task",
			ErrAnsweredMeanwhile, t.id, t.question())
	}
	return fmt.Errorf("%w: another message_task answered the question this message was sent for, and task %s is %s; this one was not sent: wait_task until the task asks again",
		ErrAnsweredMeanwhile, t.id, t.view().State)
}

// question is the text of the task's status message, what it asks when it
// asks, cut to 500 characters.
func (t *task) question() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.last == nil || t.last.Status.Message == nil {
		return ""
	}
	var parts []string
	for _, p := range t.last.Status.Message.Parts {
		parts = append(parts, partText(p))
	}
	return guard.Text(strings.Join(parts, " "), 500)
}

// finished says that the task, finished, takes no more messages, and
// how to go on: with its agent, or with the agent attached again since
// it was detached.
func (s *Session) finished(t *task) error {
	t.mu.Lock()
	lost := t.lost
	t.mu.Unlock()
	again := fmt.Sprintf("start a new one with spawn_agent and context_id %s", t.contextID)
	if t.agent.removed.Load() {
		// Told to spawn_agent on an agent no longer attached, a model
		// was refused again; told to attach one attached again since, it
		// was told it was attached already.
		again = fmt.Sprintf("its agent %s is detached: attach it again to start a new one", t.agent.Name)
		s.mu.Lock()
		a := s.findLocked(t.agent.URN)
		s.mu.Unlock()
		if a != nil {
			again = fmt.Sprintf("its agent was detached and is attached again, as %s: start a new one with spawn_agent on %s and context_id %s", a.Name, a.Name, t.contextID)
		}
	}
	if lost != "" { // not "has finished (submitted)", as a lost task read
		return fmt.Errorf("%w: task %s is over: %s; %s", ErrTaskFinished, t.id, lost, again)
	}
	return fmt.Errorf("%w: task %s has finished (%s); %s", ErrTaskFinished, t.id, t.view().State, again)
}

// refused says why the task's agent did not take a message: the agent's
// own error, or, where the task was not waiting for input, that it was
// not. An agent on a2a-go answers a message to a working task with a bare
// internal error, and one to a finished task with "invalid params".
func (s *Session) refused(t *task, err error, asking bool) error {
	v := t.view()
	switch {
	case v.Final:
		return fmt.Errorf("%w (the agent said: %v)", s.finished(t), err)
	case asking || errors.Is(err, ErrTimeout) || errors.Is(err, ErrUpstreamDown):
		return err
	}
	return fmt.Errorf("%w: %s did not take the message, as task %s is %s; wait_task until it asks for input (input-required) or ends, or cancel_task it (the agent said: %v)",
		ErrTaskBusy, t.agent.Name, t.id, v.State, err)
}

// replyRetries are the waits before a reply is sent again after an
// internal error: an agent on a2a-go refuses so, taking nothing of it, a
// reply that comes while the turn that asked for it is still being torn
// down (ErrExecutionInProgress, a2aproject/a2a-go#303), a window that has
// been seen to last seconds. About 3 s in all.
var replyRetries = []time.Duration{50 * time.Millisecond, 150 * time.Millisecond, 400 * time.Millisecond, time.Second, 1500 * time.Millisecond}

// statusMessageID identifies the task's current status message ("" when
// it has none).
func (t *task) statusMessageID() string {
	question, _ := t.askedAfter()
	return question
}

// Cancel asks the task's agent to cancel it; asked is false when the task
// had already ended, and nothing was asked.
func (s *Session) Cancel(ctx context.Context, id string) (v TaskView, asked bool, err error) {
	t, err := s.tasks.get(id)
	if err != nil {
		return TaskView{}, false, err
	}
	if t.direct || t.final() {
		return t.view(), false, nil
	}
	conn, err := t.agent.agentConn()
	if err != nil {
		return t.view(), false, fmt.Errorf("task %s is bound to %s: %w", id, t.agent.Name, err)
	}
	var cur *a2a.Task
	if err := s.askAgent(ctx, t.agent, "the cancellation", func(ctx context.Context) (err error) {
		cur, err = conn.client.CancelTask(ctx, &a2a.TaskIDParams{ID: a2a.TaskID(t.remote)})
		return err
	}); err != nil && !t.forgotten(err) { // lost: the view says so
		return t.view(), true, err
	}
	t.apply(cur)
	return t.view(), true, nil
}

// Tasks lists the session's newest tasks, oldest first, as summaries (the
// last message's text alone), and says how many it has in all.
//
// The unfinished ones are looked at first, at their agents, a few at a
// time, all within listLooks (and each within its agent's call timeout):
// the gateway's view of a task is fresh only while someone waits on it,
// and a listing of stale states never showed a task finish. One that does
// not answer is listed as last seen; 100 tasks of an agent that answered
// none took 13 minutes to list.
func (s *Session) Tasks(ctx context.Context, newest int) (views []TaskView, total int) {
	all := s.tasks.all()
	total = len(all)
	all = all[max(0, total-newest):]
	ctx, cancel := context.WithTimeout(ctx, listLooks)
	defer cancel()
	atAgents(ctx, all, func(t *task, conn *agentConn) {
		lctx, cancel := context.WithTimeout(ctx, s.timeout(t.agent))
		defer cancel()
		_, _ = t.look(lctx, conn) // one that does not answer stays as last seen
	})
	views = make([]TaskView, 0, len(all))
	for _, t := range all {
		views = append(views, t.summary())
	}
	return views, total
}

// listLooks bounds the looks of one listing of tasks.
const listLooks = 10 * time.Second

// agentRequestsAtOnce bounds the requests that one listing of tasks, one
// session's end, or one round of health checks (CheckAgents) sends to
// agents at once: a session ending with 300 tasks sent 300 cancellations
// at once, and kept 256 connections open after.
const agentRequestsAtOnce = 8

// cancelsWithin bounds the cancellations of a session's end or a detach:
// an agent that answers none holds the session's end that long.
const cancelsWithin = 5 * time.Second

// atAgents runs do for each of tasks that is still running at its agent,
// a few at a time (fewAtATime).
func atAgents(ctx context.Context, tasks []*task, do func(*task, *agentConn)) {
	type running struct {
		t    *task
		conn *agentConn
	}
	var at []running
	for _, t := range tasks {
		if t.direct || t.final() {
			continue
		}
		if conn, err := t.agent.agentConn(); err == nil {
			at = append(at, running{t, conn})
		}
	}
	fewAtATime(ctx, at, func(r running) { do(r.t, r.conn) })
}

// fewAtATime runs do for each item, agentRequestsAtOnce at a time, and
// returns when all have ended. Those still waiting their turn when ctx
// ends are skipped: the agents are too slow for them all.
func fewAtATime[T any](ctx context.Context, items []T, do func(T)) {
	var wg sync.WaitGroup
	sem := make(chan struct{}, agentRequestsAtOnce)
	for _, item := range items {
		wg.Go(func() {
			select {
			case sem <- struct{}{}:
				defer func() { <-sem }()
			case <-ctx.Done():
				return
			}
			do(item)
		})
	}
	wg.Wait()
}

// cancelUnfinished cancels, best effort and a few at a time, every task of
// the session still running at agent a (at every agent when a is nil):
// the session is ending, or a is being detached, after which nothing
// could cancel them. It returns how many the agent said it cancelled. A
// detached agent's tasks that it did not are lost: nothing can tell of
// them any more, and a store full of them took no new task.
func (s *Session) cancelUnfinished(a *Attachment) int {
	var n atomic.Int32
	ctx, cancel := context.WithTimeout(context.Background(), cancelsWithin)
	defer cancel()
	tasks := slices.DeleteFunc(s.tasks.all(), func(t *task) bool { return a != nil && t.agent != a })
	atAgents(ctx, tasks, func(t *task, conn *agentConn) {
		cur, err := cancelTask(ctx, conn, t.remote)
		if err != nil {
			t.forgotten(err)
			return
		}
		if t.apply(cur); t.final() { // list_tasks shows what became of it
			n.Add(1)
		}
	})
	if a != nil {
		for _, t := range s.tasks.all() {
			if t.agent == a && !t.final() {
				t.lose("its agent " + a.Name + " was detached before it ended; what it last said is kept")
			}
		}
	}
	return int(n.Load())
}

// cancelTask asks an agent to cancel a task, best effort, briefly, and
// returns the task as the agent then tells it.
func cancelTask(ctx context.Context, conn *agentConn, id string) (*a2a.Task, error) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	return conn.client.CancelTask(ctx, &a2a.TaskIDParams{ID: a2a.TaskID(id)})
}
