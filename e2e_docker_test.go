package main

import (
	"bufio"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

// No Docker engine runs here, so the Dockerfile is checked the other way:
// its build line builds the binary with the same flags, and the image's
// entry command line starts it (on a loopback port instead of 0.0.0.0).
func TestDockerfile(t *testing.T) {
	data, err := os.ReadFile("Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	build := regexp.MustCompile(`(?m)^RUN (CGO_ENABLED=0 go build .*) -o /out/ardgate \.$`).FindStringSubmatch(string(data))
	if build == nil {
		t.Fatal("no go build line in the Dockerfile")
	}
	out := filepath.Join(t.TempDir(), "ardgate")
	cmdline := strings.ReplaceAll(build[1], "${VERSION}", "docker-test") + " -o " + out + " ."
	if b, err := exec.Command("sh", "-c", cmdline).CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", cmdline, err, b)
	}
	if v, err := exec.Command(out, "version").Output(); err != nil || strings.TrimSpace(string(v)) != "ardgate docker-test" {
		t.Fatalf("version of the Docker build: %q %v", v, err)
	}

	var entry, args []string
	for _, m := range regexp.MustCompile(`(?m)^(ENTRYPOINT|CMD) (\[.*\])$`).FindAllStringSubmatch(string(data), -1) {
		var v []string
		if err := json.Unmarshal([]byte(m[2]), &v); err != nil {
			t.Fatalf("%s is not an exec-form array: %v", m[0], err)
		}
		if m[1] == "ENTRYPOINT" {
			entry = v
		} else {
			args = v
		}
	}
	if len(entry) != 1 || len(args) == 0 {
		t.Fatalf("entry %v, cmd %v", entry, args)
	}
	for i := range args {
		if args[i] == "0.0.0.0:7333" {
			args[i] = "127.0.0.1:0"
		}
	}
	cmd := exec.Command(out, append(args, "--log-format", "json")...)
	cmd.Env = env(false)
	pipe, _ := cmd.StderrPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	started := make(chan bool, 1)
	go func() {
		sc := bufio.NewScanner(pipe)
		for sc.Scan() {
			if strings.Contains(sc.Text(), "serving MCP over streamable HTTP") {
				started <- true
				return
			}
		}
		started <- false
	}()
	select {
	case ok := <-started:
		if !ok {
			t.Fatal("the image's command line did not start the HTTP gateway")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no start within 10s")
	}
	_ = cmd.Process.Signal(syscall.SIGTERM)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("exit after SIGTERM: %v", err)
	}
}
