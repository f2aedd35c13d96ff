package a2a

import (
	"cmp"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/a2aproject/a2a-go/a2a"
	"github.com/ardgate/ardgate/guard"
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
	v = TaskView{ID: t.id, Agent: t.agent.Name(), ContextID: guard.Text(t.contextID, maxTaskID), State: string(a2a.TaskStateSubmitted),
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
