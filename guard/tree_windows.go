package guard

import (
	"errors"
	"fmt"
	"os/exec"
	"sync"
	"unsafe"

	"golang.org/x/sys/windows"
)

// Tree is a launched server's processes: a job object that its leader
// joins before it runs, and with it every process it starts. The job is
// set to kill them all when its last handle closes, the gateway's: they
// end with the gateway however it ends, killed hard too.
type Tree struct {
	cmd *exec.Cmd

	mu  sync.Mutex
	job windows.Handle // 0 once killed
}

// contain puts the leader, started suspended (sysProcAttr), in a job of
// its own with the limits, then lets it run. Assigned right after it has
// started but while still suspended, it cannot have started a process
// outside the job; os/exec gives no way to create it in the job.
func (t *Tree) contain(limits Rlimits) error {
	job, err := windows.CreateJobObject(nil, nil)
	if err != nil {
		return fmt.Errorf("create a job object: %w", err)
	}
	t.job = job // Kill closes it, and ends what is in it
	info := jobLimits(limits)
	if _, err := windows.SetInformationJobObject(job, windows.JobObjectExtendedLimitInformation,
		uintptr(unsafe.Pointer(&info)), uint32(unsafe.Sizeof(info))); err != nil {
		return fmt.Errorf("set the job's limits: %w", err)
	}
	pid := uint32(t.cmd.Process.Pid) // os.Process holds its handle: the pid is not another's
	p, err := windows.OpenProcess(windows.PROCESS_SET_QUOTA|windows.PROCESS_TERMINATE, false, pid)
	if err != nil {
		return fmt.Errorf("open the process: %w", err)
	}
	defer windows.CloseHandle(p)
	if err := windows.AssignProcessToJobObject(job, p); err != nil {
		return fmt.Errorf("put the process in its job: %w", err)
	}
	return resume(pid)
}

// jobLimits is what a job holds its processes to: killed when the job's
// handle closes; an unhandled exception ends the process, with no Windows
// Error Reporting (and so no dump of its memory, tokens with it); and the
// limits that Windows keeps per process. Open files and file size it has
// none of.
func jobLimits(l Rlimits) windows.JOBOBJECT_EXTENDED_LIMIT_INFORMATION {
	var info windows.JOBOBJECT_EXTENDED_LIMIT_INFORMATION
	basic := &info.BasicLimitInformation
	basic.LimitFlags = windows.JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE | windows.JOB_OBJECT_LIMIT_DIE_ON_UNHANDLED_EXCEPTION
	if l.MemoryMiB > 0 {
		basic.LimitFlags |= windows.JOB_OBJECT_LIMIT_PROCESS_MEMORY
		info.ProcessMemoryLimit = uintptr(min(mib(l.MemoryMiB), uint64(^uintptr(0))))
	}
	if l.CPUSeconds > 0 {
		basic.LimitFlags |= windows.JOB_OBJECT_LIMIT_PROCESS_TIME
		basic.PerProcessUserTimeLimit = int64(l.CPUSeconds) * 10_000_000 // in 100 ns
	}
	return info
}

// resume lets the suspended process pid run: its one thread, which
// os/exec does not keep a handle to, found among the system's threads.
func resume(pid uint32) error {
	snap, err := windows.CreateToolhelp32Snapshot(windows.TH32CS_SNAPTHREAD, 0)
	if err != nil {
		return fmt.Errorf("resume the process: %w", err)
	}
	defer windows.CloseHandle(snap)
	entry := windows.ThreadEntry32{Size: uint32(unsafe.Sizeof(windows.ThreadEntry32{}))}
	resumed := 0
	for err = windows.Thread32First(snap, &entry); err == nil; err = windows.Thread32Next(snap, &entry) {
		if entry.OwnerProcessID != pid {
			continue
		}
		if err := resumeThread(entry.ThreadID); err != nil {
			return fmt.Errorf("resume the process: %w", err)
		}
		resumed++
	}
	if !errors.Is(err, windows.ERROR_NO_MORE_FILES) {
		return fmt.Errorf("resume the process: %w", err)
	}
	if resumed == 0 {
		return fmt.Errorf("resume the process: no thread of process %d found", pid)
	}
	return nil
}

func resumeThread(id uint32) error {
	th, err := windows.OpenThread(windows.THREAD_SUSPEND_RESUME, false, id)
	if err != nil {
		return err
	}
	defer windows.CloseHandle(th)
	_, err = windows.ResumeThread(th)
	return err
}

// Survey does nothing on Windows, where the job holds every process the
// leader starts; on Linux it notes the processes that left its group.
func (t *Tree) Survey() {}

// Terminate does nothing on Windows, which has no signal asking a process
// without a console of its own to end: the server is asked by its stdin
// closing, and Kill ends it.
func (t *Tree) Terminate() {}

// Kill ends every process of the job, and closes it. It may be called
// again.
func (t *Tree) Kill() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.job == 0 {
		return
	}
	_ = windows.TerminateJobObject(t.job, 1)
	_ = windows.CloseHandle(t.job)
	t.job = 0
}
