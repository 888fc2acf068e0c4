//go:build !linux

package proxy

// quiet reports whether nothing came on c while it was idle in the pool.
// Outside Linux it does not look, and reports true: a connection the
// upstream closed is found when the request is written on it (and sent
// again on a new one), and unsolicited bytes only when the next answer is
// read.
func (c *upstreamConn) quiet() bool { return true }

// socket returns -1: quiet does not look at sockets outside Linux.
func socket(any) int { return -1 }
