package tools

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/ardgate/ardgate/attach"
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
// token. A nil *progressReport reports nothing.
type progressReport struct {
	g     *Gateway
	ctx   context.Context
	token mcp.ProgressToken
	total int // 0 when not known

	mu      sync.Mutex
	step    int // the last step reported
	beats   int // since it
	msg     string
	since   time.Time
	sent    time.Time // when a step was last sent
	pending bool      // the step is to be sent when the timer fires
	timer   *time.Timer
	ended   bool
}

// minUpdate is the least time between two reports of a task's updates
// that leave its state as it was: an agent that streams a status every
// 100 ms had ten notifications a second sent to the client.
const minUpdate = 250 * time.Millisecond

// reportProgress returns the progress report of the request, or nil when
// the client gave no progress token. Call stop when the operation ends.
func (g *Gateway) reportProgress(ctx context.Context, req mcp.CallToolRequest, total int) *progressReport {
	if req.Params.Meta == nil || req.Params.Meta.ProgressToken == nil {
		return nil
	}
	return &progressReport{g: g, ctx: ctx, token: req.Params.Meta.ProgressToken, total: total}
}

// report reports step with msg, and beats while it lasts.
func (p *progressReport) report(step int, msg string) { p.update(step, msg, true) }

// update is report, but for a step that need not go out at once (now is
// false): it goes no sooner than minUpdate after the last, the latest of
// those that came meanwhile.
func (p *progressReport) update(step int, msg string, now bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ended {
		return
	}
	p.step, p.beats, p.msg, p.since = step, 0, msg, time.Now()
	if wait := minUpdate - time.Since(p.sent); !now && wait > 0 {
		p.pending = true
		p.armIn(wait)
		return
	}
	p.pending = false
	p.sent = time.Now()
	p.send(float64(step), msg)
	p.arm()
}

// arm sets the next beat; p.mu is held.
func (p *progressReport) arm() { p.armIn(p.g.opts.ProgressBeat) }

// armIn sets the timer to fire in d; p.mu is held.
func (p *progressReport) armIn(d time.Duration) {
	if p.timer == nil {
		p.timer = time.AfterFunc(d, p.beat)
	} else {
		p.timer.Reset(d)
	}
}

// beat sends a step held back (update), or reports the step again: step
// + k/(k+1) after k beats, which rises and stays below the next step
// however many beats come.
func (p *progressReport) beat() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ended {
		return
	}
	if p.pending {
		p.pending, p.sent = false, time.Now()
		p.send(float64(p.step), p.msg)
		p.arm()
		return
	}
	p.beats++
	p.send(float64(p.step)+float64(p.beats)/float64(p.beats+1), fmt.Sprintf("%s (%s)", p.msg, time.Since(p.since).Round(time.Second)))
	p.arm()
}

// send sends one notifications/progress; p.mu is held, so that a beat and
// a new step go out in order.
func (p *progressReport) send(progress float64, msg string) {
	params := map[string]any{"progressToken": p.token, "progress": progress, "message": msg}
	if p.total > 0 {
		params["total"] = p.total
	}
	if err := p.g.notify(p.ctx, string(mcp.MethodNotificationProgress), params); err != nil {
		p.g.log.Debug("progress not sent", "err", err)
	}
}

// stop ends the beats: the operation has ended.
func (p *progressReport) stop() {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.ended = true
	if p.timer != nil {
		p.timer.Stop()
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
	p.mu.Lock()
	p.msg, p.since = "waiting", time.Now()
	p.arm()
	p.mu.Unlock()
	n, state := 0, ""
	return func(v attach.TaskView) {
		n++
		msg := v.State
		if len(v.Messages) > 0 {
			msg += ": " + v.Messages[len(v.Messages)-1].Text
		}
		p.update(n, msg, v.State != state) // a new state goes at once
		state = v.State
	}
}
