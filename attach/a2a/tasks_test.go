package a2a

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/a2a"
	"github.com/ardgate/ardgate/attach/fault"
)

// The store keeps at most max tasks; the oldest finished one goes first,
// and unfinished tasks are never dropped.
func TestTaskStoreEviction(t *testing.T) {
	s := Store{max: 3}
	agent := &fakeAgent{name: "a"}
	add := func(id string, state a2a.TaskState) error {
		tk := &task{id: id, remote: id, agent: agent}
		tk.apply(&a2a.Task{ID: a2a.TaskID(id), Status: a2a.TaskStatus{State: state}})
		return s.add(tk)
	}
	for i, st := range []a2a.TaskState{a2a.TaskStateWorking, a2a.TaskStateCompleted, a2a.TaskStateWorking} {
		if err := add(fmt.Sprint("t", i), st); err != nil {
			t.Fatal(err)
		}
	}
	if err := add("t3", a2a.TaskStateWorking); err != nil {
		t.Fatalf("a finished task could have made room: %v", err)
	}
	if _, err := s.get("t1"); !errors.Is(err, ErrTaskNotFound) {
		t.Fatal("the finished task was not the one evicted")
	}
	for _, id := range []string{"t0", "t2", "t3"} {
		if _, err := s.get(id); err != nil {
			t.Fatalf("unfinished %s dropped", id)
		}
	}
	if err := add("t4", a2a.TaskStateWorking); !errors.Is(err, ErrStoreFull) {
		t.Fatalf("full of unfinished tasks: %v", err)
	}
	// A spawn asks before it sends: refused after, the agent would run
	// a task nobody can see or cancel.
	if err := s.room(); !errors.Is(err, ErrStoreFull) {
		t.Fatalf("room when full of unfinished tasks: %v", err)
	}
	tk, _ := s.get("t0")
	tk.apply(&a2a.Task{ID: "t0", Status: a2a.TaskStatus{State: a2a.TaskStateCompleted}})
	if err := s.room(); err != nil {
		t.Fatalf("room with a finished task to evict: %v", err)
	}
}

// Two agents that number their tasks alike, and an agent that gives an
// id twice, get a task each in the session: the later under an id of its
// own, its agent's name before it; it stayed reachable only as the
// other's, and evicting the two left a task of none that crashed every
// spawn after. An id not fit to show gets one too, the agent still asked
// under its own.
func TestTaskStoreIDs(t *testing.T) {
	s := Store{max: 4}
	alpha, beta := &fakeAgent{name: "alpha"}, &fakeAgent{name: "beta"}
	add := func(remote string, agent *fakeAgent, state a2a.TaskState) *task {
		tk := &task{id: remote, remote: remote, agent: agent}
		tk.apply(&a2a.Task{ID: a2a.TaskID(remote), Status: a2a.TaskStatus{State: state}})
		if err := s.add(tk); err != nil {
			t.Fatal(err)
		}
		return tk
	}
	long := strings.Repeat("9", 200_000) + "\x1b[2J"
	for _, c := range []struct {
		remote string
		agent  *fakeAgent
		want   string
	}{
		{"t-1", alpha, "t-1"},
		{"t-1", beta, "beta:t-1"},
		{"t-1", beta, "beta:t-1#2"},
		{"", alpha, "alpha:task"},
	} {
		if tk := add(c.remote, c.agent, a2a.TaskStateCompleted); tk.id != c.want || tk.remote != c.remote {
			t.Errorf("%s's %q: kept as %q (remote %q); want %q", c.agent.name, c.remote, tk.id, tk.remote, c.want)
		}
	}
	if tk, err := s.get("t-1"); err != nil || tk.agent != alpha {
		t.Fatalf("t-1 is not alpha's: %v", err)
	}
	// Full of finished tasks: each added evicts the oldest, whatever the
	// ids, until four unfinished ones are kept.
	for range 4 {
		tk := add(long, alpha, a2a.TaskStateWorking)
		if len(tk.id) > len("alpha:")+maxTaskID+len("…#4") || strings.ContainsRune(tk.id, 0x1b) || tk.remote != long {
			t.Fatalf("an id of %d characters kept as %.40q… (%d), remote %d", len(long), tk.id, len(tk.id), len(tk.remote))
		}
	}
	if err := s.room(); !errors.Is(err, ErrStoreFull) {
		t.Fatalf("room: %v", err)
	}
	for _, tk := range s.all() {
		if tk == nil {
			t.Fatal("the store lists a task that is not there")
		}
	}
}

// A task's messages read in the order they were said, each once: the
// status message a status update replaces joins the history unless the
// agent's snapshot has it there already (the JavaScript SDK's does), and
// a question the agent dropped from its snapshot once answered (a2a-go's
// does) stays before the answer.
func TestTaskHistory(t *testing.T) {
	msg := func(id string, role a2a.MessageRole, text string) *a2a.Message {
		return &a2a.Message{ID: id, Role: role, Parts: a2a.ContentParts{a2a.TextPart{Text: text}}}
	}
	said := func(tk *task) string {
		var out []string
		for _, m := range tk.view().Messages {
			out = append(out, m.Text)
		}
		return strings.Join(out, ", ")
	}
	ask, q, bob, step1, step2 := msg("1", a2a.MessageRoleUser, "ask"), msg("2", a2a.MessageRoleAgent, "name?"),
		msg("3", a2a.MessageRoleUser, "Bob"), msg("4", a2a.MessageRoleAgent, "step 1"), msg("5", a2a.MessageRoleAgent, "step 2")

	streamed := &task{id: "t", remote: "t", agent: &fakeAgent{name: "a"}}
	streamed.apply(&a2a.Task{ID: "t", History: []*a2a.Message{ask, step1}, Status: a2a.TaskStatus{State: a2a.TaskStateWorking, Message: step1}})
	streamed.applyEvent(&a2a.TaskStatusUpdateEvent{TaskID: "t", Status: a2a.TaskStatus{State: a2a.TaskStateWorking, Message: step2}})
	if got := said(streamed); got != "ask, step 1, step 2" {
		t.Errorf("a status update after a snapshot holding its message: %s", got)
	}

	asked := &task{id: "t", remote: "t", agent: &fakeAgent{name: "a"}}
	asked.apply(&a2a.Task{ID: "t", History: []*a2a.Message{ask}, Status: a2a.TaskStatus{State: a2a.TaskStateInputRequired, Message: q}})
	asked.apply(&a2a.Task{ID: "t", History: []*a2a.Message{ask, bob}, Status: a2a.TaskStatus{State: a2a.TaskStateWorking}})
	if got := said(asked); got != "ask, name?, Bob" {
		t.Errorf("an answer taken in without its question: %s", got)
	}
	asked.apply(&a2a.Task{ID: "t", History: []*a2a.Message{ask, bob}, Status: a2a.TaskStatus{State: a2a.TaskStateCompleted, Message: msg("6", a2a.MessageRoleAgent, "hello Bob")}})
	if got := said(asked); got != "ask, name?, Bob, hello Bob" {
		t.Errorf("the next snapshot: %s", got)
	}

	// a2a-go's agent: the answer in the history before the question.
	reordered := &task{id: "t", remote: "t", agent: &fakeAgent{name: "a"}}
	reordered.apply(&a2a.Task{ID: "t", History: []*a2a.Message{ask}, Status: a2a.TaskStatus{State: a2a.TaskStateInputRequired, Message: q}})
	// It takes the answer in while the question is still its status...
	reordered.apply(&a2a.Task{ID: "t", History: []*a2a.Message{ask, bob}, Status: a2a.TaskStatus{State: a2a.TaskStateInputRequired, Message: q}})
	if got := said(reordered); got != "ask, name?, Bob" {
		t.Errorf("the answer taken in under the question: %s", got)
	}
	// ...then puts the question after it, snapshot after snapshot.
	for range 2 {
		reordered.apply(&a2a.Task{ID: "t", History: []*a2a.Message{ask, bob, q}, Status: a2a.TaskStatus{State: a2a.TaskStateCompleted}})
		if got := said(reordered); got != "ask, name?, Bob" {
			t.Errorf("the answer put before the question: %s", got)
		}
	}
	// A snapshot with nothing new changes nothing a caller sees.
	still := &task{id: "t", remote: "t", agent: &fakeAgent{name: "a"}}
	snap := &a2a.Task{ID: "t", History: []*a2a.Message{ask}, Status: a2a.TaskStatus{State: a2a.TaskStateInputRequired, Message: q}}
	still.apply(snap)
	if again := *snap; still.apply(&again) {
		t.Errorf("the same snapshot again is a change: %s", said(still))
	}
}

// A task keeps what its view can show, however many status updates and
// artifact chunks its agent streams, with a marker for what it left out.
// Text streamed in small chunks is joined, and kept whole.
func TestTaskBounds(t *testing.T) {
	tk := &task{id: "t", remote: "t", agent: &fakeAgent{name: "a"}}
	tk.apply(&a2a.Task{ID: "t", Status: a2a.TaskStatus{State: a2a.TaskStateWorking}})
	var streamed strings.Builder
	big := strings.Repeat("x", 3000) // two do not fit in one part
	for i := range 5000 {
		msg := a2a.NewMessage(a2a.MessageRoleAgent, a2a.TextPart{Text: fmt.Sprint("step ", i)})
		tk.applyEvent(&a2a.TaskStatusUpdateEvent{TaskID: "t", Status: a2a.TaskStatus{State: a2a.TaskStateWorking, Message: msg}})
		chunk := fmt.Sprint("chunk ", i, "; ")
		streamed.WriteString(chunk)
		tk.applyEvent(&a2a.TaskArtifactUpdateEvent{TaskID: "t", Append: i > 0,
			Artifact: &a2a.Artifact{ID: "answer", Parts: a2a.ContentParts{a2a.TextPart{Text: chunk}}}})
		tk.applyEvent(&a2a.TaskArtifactUpdateEvent{TaskID: "t", Append: i > 0,
			Artifact: &a2a.Artifact{ID: "big", Parts: a2a.ContentParts{a2a.TextPart{Text: big}}}})
		if i < 100 {
			tk.applyEvent(&a2a.TaskArtifactUpdateEvent{TaskID: "t", Artifact: &a2a.Artifact{ID: a2a.ArtifactID(fmt.Sprint("a", i))}})
		}
	}
	tk.mu.Lock()
	last := tk.last
	tk.mu.Unlock()
	if n := len(last.History); n > maxMessages {
		t.Errorf("%d messages kept, want at most %d", n, maxMessages)
	}
	if n := len(last.Artifacts); n != maxArtifacts+1 || last.Artifacts[maxArtifacts] != moreArtifacts {
		t.Errorf("%d artifacts kept, want %d and the marker", n, maxArtifacts)
	}
	var answer strings.Builder
	for _, p := range last.Artifacts[0].Parts {
		answer.WriteString(p.(a2a.TextPart).Text)
	}
	if answer.String() != streamed.String() || len(last.Artifacts[0].Parts) > streamed.Len()/maxPartText+1 {
		t.Errorf("the streamed answer kept in %d parts, %d of its %d bytes", len(last.Artifacts[0].Parts), answer.Len(), streamed.Len())
	}
	parts := last.Artifacts[1].Parts
	if len(parts) != maxParts+1 || partText(parts[0]) != big || partText(parts[maxParts]) != moreParts.Text {
		t.Errorf("the artifact of large chunks kept %d parts; want its first %d and the marker", len(parts), maxParts)
	}
	v := tk.view()
	if got := v.Messages[len(v.Messages)-1].Text; got != "step 4999" || len(v.Messages) != maxMessages || !v.EarlierDropped {
		t.Errorf("the view's newest message %q, of %d, earlier ones dropped %v; want step 4999, of %d, true", got, len(v.Messages), v.EarlierDropped, maxMessages)
	}
	// A task of few messages says nothing was dropped.
	few := &task{id: "f", remote: "f", agent: &fakeAgent{name: "a"}}
	few.apply(&a2a.Task{ID: "f", History: []*a2a.Message{a2a.NewMessage(a2a.MessageRoleUser, a2a.TextPart{Text: "hi"})}})
	if few.view().EarlierDropped {
		t.Error("a task of one message says earlier ones were dropped")
	}
	// The view shows what fits its budget, and says what it left out.
	if ns := v.NotShown; ns == nil || ns.Artifacts != 1 || ns.Parts != maxParts+1-len(v.Artifacts[1].Parts) || len(v.Artifacts) != maxArtifacts+1 {
		t.Errorf("the view of %d artifacts says of what it left out %+v", len(v.Artifacts), ns)
	}
}

// An agent's text reaches the model with its lines, and a part cut to
// what a view shows says how much it left out: an answer of code read as
// one line, and 300,000 characters were cut to 4,000 with a bare "…".
func TestTaskText(t *testing.T) {
	tk := &task{id: "t", remote: "t", agent: &fakeAgent{name: "a"}}
	answer := "func main() {\n\tprintln(\"hi\")\n}"
	long := strings.Repeat("x", maxPartText+1000)
	tk.apply(&a2a.Task{ID: "t", Status: a2a.TaskStatus{State: a2a.TaskStateCompleted,
		Message: &a2a.Message{ID: "m", Role: a2a.MessageRoleAgent, Parts: a2a.ContentParts{a2a.TextPart{Text: answer}, a2a.TextPart{Text: long}}}}})
	got := tk.view().Messages[0].Text
	want := answer + "\n" + long[:maxPartText] + "… (1000 more characters not shown)"
	if got != want {
		t.Errorf("the answer as the model sees it: %.80q…%q", got, got[max(0, len(got)-60):])
	}
}

// A view gives an inline image or audio as media when it is one, valid,
// and within the bounds; any other file is described as before.
func TestViewGivesMedia(t *testing.T) {
	file := func(mime, data string) a2a.Part {
		return a2a.FilePart{File: a2a.FileBytes{FileMeta: a2a.FileMeta{Name: "f", MimeType: mime}, Bytes: data}}
	}
	png := "iVBORw0KGgo=" // 8 bytes
	for _, c := range []struct {
		name   string
		parts  []a2a.Part
		given  int
		listed bool // a view without media
	}{
		{"an image", []a2a.Part{file("image/png", png)}, 1, false},
		{"audio", []a2a.Part{file("audio/wav", png)}, 1, false},
		{"a type in capitals", []a2a.Part{file("Image/PNG", png)}, 1, false},
		{"a view without media gives none", []a2a.Part{file("image/png", png)}, 0, true},
		{"a pdf", []a2a.Part{file("application/pdf", png)}, 0, false},
		{"a type that is no type", []a2a.Part{file("image/png; x=<script>", png)}, 0, false},
		{"base64 that is not", []a2a.Part{file("image/png", "not base64!")}, 0, false},
		{"at most maxMedia", slices.Repeat([]a2a.Part{file("image/png", png)}, maxMedia+2), maxMedia, false},
		{"at most maxMediaBytes", []a2a.Part{file("image/png", strings.Repeat("A", maxMediaBytes-8)), file("image/png", png), file("image/png", "AAAA")}, 2, false},
	} {
		tk := &task{agent: &fakeAgent{name: "a"}, last: &a2a.Task{Status: a2a.TaskStatus{State: a2a.TaskStateCompleted},
			Artifacts: []*a2a.Artifact{{Parts: c.parts}}}}
		v := tk.render(viewText, !c.listed)
		if len(v.Media) != c.given {
			t.Errorf("%s: %d media given, want %d", c.name, len(v.Media), c.given)
		}
		given := 0
		for _, p := range v.Artifacts[0].Parts {
			if strings.Contains(p, "given after this view") {
				given++
			}
		}
		if given != c.given {
			t.Errorf("%s: %d parts say they were given, want %d: %q", c.name, given, c.given, v.Artifacts[0].Parts)
		}
	}

	// An image whose line does not fit in what is left of the view's text
	// is not shown, and so not given: it was given, while the view
	// counted it not shown and told nothing of it.
	filler := strings.Repeat("x", maxPartText)
	var parts []a2a.Part
	fill := viewText - 60 // 60 bytes left, the image's line longer
	for range fill / maxPartText {
		parts = append(parts, a2a.TextPart{Text: filler})
	}
	parts = append(parts, a2a.TextPart{Text: filler[:fill%maxPartText]}, file("image/png", png))
	tk := &task{agent: &fakeAgent{name: "a"}, last: &a2a.Task{Status: a2a.TaskStatus{State: a2a.TaskStateCompleted},
		Artifacts: []*a2a.Artifact{{Parts: parts}}}}
	v := tk.render(viewText, true)
	if len(v.Media) != 0 || v.NotShown == nil || v.NotShown.Parts != 1 || len(v.Artifacts[0].Parts) != len(parts)-1 {
		t.Errorf("an image past the text budget: %d media given, %d parts shown of %d, not shown %+v", len(v.Media), len(v.Artifacts[0].Parts), len(parts), v.NotShown)
	}
}

// fakeAgent is an agent of no session: the store and the views ask it
// nothing but its name.
type fakeAgent struct{ name string }

func (a *fakeAgent) Name() string                         { return a.name }
func (a *fakeAgent) URN() string                          { return "urn:ai:test:agent:" + a.name }
func (a *fakeAgent) Conn() (*Conn, error)                 { return nil, fault.ErrUpstreamDown }
func (a *fakeAgent) Reach(context.Context) (*Conn, error) { return a.Conn() }
func (a *fakeAgent) Reached(error)                        {}
func (a *fakeAgent) Timeout() time.Duration               { return time.Second }
func (a *fakeAgent) Detached() (string, bool)             { return "", false }
