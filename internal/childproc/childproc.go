// Package childproc holds what the tests' helper processes (servers started
// by tests, the test binary run again as a child) share: that they die with
// the test that started them, even when it is killed before its cleanups
// run (a test timeout, SIGKILL).
package childproc

import (
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
