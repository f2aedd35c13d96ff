// Package browser drives Debian's headless Chromium as the user of a
// test: it opens a page, types into its fields and submits its form, as
// a person would. It imports chromedp and the standard library only.
package browser

import (
	"context"
	"os"
	"os/exec"
	"strconv"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// Path is where Debian installs Chromium.
const Path = "/usr/bin/chromium"

// Need returns Chromium's path. Where it is missing it skips t, or fails
// it under CI, where .ci/run installs it.
func Need(t testing.TB) string {
	t.Helper()
	if _, err := exec.LookPath(Path); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("chromium is not installed at %s, and CI needs it: %v", Path, err)
		}
		t.Skipf("chromium is not installed at %s (apt-get install chromium); this test has it be the user", Path)
	}
	return Path
}

// FillForm opens url in a headless Chromium of its own, types each value
// into the field named by its key, clicks the form's submit button, and
// returns the text of the page that answered the post. It fails t at any step that does not happen within a minute.
func FillForm(t testing.TB, url string, values map[string]string) string {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(Need(t)), chromedp.UserDataDir(t.TempDir()),
		chromedp.Flag("disable-gpu", true))
	if os.Geteuid() == 0 {
		opts = append(opts, chromedp.NoSandbox) // Chromium refuses root with its sandbox
	}
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancelAlloc()
	ctx, cancel := chromedp.NewContext(alloc)
	defer cancel()
	if err := chromedp.Do(ctx); err != nil { // starts the browser, with no deadline
		t.Fatalf("start chromium: %v", err)
	}
	step, cancelStep := context.WithTimeout(ctx, time.Minute)
	defer cancelStep()
	steps := []chromedp.Action[chromedp.Void]{chromedp.Navigate(url)}
	for name, v := range values {
		steps = append(steps, chromedp.SendKeys(chromedp.CSS(`input[name=`+strconv.Quote(name)+`]`), v))
	}
	if err := chromedp.Do(step, steps...); err != nil {
		t.Fatalf("chromium at %s: %v", url, err)
	}
	// The click posts the form: RunResponse waits for the page it loads.
	if _, err := chromedp.RunResponse(step, chromedp.Click(chromedp.CSS(`button[type=submit]`))); err != nil {
		t.Fatalf("chromium posting the form at %s: %v", url, err)
	}
	text, err := chromedp.Run(step, chromedp.Text(chromedp.CSS("body")))
	if err != nil {
		t.Fatalf("chromium reading the answer: %v", err)
	}
	return text
}
