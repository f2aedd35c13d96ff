package tools

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/ardgate/ardgate/attach"
	"github.com/ardgate/ardgate/guard"
)

// The gateway's own long operations (attach_resource, wait_task,
// message_task) report progress when the client gave a token: each stage
// or task update, and, while nothing new comes, a beat every ProgressBeat:
// the last message again, with how long it has lasted, and a progress a
// little higher, short of the next step's, as progress must rise. A client
// that gives a request more time at each progress (the TypeScript SDK's
// resetTimeoutOnProgress) then does not give up on a long npx download or
// a quiet task meanwhile.

// DefaultProgressBeat is how often a long operation with no news reports
// progress all the same.
const DefaultProgressBeat = 5 * time.Second

// progressReport reports one operation's progress under the client's
// token, its steps coalesced (attach.MinUpdate) and beaten (ProgressBeat).
// A nil *progressReport reports nothing.
type progressReport struct {
	g     *Gateway
	ctx   context.Context
	token mcp.ProgressToken
	total int // 0 when not known
	steps *attach.Coalescer[progressStep]
}

// progressStep is one step of an operation as reported: its number, its
// message, and since when it lasts.
type progressStep struct {
	step  int
	msg   string
	since time.Time
}

// reportProgress returns the progress report of the request, or nil when
// the client gave no progress token. Call stop when the operation ends.
func (g *Gateway) reportProgress(ctx context.Context, req mcp.CallToolRequest, total int) *progressReport {
	if req.Params.Meta == nil || req.Params.Meta.ProgressToken == nil {
		return nil
	}
	p := &progressReport{g: g, ctx: ctx, token: req.Params.Meta.ProgressToken, total: total}
	p.steps = attach.NewCoalescer(g.opts.ProgressBeat, p.send)
	return p
}

// report reports step with msg at once, and beats while it lasts.
func (p *progressReport) report(step int, msg string) {
	p.steps.Send(progressStep{step, msg, time.Now()})
}

// update is report, but for a step that need not go out at once: it goes
// no sooner than attach.MinUpdate after the last, the latest of those
// that came meanwhile.
func (p *progressReport) update(step int, msg string) {
	p.steps.Offer(progressStep{step, msg, time.Now()})
}

// send sends one notifications/progress of s; after k beats, as step +
// k/(k+1), which rises and stays below the next step however many beats
// come, with how long the step has lasted. It runs under the steps'
// lock, so that a beat and a new step go out in order.
func (p *progressReport) send(s progressStep, beats int) {
	progress, msg := float64(s.step), s.msg
	if beats > 0 {
		progress += float64(beats) / float64(beats+1)
		msg = fmt.Sprintf("%s (%s)", s.msg, time.Since(s.since).Round(time.Second))
	}
	// The message may quote an agent's (tasks): cleaned and cut as a
	// result's strings are (guard.Shown); the token is the client's own.
	params := map[string]any{"progressToken": p.token, "progress": progress, "message": guard.Text(msg, guard.ShownMax)}
	if p.total > 0 {
		params["total"] = p.total
	}
	if err := p.g.notify(p.ctx, string(mcp.MethodNotificationProgress), params); err != nil {
		p.g.log.Debug("progress not sent", "err", err)
	}
}

// stop ends the beats, once a step held back has gone: the operation has
// ended.
func (p *progressReport) stop() {
	if p != nil {
		p.steps.Stop()
	}
}

// stages reports the stages of an operation, named in stages, or is nil
// without a report. A stage's progress is the number of stages done
// before it, so that its beats stay below the total.
func (p *progressReport) stages(stages []string) func(string) {
	if p == nil {
		return nil
	}
	return func(stage string) { p.report(slices.Index(stages, stage), stage) }
}

// tasks reports each update of a task: its state and its last message.
// Until the first, which may be long in coming (an agent's stream says
// nothing until the task changes), it beats as step 0, "waiting".
func (p *progressReport) tasks() func(attach.TaskView) {
	if p == nil {
		return nil
	}
	p.steps.Await(progressStep{0, "waiting", time.Now()})
	n, state := 0, ""
	return func(v attach.TaskView) {
		n++
		msg := v.State
		if len(v.Messages) > 0 {
			msg += ": " + v.Messages[len(v.Messages)-1].Text
		}
		if v.State != state {
			p.report(n, msg) // a new state goes at once
		} else {
			p.update(n, msg)
		}
		state = v.State
	}
}
