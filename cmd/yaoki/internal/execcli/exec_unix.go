//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package execcli

import (
	"os"
	"os/exec"
	"syscall"
	"time"
	"unsafe"
)

// ownGroup reports whether yaoki exec runs each command in a process group
// of its own: it does unless yaoki is in the foreground of its controlling
// terminal. There the command stays in yaoki's group, so that it can read
// the terminal and the terminal's keys (Ctrl-C, Ctrl-Z) reach it as they
// would without yaoki.
func ownGroup() bool {
	tty, err := os.OpenFile("/dev/tty", os.O_RDWR, 0)
	if err != nil {
		return true // no controlling terminal
	}
	defer tty.Close()
	var fg int32
	if _, _, e := syscall.Syscall(syscall.SYS_IOCTL, tty.Fd(), uintptr(syscall.TIOCGPGRP), uintptr(unsafe.Pointer(&fg))); e != 0 {
		return true
	}
	return int(fg) != syscall.Getpgrp()
}

// setGroup makes c start in a process group of its own, whose ID is the
// command's PID.
func setGroup(c *exec.Cmd) { c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} }

// signalGroup sends s to the process group led by p.
func signalGroup(p *os.Process, s os.Signal) error {
	sig, ok := s.(syscall.Signal)
	if !ok {
		return p.Signal(s)
	}
	return syscall.Kill(-p.Pid, sig)
}

// endLeftovers ends what an attempt left running once its command pid has
// exited: the processes of its group (when group) and, where yaoki adopts
// orphans (Linux), every process left of the attempt, those that left the
// group (setsid, a daemon's double fork) too. Each gets SIGTERM (the group's
// members not when signalled: they got the timeout's or a forwarded signal
// already), and those still there at deadline SIGKILL, or at once when
// stop is closed (the user's signal: yaoki is stopping, and waits for no
// grace between attempts). It returns once none is left, or a second after
// the SIGKILL.
func endLeftovers(pid int, group, signalled bool, deadline time.Time, stop <-chan struct{}) {
	if group && !signalled {
		_ = syscall.Kill(-pid, syscall.SIGTERM)
	}
	termed := map[int]bool{}
	killed := false
	for {
		reap()
		kids := orphans()
		inGroup := group && syscall.Kill(-pid, 0) == nil
		if !inGroup && len(kids) == 0 {
			return
		}
		now := time.Now()
		select {
		case <-stop:
			if deadline.After(now) {
				deadline = now
			}
		default:
		}
		if !killed && !now.Before(deadline) {
			killed = true
			if group {
				_ = syscall.Kill(-pid, syscall.SIGKILL)
			}
		}
		for _, k := range kids {
			switch {
			case killed:
				_ = syscall.Kill(k, syscall.SIGKILL)
			case !termed[k]:
				termed[k] = true
				if pg, err := syscall.Getpgid(k); err == nil && pg == pid && signalled {
					continue // the group's signal reached it
				}
				_ = syscall.Kill(k, syscall.SIGTERM)
			}
		}
		if now.After(deadline.Add(time.Second)) {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
}
