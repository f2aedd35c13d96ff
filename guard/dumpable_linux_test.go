package guard_test

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/ardgate/ardgate/guard"
)

// undumpableRole is the role the test binary, run again, plays: the
// stand-in gateway (made undumpable or not), or the server it launches,
// which reads the gateway's environment from /proc.
const undumpableRole = "ARDGATE_TEST_UNDUMPABLE"

// A process of the gateway's uid reads the gateway's environment, a
// credentials key in it, from /proc, unless the gateway made itself
// undumpable. Root reads it anyway: run as root, the test runs the
// stand-in gateway and its server as nobody.
func TestUndumpable(t *testing.T) {
	switch os.Getenv(undumpableRole) {
	case "reader":
		_, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", os.Getppid()))
		fmt.Println("read error:", err)
		os.Exit(0)
	case "undumpable":
		if err := guard.Undumpable(); err != nil {
			fmt.Println("Undumpable:", err)
			os.Exit(2)
		}
		fallthrough
	case "dumpable":
		// Launched as the gateway launches, limits set on it through its
		// pid: an undumpable gateway still contains its servers.
		server, err := guard.Command(os.Args[0], []string{"-test.run=^TestUndumpable$"}, append(os.Environ(), undumpableRole+"=reader"))
		if err == nil {
			server.Stdout, server.Stderr = os.Stdout, os.Stderr
			_, err = guard.Start(server, guard.Rlimits{OpenFiles: 64})
		}
		if err == nil {
			err = server.Wait()
		}
		if err != nil {
			fmt.Println("the server:", err)
			os.Exit(2)
		}
		os.Exit(0)
	}
	bin, cred := os.Args[0], (*syscall.Credential)(nil)
	if os.Geteuid() == 0 {
		bin, cred = nobodyCopy(t), &syscall.Credential{Uid: 65534, Gid: 65534, NoSetGroups: true}
	}
	for role, want := range map[string]string{
		"dumpable":   "read error: <nil>",
		"undumpable": "read error: open /proc/",
	} {
		gateway := exec.Command(bin, "-test.run=^TestUndumpable$")
		gateway.Env = append(os.Environ(), undumpableRole+"="+role, "ARDGATE_CREDENTIALS_KEY=not-for-servers")
		gateway.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
		out, err := gateway.CombinedOutput()
		var exit *exec.ExitError
		switch {
		case err != nil && cred != nil && !errors.As(err, &exit):
			t.Skipf("the test binary cannot run as nobody here: %v", err)
		case err != nil:
			t.Fatalf("%s gateway: %v\n%s", role, err, out)
		case !strings.HasPrefix(string(out), want):
			t.Errorf("a server of a %s gateway's uid: %q, want %q…", role, out, want)
		}
	}
}

// nobodyCopy copies the test binary where nobody may run it, the Go
// build's directory being root's alone.
func nobodyCopy(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "undumpable-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	src, err := os.Open(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	bin := filepath.Join(dir, "guard.test")
	dst, err := os.OpenFile(bin, os.O_CREATE|os.O_WRONLY, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(dst, src); err != nil {
		t.Fatal(err)
	}
	if err := dst.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return bin
}
