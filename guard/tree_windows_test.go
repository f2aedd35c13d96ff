package guard

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/windows"
)

// treeHelper is the role the test binary plays when started by a test of
// this file: "sleep", "parent" (starts a sleep, says its pid and whether
// a start out of its job was refused, then sleeps) or "gateway" (starts a
// parent in a Tree, says the pids, then sleeps).
const treeHelper = "ARDGATE_TREE_HELPER"

func TestMain(m *testing.M) {
	switch os.Getenv(treeHelper) {
	case "sleep":
		time.Sleep(time.Minute)
		os.Exit(0)
	case "parent":
		os.Exit(parent())
	case "gateway":
		os.Exit(gateway())
	}
	os.Exit(m.Run())
}

func parent() int {
	child := helper("sleep")
	if err := child.Start(); err != nil {
		fmt.Println(-1, err)
		return 2
	}
	escape := helper("sleep")
	escape.SysProcAttr = &windows.SysProcAttr{CreationFlags: windows.CREATE_BREAKAWAY_FROM_JOB}
	escaped := escape.Start() == nil
	if escaped {
		_ = escape.Process.Kill()
	}
	fmt.Println(os.Getpid(), child.Process.Pid, escaped)
	time.Sleep(time.Minute)
	return 0
}

func gateway() int {
	cmd, err := Command(os.Args[0], nil, append((&Stdio{}).Env(nil), treeHelper+"=parent"))
	if err != nil {
		fmt.Println(-1, err)
		return 2
	}
	cmd.Stdout = os.Stdout
	if _, err := Start(cmd, Rlimits{}); err != nil {
		fmt.Println(-1, err)
		return 2
	}
	time.Sleep(time.Minute) // until killed
	return 0
}

// helper is the test binary in role, in the cleared environment every
// launched server gets, which must be enough for a Go program to start.
func helper(role string) *exec.Cmd {
	cmd := exec.Command(os.Args[0])
	cmd.Env = append((&Stdio{}).Env(nil), treeHelper+"="+role)
	return cmd
}

// pids reads the parent's line: its pid, its child's, and whether a
// process broke away from the job.
func pids(t *testing.T, r *bufio.Reader) (parent, child int, escaped bool) {
	t.Helper()
	if _, err := fmt.Fscan(r, &parent, &child, &escaped); err != nil || parent <= 0 {
		line, _ := r.ReadString('\n')
		t.Fatalf("the helper said no pids: %v %s", err, line)
	}
	return parent, child, escaped
}

// open opens pid to wait on it; the test fails when it has already gone.
func open(t *testing.T, pid int) windows.Handle {
	t.Helper()
	h, err := windows.OpenProcess(windows.SYNCHRONIZE, false, uint32(pid))
	if err != nil {
		t.Fatalf("process %d: %v", pid, err)
	}
	t.Cleanup(func() { windows.CloseHandle(h) })
	return h
}

// ended waits up to 10 s for the process h to end.
func ended(h windows.Handle) bool {
	ev, err := windows.WaitForSingleObject(h, 10_000)
	return err == nil && ev == windows.WAIT_OBJECT_0
}

// checkLimits checks the limits of a job made for Rlimits{MemoryMiB: 512,
// CPUSeconds: 60}. Wine (8.0) keeps them but answers a query for them with
// zeros: there, they are not checked.
func checkLimits(t *testing.T, job windows.Handle) {
	t.Helper()
	var info windows.JOBOBJECT_EXTENDED_LIMIT_INFORMATION
	if err := windows.QueryInformationJobObject(job, windows.JobObjectExtendedLimitInformation,
		uintptr(unsafe.Pointer(&info)), uint32(unsafe.Sizeof(info)), nil); err != nil {
		t.Fatal(err)
	}
	if windows.NewLazySystemDLL("ntdll.dll").NewProc("wine_get_version").Find() == nil {
		t.Logf("Wine tells no job limits (flags %#x): not checked", info.BasicLimitInformation.LimitFlags)
		return
	}
	const want = windows.JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE | windows.JOB_OBJECT_LIMIT_DIE_ON_UNHANDLED_EXCEPTION |
		windows.JOB_OBJECT_LIMIT_PROCESS_MEMORY | windows.JOB_OBJECT_LIMIT_PROCESS_TIME
	if got := info.BasicLimitInformation.LimitFlags; got != want || info.ProcessMemoryLimit != 512<<20 ||
		info.BasicLimitInformation.PerProcessUserTimeLimit != 60*10_000_000 {
		t.Errorf("job limits: flags %#x (want %#x), memory %d, time %d", got, uint32(want), info.ProcessMemoryLimit, info.BasicLimitInformation.PerProcessUserTimeLimit)
	}
}

// inJob lists the processes in job.
func inJob(t *testing.T, job windows.Handle) []int {
	t.Helper()
	var list struct {
		assigned, listed uint32
		ids              [16]uintptr
	}
	if err := windows.QueryInformationJobObject(job, windows.JobObjectBasicProcessIdList,
		uintptr(unsafe.Pointer(&list)), uint32(unsafe.Sizeof(list)), nil); err != nil {
		t.Fatal(err)
	}
	var pids []int
	for _, id := range list.ids[:min(list.listed, uint32(len(list.ids)))] {
		pids = append(pids, int(id))
	}
	return pids
}

// A Tree's job holds the leader and what it starts, with the limits set,
// lets none break away, and Kill ends them all.
func TestTreeJob(t *testing.T) {
	cmd, err := Command(os.Args[0], nil, append((&Stdio{}).Env(nil), treeHelper+"=parent"))
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	tree, err := Start(cmd, Rlimits{MemoryMiB: 512, CPUSeconds: 60})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tree.Kill(); _ = cmd.Wait() })
	parent, child, escaped := pids(t, bufio.NewReader(out))
	if parent != cmd.Process.Pid || escaped {
		t.Errorf("parent %d (started %d), broke away from its job: %v", parent, cmd.Process.Pid, escaped)
	}
	checkLimits(t, tree.job)
	if in := inJob(t, tree.job); !slices.Contains(in, parent) || !slices.Contains(in, child) {
		t.Errorf("the job holds %v, want the parent %d and its child %d", in, parent, child)
	}
	hParent, hChild := open(t, parent), open(t, child)
	tree.Kill()
	tree.Kill() // again: no harm
	if !ended(hParent) || !ended(hChild) {
		t.Fatal("the tree outlived Kill")
	}
}

// The job ends with the gateway, however it ends: a gateway killed
// (TerminateProcess) closes its handle, and the job kills its processes.
func TestTreeEndsWithTheGateway(t *testing.T) {
	gw := exec.Command(os.Args[0])
	gw.Env = append(os.Environ(), treeHelper+"=gateway")
	out, err := gw.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := gw.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = gw.Process.Kill(); _ = gw.Wait() }()
	parent, child, _ := pids(t, bufio.NewReader(out))
	hParent, hChild := open(t, parent), open(t, child)
	if err := gw.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	if !ended(hParent) || !ended(hChild) {
		t.Fatalf("processes %d and %d outlived the gateway killed", parent, child)
	}
}
