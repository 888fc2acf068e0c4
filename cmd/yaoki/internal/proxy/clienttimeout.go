package proxy

import "time"

// DefaultClientTimeout is Server.ClientTimeout as NewServer sets it, and
// yaoki proxy's --client-timeout: nginx's client_body_timeout and
// send_timeout, 60 s.
const DefaultClientTimeout = 60 * time.Second

// connDeadlines are the deadlines of a client's connection, which the
// server's ResponseWriter sets (http.ResponseController).
type connDeadlines interface {
	SetReadDeadline(time.Time) error
	SetWriteDeadline(time.Time) error
}

// idleDeadline bounds the wait for one direction of a client's
// connection to move: before each read of the request's body (or write
// of the answer), the read (or write) deadline is moved to idle from now,
// so that a client that sends (or takes) bytes now and then is served
// however long its request takes, and one that stalls for idle is given
// up. It is moved only when it was last moved more than idle/8 ago: a
// request of many reads or writes moves it a few times, not at each, and
// a stalled client is given up after between 7/8 of idle and idle.
//
// The zero value (conn nil) sets nothing. It is used by one goroutine at a
// time.
type idleDeadline struct {
	conn  connDeadlines // nil: no timeout
	write bool          // the write deadline, else the read one
	idle  time.Duration
	last  time.Time // when the deadline was last moved; zero: never
}

// extend moves the deadline before a read or a write.
func (d *idleDeadline) extend() {
	if d.conn == nil {
		return
	}
	now := time.Now()
	if !d.last.IsZero() && now.Sub(d.last) < d.idle/8 {
		return
	}
	d.last = now
	if d.write {
		d.conn.SetWriteDeadline(now.Add(d.idle))
	} else {
		d.conn.SetReadDeadline(now.Add(d.idle))
	}
}
