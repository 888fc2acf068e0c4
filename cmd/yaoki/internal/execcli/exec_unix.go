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

// endGroup waits, until deadline, for the processes left in the group of
// the command pid (which has exited) to exit, checking every 10 ms, then
// kills those still there.
func endGroup(pid int, deadline time.Time) {
	for syscall.Kill(-pid, 0) == nil && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	_ = syscall.Kill(-pid, syscall.SIGKILL)
}
