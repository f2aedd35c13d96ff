package a2a

import (
	"context"
	"errors"
	"slices"
	"sync"

	"github.com/a2aproject/a2a-go/a2a"
)

// task is one task the session started, bound to the agent that runs it.
type task struct {
	// id is the task's id in the session, unique in it (Store.add):
	// remote, the agent's own, unless another task of the session has it
	// (two agents that both number their tasks 1, 2, …) or it is not fit
	// to show.
	id        string
	remote    string
	agent     Agent
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
func (t *task) look(ctx context.Context, conn *Conn) (changed bool, err error) {
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
