package guard

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestLimiter(t *testing.T) {
	var zero Limits
	lim := zero.NewLimiter()
	for range 1000 {
		if lim.AllowCall() != nil || lim.AllowDiscovery("k", time.Now()) != nil {
			t.Fatal("zero Limits limited something")
		}
	}

	lim = Limits{CallsPerSecond: 1, CallBurst: 3}.NewLimiter()
	for i := range 3 {
		if err := lim.AllowCall(); err != nil {
			t.Fatalf("call %d within burst refused: %v", i, err)
		}
	}
	var ref *Refusal
	if err := lim.AllowCall(); !errors.As(err, &ref) || ref.Rule != "rate_limit" {
		t.Fatalf("4th call: %v, want rate_limit", err)
	}

	now := time.Now()
	lim = Limits{RepeatMax: 3, RepeatWindow: time.Minute}.NewLimiter()
	for i := range 3 {
		if err := lim.AllowDiscovery("same", now.Add(time.Duration(i)*time.Second)); err != nil {
			t.Fatalf("repeat %d refused: %v", i, err)
		}
	}
	if err := lim.AllowDiscovery("same", now.Add(4*time.Second)); !errors.As(err, &ref) || ref.Rule != "loop_guard" || !strings.HasSuffix(err.Error(), "make it again in 56s") {
		t.Fatalf("4th repeat: %v, want loop_guard, saying when it may be made again", err)
	}
	if err := lim.AllowDiscovery("different", now.Add(5*time.Second)); err != nil {
		t.Fatalf("a different request was refused: %v", err)
	}
	if err := lim.AllowDiscovery("same", now.Add(2*time.Minute)); err != nil {
		t.Fatalf("after the window the request is allowed again: %v", err)
	}

	lim = Limits{DiscoveryPerMinute: 2}.NewLimiter()
	_ = lim.AllowDiscovery("a", now)
	_ = lim.AllowDiscovery("b", now)
	if err := lim.AllowDiscovery("c", now); !errors.As(err, &ref) || ref.Rule != "rate_limit" {
		t.Fatalf("3rd discovery in a minute: %v", err)
	}
}
