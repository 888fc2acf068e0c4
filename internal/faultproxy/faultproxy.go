// Package faultproxy is a TCP proxy on loopback that tests put between a
// client and a real server (redis-server, PostgreSQL) to inject the faults
// of a network: a link down (every connection closed, new ones refused), a
// link that breaks once (every connection closed, new ones let through), a
// server that runs commands but whose replies are lost, and a single lost
// reply (the next one the server sends). It starts passing everything
// through. It is for tests only.
package faultproxy

import (
	"io"
	"net"
	"sync"
	"testing"
)

// Proxy forwards the connections it accepts on Addr to its target. Its
// methods are safe for concurrent use.
type Proxy struct {
	Addr   string // 127.0.0.1:port, for the client under test
	target string
	ln     net.Listener

	mu    sync.Mutex
	mode  mode
	conns map[net.Conn]struct{} // both ends of every open pair
	wg    sync.WaitGroup
}

type mode int

const (
	pass        mode = iota
	down             // connections are cut
	dropReplies      // requests reach the server, replies are dropped
	dropOne          // the next reply is dropped, then pass
	holdOne          // the next reply is swallowed, its connection left open and silent, then pass
)

// New returns a proxy to target (host:port), closed when tb ends.
func New(tb testing.TB, target string) *Proxy {
	tb.Helper()
	p, err := Start(target)
	if err != nil {
		tb.Fatalf("faultproxy: %v", err)
	}
	tb.Cleanup(p.Close)
	return p
}

// Start returns a proxy to target (host:port) outside a test; the caller
// closes it.
func Start(target string) (*Proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &Proxy{Addr: ln.Addr().String(), target: target, ln: ln, conns: map[net.Conn]struct{}{}}
	p.wg.Add(1)
	go p.accept()
	return p, nil
}

// Close stops accepting, cuts every connection and waits until the
// proxy's goroutines are gone.
func (p *Proxy) Close() {
	_ = p.ln.Close()
	p.cut()
	p.wg.Wait()
}

// Up passes everything through again.
func (p *Proxy) Up() { p.set(pass) }

// Down cuts every connection; new ones are accepted and closed at once, as
// if the server had gone.
func (p *Proxy) Down() {
	p.set(down)
	p.cut()
}

// Cut cuts every open connection and lets new ones through, in one step:
// a link that breaks once. Down followed by Up is not the same: a client
// that retries at once can meet the proxy between the two and be refused.
func (p *Proxy) Cut() { p.cut() }

// DropReplies lets requests reach the server but drops what it answers,
// cutting the connection instead: the command ran, the client never learns
// it. New connections fail the same way (their handshake gets no reply).
func (p *Proxy) DropReplies() { p.set(dropReplies) }

// DropNextReply drops the next reply the server sends, on whichever
// connection, and cuts that connection; then everything passes again. The
// command it answered ran: the client sees a broken connection.
func (p *Proxy) DropNextReply() { p.set(dropOne) }

// HoldNextReply swallows the next reply the server sends, on whichever
// connection, and everything the server sends on that connection
// afterwards, leaving it open: the command ran, and the client waits for
// an answer that never comes, as over a link that died without a reset
// (a NAT or load balancer that forgot the connection). Then everything
// else passes again.
func (p *Proxy) HoldNextReply() { p.set(holdOne) }

func (p *Proxy) set(m mode) {
	p.mu.Lock()
	p.mode = m
	p.mu.Unlock()
}

// passReply says whether a reply may go to the client, and uses up a
// single drop or hold; hold says the connection is to be left open and
// silent.
func (p *Proxy) passReply() (ok, hold bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch p.mode {
	case pass:
		return true, false
	case dropOne:
		p.mode = pass
	case holdOne:
		p.mode = pass
		return false, true
	}
	return false, false
}

func (p *Proxy) cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for c := range p.conns {
		_ = c.Close()
	}
}

func (p *Proxy) track(cs ...net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.mode == down {
		return false
	}
	for _, c := range cs {
		p.conns[c] = struct{}{}
	}
	return true
}

func (p *Proxy) untrack(cs ...net.Conn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range cs {
		_ = c.Close()
		delete(p.conns, c)
	}
}

func (p *Proxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return // closed
		}
		s, err := net.Dial("tcp", p.target)
		if err != nil {
			_ = c.Close()
			continue
		}
		if !p.track(c, s) {
			_ = c.Close()
			_ = s.Close()
			continue
		}
		p.wg.Add(2)
		go func() { // client to server
			defer p.wg.Done()
			_, _ = io.Copy(s, c)
			p.untrack(c, s)
		}()
		go func() { // server to client, unless replies are dropped
			defer p.wg.Done()
			defer p.untrack(c, s)
			buf := make([]byte, 32<<10)
			silent := false
			for {
				n, err := s.Read(buf)
				if n > 0 && !silent {
					pass, hold := p.passReply()
					switch {
					case hold:
						silent = true
						continue
					case !pass:
						return
					}
					if _, werr := c.Write(buf[:n]); werr != nil {
						return
					}
				}
				if err != nil {
					return
				}
			}
		}()
	}
}
