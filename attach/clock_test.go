package attach

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// Each way a call runs out of time says which it was.
func TestOutOfTime(t *testing.T) {
	a := &Attachment{Name: "fx"}
	reported := &Progress{}
	reported.reported.Store(true)
	long := callLimits{timeout: time.Second, most: 10 * time.Second}
	same := callLimits{timeout: time.Second, most: time.Second}
	for _, c := range []struct {
		name   string
		limits callLimits
		ran    time.Duration
		p      *Progress
		want   string
	}{
		{"no progress asked", long, time.Second, nil, "fx did not answer slow within 1s"},
		{"progress asked, none came", long, time.Second, &Progress{}, "fx did not answer slow, nor report progress on it, within 1s"},
		{"progress, then silence", long, 3 * time.Second, reported, "fx reported progress on slow, then neither answered nor reported more within 1s"},
		{"progress to the most", long, 10 * time.Second, reported, "fx was still working on slow after 10s, the most one call may take (max_call_time), though it reported progress"},
		{"progress, no longer most", same, time.Second, reported, "fx did not answer slow within 1s; its progress gave it no more time, as max_call_time is not longer than that"},
	} {
		err := c.limits.outOfTime(a, "slow", c.ran, c.p)
		if !errors.Is(err, ErrTimeout) || !strings.HasSuffix(err.Error(), c.want) {
			t.Errorf("%s: %v; want %q", c.name, err, c.want)
		}
	}
}
