package guard

import (
	"os"
	"os/exec"
	"strings"
	"syscall"

	"golang.org/x/sys/windows"
)

// baseEnv is what every child gets of the gateway's environment besides
// the policy's variables: PATH, and what Windows programs need to start
// and to find their folders. Without SystemRoot Winsock does not load;
// without TEMP and TMP a program's temporary files go to
// C:\Windows\Temp, which a user may not write; npm keeps its cache under
// LOCALAPPDATA and its global packages under APPDATA, uv its cache under
// LOCALAPPDATA; Node.js's os.homedir() is USERPROFILE; npm runs package
// scripts with ComSpec; PATHEXT says which files are programs.
var baseEnv = []string{"PATH", "SystemRoot", "SystemDrive", "windir", "PATHEXT", "ComSpec", "TEMP", "TMP",
	"USERPROFILE", "APPDATA", "LOCALAPPDATA", "ProgramData", "ProgramFiles", "ProgramFiles(x86)", "ProgramW6432",
	"CommonProgramFiles", "CommonProgramFiles(x86)", "CommonProgramW6432", "PROCESSOR_ARCHITECTURE", "NUMBER_OF_PROCESSORS"}

// envKey tells variables apart as Windows does: by name, whatever its
// case.
func envKey(name string) string { return strings.ToUpper(name) }

// launchPath is the program to run for program and the arguments to run
// it with (finder.windowsLaunch).
func launchPath(program string, args []string) (string, []string, error) {
	return finder{lookPath: exec.LookPath, isFile: isFile}.windowsLaunch(program, args)
}

func isFile(path string) bool {
	info, err := os.Stat(path)
	return err == nil && info.Mode().IsRegular()
}

// sysProcAttr starts a child suspended, so that Start puts it in its job
// before it runs (and so before it could start a process outside it); in a
// process group of its own, so that a Ctrl+C meant for the gateway is not
// the child's; and with no console window, which a console program
// started by a gateway without a console (an IDE's) would open.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{CreationFlags: windows.CREATE_SUSPENDED | windows.CREATE_NEW_PROCESS_GROUP | windows.CREATE_NO_WINDOW}
}
