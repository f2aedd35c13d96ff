package a2a

import (
	"slices"

	"github.com/a2aproject/a2a-go/a2a"
)

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
