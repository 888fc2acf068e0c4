package execcli

import (
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"unsafe"
)

// adoptOrphans makes yaoki the child subreaper of what it runs
// (PR_SET_CHILD_SUBREAPER): a process an attempt started whose parent exited
// (a daemon's double fork, a setsid child of a command that is gone) becomes
// yaoki's child, not init's, so that endLeftovers finds and ends it before
// the next attempt. It reports whether the kernel agreed.
func adoptOrphans() bool {
	const prSetChildSubreaper = 36
	_, _, e := syscall.RawSyscall(syscall.SYS_PRCTL, prSetChildSubreaper, 1, 0)
	return e == 0
}

// orphans returns the PIDs of yaoki's child processes, read from /proc
// (with no attempt running, every one is a leftover of the last attempt),
// zombies left out.
func orphans() []int {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	self := os.Getpid()
	var out []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...; comm may hold spaces and ')'.
		i := strings.LastIndexByte(string(b), ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(string(b[i+1:]))
		if len(f) < 2 || f[0] == "Z" || f[0] == "X" {
			continue
		}
		if ppid, err := strconv.Atoi(f[1]); err == nil && ppid == self {
			out = append(out, pid)
		}
	}
	return out
}

// reap collects the exit statuses of yaoki's exited children (adopted
// orphans), so that none stays a zombie. It is called only between
// attempts, when no command of yaoki's own runs.
func reap() {
	for {
		var ws syscall.WaitStatus
		pid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil)
		if pid <= 0 || err != nil {
			return
		}
	}
}

// dieWithYaoki makes c get SIGKILL if yaoki dies first (the parent death
// signal), so that a yaoki killed with SIGKILL leaves no attempt running on
// unwatched. The processes the command started are not reached by it.
func dieWithYaoki(c *exec.Cmd) {
	if c.SysProcAttr == nil {
		c.SysProcAttr = &syscall.SysProcAttr{}
	}
	c.SysProcAttr.Pdeathsig = syscall.SIGKILL
}

// awaitExit returns once the process pid has exited, leaving it a zombie
// for os/exec to reap (waitid with WNOWAIT): until it is reaped, nothing
// else can take its PID or learn that it is gone.
func awaitExit(pid int) {
	const (
		pPID    = 1
		wExited = 4
		wNoWait = 0x1000000
	)
	var info [128]byte // siginfo_t, unread
	for {
		_, _, e := syscall.Syscall6(syscall.SYS_WAITID, pPID, uintptr(pid), uintptr(unsafe.Pointer(&info)), wExited|wNoWait, 0, 0)
		if e != syscall.EINTR {
			return
		}
	}
}
