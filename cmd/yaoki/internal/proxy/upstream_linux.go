package proxy

import (
	"syscall"
	"unsafe"
)

// quiet reports whether nothing came on c while it was idle in the pool:
// no byte, no end of the connection, no error. It looks without reading
// (recv with MSG_PEEK and MSG_DONTWAIT): one system call, no allocation.
// c is idle, so nothing else uses or closes its socket meanwhile.
func (c *upstreamConn) quiet() bool {
	if c.fd < 0 {
		return true // not a socket of the kernel's: nothing to look at
	}
	// A raw call: with MSG_DONTWAIT it does not block, so the scheduler
	// need not know of it.
	_, _, errno := syscall.RawSyscall6(syscall.SYS_RECVFROM, uintptr(c.fd), uintptr(unsafe.Pointer(&c.peek[0])), 1,
		syscall.MSG_PEEK|syscall.MSG_DONTWAIT, 0, 0)
	return errno == syscall.EAGAIN // a byte (n > 0), the end (n == 0) or an error: not quiet
}

// socket returns the descriptor of nc's socket, or -1.
func socket(nc any) int {
	sc, ok := nc.(syscall.Conn)
	if !ok {
		return -1
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return -1
	}
	fd := -1
	if rc.Control(func(s uintptr) { fd = int(s) }) != nil {
		return -1
	}
	return fd
}
