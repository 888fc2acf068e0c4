//go:build !linux

package childproc

import "syscall"

func dieWithParent(*syscall.SysProcAttr) {}
