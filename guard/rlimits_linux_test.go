package guard

import (
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
)

// The limits a process is held to, as /proc tells them: a number of MiB
// too large for 64 bits of bytes is held to the hard limit, never wrapped
// round to a small one or to none.
func TestRlimitsApply(t *testing.T) {
	for _, c := range []struct {
		name   string
		limits Rlimits
		line   string // of /proc/<pid>/limits
		soft   string // "" for the gateway's own
		huge   bool   // both limits are the gateway's hard one
	}{
		{"memory", Rlimits{MemoryMiB: 512}, "Max data size", strconv.Itoa(512 << 20), false},
		{"file size", Rlimits{FileMiB: 3}, "Max file size", strconv.Itoa(3 << 20), false},
		{"open files", Rlimits{OpenFiles: 64}, "Max open files", "64", false},
		{"memory past 64 bits", Rlimits{MemoryMiB: 1<<44 + 1}, "Max data size", "", true},
		{"memory at 2^44 MiB", Rlimits{MemoryMiB: 1 << 44}, "Max data size", "", true},
		{"file size past 64 bits", Rlimits{FileMiB: 1<<44 + 1}, "Max file size", "", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			cmd := exec.Command("sleep", "30")
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
			if err := c.limits.apply(cmd.Process.Pid); err != nil {
				t.Fatal(err)
			}
			b, err := os.ReadFile("/proc/" + strconv.Itoa(cmd.Process.Pid) + "/limits")
			if err != nil {
				t.Fatal(err)
			}
			own, err := os.ReadFile("/proc/self/limits")
			if err != nil {
				t.Fatal(err)
			}
			_, ownHard := limitLine(t, string(own), c.line)
			soft, hard := limitLine(t, string(b), c.line)
			switch {
			case c.huge && (soft != ownHard || hard != ownHard):
				t.Errorf("%s: soft %s, hard %s; want the gateway's hard limit, %s", c.line, soft, hard, ownHard)
			case !c.huge && (soft != c.soft || hard != c.soft):
				t.Errorf("%s: soft %s, hard %s; want %s", c.line, soft, hard, c.soft)
			}
			if soft, hard := limitLine(t, string(b), "Max core file size"); soft != "0" || hard != "0" {
				t.Errorf("core dumps: soft %s, hard %s; want 0", soft, hard)
			}
		})
	}
}

// limitLine is the soft and hard limit of name in a /proc limits file.
func limitLine(t *testing.T, limits, name string) (soft, hard string) {
	t.Helper()
	for _, l := range strings.Split(limits, "\n") {
		if rest, ok := strings.CutPrefix(l, name); ok {
			f := strings.Fields(rest)
			if len(f) >= 2 {
				return f[0], f[1]
			}
		}
	}
	t.Fatalf("no %q in %s", name, limits)
	return "", ""
}
