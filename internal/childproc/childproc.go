// Package childproc holds what the tests' helper processes (servers started
// by tests, the test binary run again as a child) share: that they die with
// the test that started them, even when it is killed before its cleanups
// run (a test timeout, SIGKILL).
package childproc

import (
	"net"
	"os/exec"
	"syscall"
)

// DieWithParent makes cmd's process receive SIGKILL when the test process
// dies, where the system can (Linux); elsewhere it does nothing. Call it
// before cmd.Start.
func DieWithParent(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	dieWithParent(cmd.SysProcAttr)
}

// FreePort returns a TCP port on 127.0.0.1 that was free a moment ago, for
// a server the test starts next (which may still lose it to another
// process; the helpers retry on a new port then).
func FreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
