package guard

import (
	"sync"
	"time"

	"golang.org/x/time/rate"

	"github.com/ardgate/ardgate/config"
)

// Limits are one session's budgets. A zero field means no limit.
type Limits struct {
	// CallsPerSecond and CallBurst bound every tool call.
	CallsPerSecond float64
	CallBurst      int
	// DiscoveryPerMinute bounds discover_resources and attach_resource,
	// which fan out to registries and start processes.
	DiscoveryPerMinute float64
	// RepeatMax refuses the same discover or attach (same arguments) more
	// than this many times within RepeatWindow: a model caught in a loop,
	// often by injected text, gets told so instead of hammering on.
	RepeatMax    int
	RepeatWindow time.Duration
}

// LimitsFrom are the limits a config sets.
func LimitsFrom(c config.Limits) Limits {
	return Limits{
		CallsPerSecond: c.CallsPerSecond, CallBurst: c.CallBurst,
		DiscoveryPerMinute: c.DiscoveryPerMinute,
		RepeatMax:          c.RepeatMax, RepeatWindow: c.RepeatWindow,
	}
}

// Limiter enforces Limits for one session. Safe for concurrent use.
type Limiter struct {
	limits    Limits
	calls     *rate.Limiter
	discovery *rate.Limiter

	mu   sync.Mutex
	seen map[string][]time.Time
}

// maxRepeatKeys bounds the loop guard's memory per session.
const maxRepeatKeys = 1024

// NewLimiter returns a fresh limiter for one session.
func (l Limits) NewLimiter() *Limiter {
	lim := &Limiter{limits: l, seen: map[string][]time.Time{}}
	if l.CallsPerSecond > 0 {
		lim.calls = rate.NewLimiter(rate.Limit(l.CallsPerSecond), max(l.CallBurst, 1))
	}
	if l.DiscoveryPerMinute > 0 {
		// A minute's budget may be spent at once; it refills evenly.
		lim.discovery = rate.NewLimiter(rate.Limit(l.DiscoveryPerMinute/60), max(int(l.DiscoveryPerMinute), 1))
	}
	return lim
}

// AllowCall spends one tool call.
func (l *Limiter) AllowCall() error {
	if l.calls != nil && !l.calls.Allow() {
		return refuse("rate_limit", "more than %g tool calls per second in this session; wait a moment and retry", l.limits.CallsPerSecond)
	}
	return nil
}

// AllowDiscovery spends one discover or attach; key identifies the request
// (tool and arguments) for the loop guard.
func (l *Limiter) AllowDiscovery(key string, now time.Time) error {
	if l.limits.RepeatMax > 0 {
		l.mu.Lock()
		recent := l.seen[key][:0]
		for _, t := range l.seen[key] {
			if now.Sub(t) < l.limits.RepeatWindow {
				recent = append(recent, t)
			}
		}
		if len(recent) >= l.limits.RepeatMax {
			l.seen[key] = recent
			l.mu.Unlock()
			// When it may be made again, too: an attach after a detach
			// of the same server was told its answer would not change,
			// and not how long to wait.
			again := (recent[0].Add(l.limits.RepeatWindow).Sub(now) + time.Second - 1).Truncate(time.Second)
			return refuse("loop_guard", "the same request was made %d times in %s; use the earlier result or change the request, or make it again in %s", len(recent), l.limits.RepeatWindow, again)
		}
		if len(l.seen) >= maxRepeatKeys {
			clear(l.seen)
		}
		l.seen[key] = append(recent, now)
		l.mu.Unlock()
	}
	if l.discovery != nil && !l.discovery.Allow() {
		return refuse("rate_limit", "more than %g discover/attach calls per minute in this session; wait and retry", l.limits.DiscoveryPerMinute)
	}
	return nil
}
