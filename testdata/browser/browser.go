// Package browser drives Debian's headless Chromium as the user of a
// test: it opens a page, types into its fields and submits its form, as
// a person would. It imports chromedp and the standard library only.
package browser

import (
	"context"
	"fmt"
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
// it when CI is set, as .ci/run installs it.
func Need(t testing.TB) string {
	t.Helper()
	if _, err := exec.LookPath(Path); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("CI is set but chromium is not installed at %s: %v", Path, err)
		}
		t.Skipf("chromium is not installed at %s (apt-get install chromium): the user's browser in this test", Path)
	}
	return Path
}

// FillForm opens url in a headless Chromium of its own, whose profile is
// in dir, types each value into the field named by its key, clicks the
// form's submit button, and returns the text of the page that answered
// the post. Each step is bounded by a minute, and by ctx. Chromium
// resolves no name but localhost: no packet leaves the machine.
func FillForm(ctx context.Context, dir, url string, values map[string]string) (string, error) {
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(Path), chromedp.UserDataDir(dir),
		chromedp.Flag("disable-gpu", true), chromedp.Flag("disable-component-update", true),
		chromedp.Flag("host-resolver-rules", "MAP * ~NOTFOUND, EXCLUDE localhost, EXCLUDE 127.0.0.1"),
		// The tests' TLS proxies, on loopback, have certificates of their own.
		chromedp.Flag("ignore-certificate-errors", true))
	if os.Geteuid() == 0 {
		opts = append(opts, chromedp.NoSandbox) // Chromium refuses root with its sandbox
	}
	// The browser lives as long as the context of its first action, with
	// no deadline of its own (chromedp.Run).
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.WithoutCancel(ctx), opts...)
	defer cancelAlloc()
	browser, cancel := chromedp.NewContext(alloc)
	defer cancel()
	if err := chromedp.Do(browser); err != nil {
		return "", fmt.Errorf("start chromium: %w", err)
	}
	stop := context.AfterFunc(ctx, cancel)
	defer stop()
	step, cancelStep := context.WithTimeout(browser, time.Minute)
	defer cancelStep()
	steps := []chromedp.Action[chromedp.Void]{chromedp.Navigate(url)}
	for name, v := range values {
		steps = append(steps, chromedp.SendKeys(chromedp.CSS(`input[name=`+strconv.Quote(name)+`]`), v))
	}
	if err := chromedp.Do(step, steps...); err != nil {
		return "", fmt.Errorf("chromium at %s: %w", url, err)
	}
	// The click posts the form: RunResponse waits for the page it loads.
	if _, err := chromedp.RunResponse(step, chromedp.Click(chromedp.CSS(`button[type=submit]`))); err != nil {
		return "", fmt.Errorf("chromium posting the form at %s: %w", url, err)
	}
	text, err := chromedp.Run(step, chromedp.Text(chromedp.CSS("body")))
	if err != nil {
		return "", fmt.Errorf("chromium reading the answer at %s: %w", url, err)
	}
	return text, nil
}
