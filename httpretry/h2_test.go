package httpretry_test

import (
	"bufio"
	"encoding/binary"
	"errors"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"

	"github.com/yaoki-go/yaoki/httpretry"
	"github.com/yaoki-go/yaoki/retry"
)

// HTTP/2 frame types and flags (RFC 9113 §6) that h2Refuser writes.
const (
	h2Headers      = 0x1
	h2RSTStream    = 0x3
	h2Settings     = 0x4
	h2GoAway       = 0x7
	h2EndStream    = 0x1
	h2EndHeaders   = 0x4
	h2Ack          = 0x1
	h2RefusedCode  = 0x7 // REFUSED_STREAM
	h2ClientPrefix = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
)

// h2Refuser is an HTTP/2 server (prior knowledge, no TLS) written frame by
// frame: it answers the first refuse streams it sees with RST_STREAM
// REFUSED_STREAM (RFC 9113 §8.7: the stream was not processed) and the
// others with a bare 200. It counts the requests (HEADERS frames) seen.
type h2Refuser struct {
	refuse int32
	// goAway refuses with a GOAWAY whose last stream ID is 0 instead: no
	// stream of the connection was processed (RFC 9113 §6.8).
	goAway bool
	seen   atomic.Int32
}

func (s *h2Refuser) serve(c net.Conn) {
	defer c.Close()
	br := bufio.NewReader(c)
	pre := make([]byte, len(h2ClientPrefix))
	if _, err := io.ReadFull(br, pre); err != nil || string(pre) != h2ClientPrefix {
		return
	}
	// Frames are written by a goroutine of their own: net.Pipe is
	// synchronous, and the client writes (its SETTINGS ack) while the
	// server would.
	frames := make(chan []byte, 64)
	wrote := make(chan struct{})
	go func() {
		defer close(wrote)
		for f := range frames {
			if _, err := c.Write(f); err != nil {
				c.Close()
				for range frames {
				}
				return
			}
		}
	}()
	defer func() { close(frames); <-wrote }()
	write := func(typ, flags byte, stream uint32, payload []byte) error {
		var h [9]byte
		h[0], h[1], h[2] = byte(len(payload)>>16), byte(len(payload)>>8), byte(len(payload))
		h[3], h[4] = typ, flags
		binary.BigEndian.PutUint32(h[5:], stream)
		frames <- append(h[:], payload...)
		return nil
	}
	if write(h2Settings, 0, 0, nil) != nil {
		return
	}
	for {
		var h [9]byte
		if _, err := io.ReadFull(br, h[:]); err != nil {
			return
		}
		n := int(h[0])<<16 | int(h[1])<<8 | int(h[2])
		if _, err := io.CopyN(io.Discard, br, int64(n)); err != nil {
			return
		}
		typ, flags, stream := h[3], h[4], binary.BigEndian.Uint32(h[5:])&0x7fffffff
		var err error
		switch {
		case typ == h2Settings && flags&h2Ack == 0:
			err = write(h2Settings, h2Ack, 0, nil)
		case typ == h2Headers:
			switch {
			case s.seen.Add(1) > s.refuse:
				// HPACK static table entry 8: ":status: 200".
				err = write(h2Headers, h2EndHeaders|h2EndStream, stream, []byte{0x88})
			case s.goAway:
				err = write(h2GoAway, 0, 0, make([]byte, 8))
			default:
				err = write(h2RSTStream, 0, stream, []byte{0, 0, 0, h2RefusedCode})
			}
		}
		if err != nil {
			return
		}
	}
}

// h2PipeBase serves s over in-memory connections, inside a synctest bubble,
// and returns an http.Transport that speaks HTTP/2 to it.
func h2PipeBase(t *testing.T, s *h2Refuser) *http.Transport {
	l := &pipeListener{conns: make(chan net.Conn), done: make(chan struct{})}
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		open []net.Conn
	)
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			open = append(open, c)
			mu.Unlock()
			wg.Add(1)
			go func() { defer wg.Done(); s.serve(c) }()
		}
	}()
	var p http.Protocols
	p.SetUnencryptedHTTP2(true)
	base := &http.Transport{DialContext: l.dial, Protocols: &p}
	t.Cleanup(func() {
		base.CloseIdleConnections()
		l.Close()
		mu.Lock()
		for _, c := range open {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	return base
}

// TestH2RefusedStreamPostSentAgain: a stream the server refused was not
// processed (RFC 9113 §8.7), so a POST without an Idempotency-Key may be
// sent again. net/http's HTTP/2 transport retries it itself, 7 times over
// about a minute; when the server refuses longer than that, the transport
// sends it again as it would a request whose connection could not be made.
func TestH2RefusedStreamPostSentAgain(t *testing.T) {
	for _, goAway := range []bool{false, true} {
		name := map[bool]string{false: "REFUSED_STREAM", true: "GOAWAY"}[goAway]
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				s := &h2Refuser{refuse: 9, goAway: goAway}
				tr := &httpretry.Transport{Base: h2PipeBase(t, s), Policy: fast(retry.Policy{})}
				resp, _, err := do(t, tr, "POST", "http://api.test/pay", strings.NewReader("pay 10"))
				if err != nil {
					t.Fatalf("got %v, want 200: a refused stream was never processed", err)
				}
				if resp.StatusCode != 200 || s.seen.Load() != 10 {
					t.Errorf("got %d after %d requests, want 200 after 10", resp.StatusCode, s.seen.Load())
				}
			})
		})
	}
}

// TestH2RefusedOnceRetriedBelow: a stream refused once is sent again by
// net/http's HTTP/2 transport, under httpretry: one attempt, POST or not.
func TestH2RefusedOnceRetriedBelow(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := &h2Refuser{refuse: 1}
		var attempts atomic.Int32
		p := fast(retry.Policy{})
		tr := &httpretry.Transport{Base: h2PipeBase(t, s), Policy: p, Observer: nil}
		tr.Policy.OnRetry = func(retry.Wait) { attempts.Add(1) }
		resp, _, err := do(t, tr, "POST", "http://api.test/pay", strings.NewReader("pay 10"))
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("got %v, %v; want 200", resp, err)
		}
		if s.seen.Load() != 2 || attempts.Load() != 0 {
			t.Errorf("server saw %d requests, httpretry retried %d times; want 2 and 0", s.seen.Load(), attempts.Load())
		}
	})
}

// TestH2StreamResetOnlyIdempotentRetried: over HTTP/2 with TLS, a stream
// the server resets after it began processing (a handler that aborts) is
// retried for a GET, and not for a POST without an Idempotency-Key.
func TestH2StreamResetOnlyIdempotentRetried(t *testing.T) {
	var calls atomic.Int32
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ProtoMajor != 2 {
			t.Errorf("request came over %s, want HTTP/2", r.Proto)
		}
		if calls.Add(1)%2 == 1 {
			panic(http.ErrAbortHandler) // RST_STREAM INTERNAL_ERROR
		}
		io.WriteString(w, "ok")
	}))
	srv.EnableHTTP2 = true
	srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	srv.StartTLS()
	defer srv.Close()
	base := srv.Client().Transport.(*http.Transport)
	defer base.CloseIdleConnections()
	tr := &httpretry.Transport{Base: base, Policy: fast(retry.Policy{})}

	resp, body, err := do(t, tr, "GET", srv.URL, nil)
	wantAnswer(t, resp, body, err, 200, "ok")
	if calls.Load() != 2 {
		t.Errorf("GET: server saw %d requests, want 2", calls.Load())
	}

	_, _, err = do(t, tr, "POST", srv.URL, strings.NewReader("pay 10"))
	if !errors.Is(err, httpretry.ErrNotIdempotent) {
		t.Fatalf("POST: got %v, want an error matching ErrNotIdempotent", err)
	}
	if calls.Load() != 3 {
		t.Errorf("POST: server saw %d requests in all, want 3 (the POST once)", calls.Load())
	}
}

// TestH2LongRetryableBodyKeepsConnection: over HTTP/2, a 503 with a 10 MB
// body is thrown away after a bounded read by resetting its stream, not
// its connection: the retry goes on the same connection.
func TestH2LongRetryableBodyKeepsConnection(t *testing.T) {
	var calls, conns atomic.Int32
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if calls.Add(1) == 1 {
			w.WriteHeader(503)
			chunk := make([]byte, 64<<10)
			for range 160 {
				if _, err := w.Write(chunk); err != nil {
					return
				}
			}
			return
		}
		io.WriteString(w, "ok")
	}))
	srv.EnableHTTP2 = true
	srv.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		if st == http.StateNew {
			conns.Add(1)
		}
	}
	srv.StartTLS()
	defer srv.Close()
	base := srv.Client().Transport.(*http.Transport)
	defer base.CloseIdleConnections()
	tr := &httpretry.Transport{Base: base, Policy: fast(retry.Policy{})}
	resp, body, err := do(t, tr, "GET", srv.URL, nil)
	wantAnswer(t, resp, body, err, 200, "ok")
	if resp.ProtoMajor != 2 || conns.Load() != 1 {
		t.Errorf("got %s over %d connections, want HTTP/2 over 1", resp.Proto, conns.Load())
	}
}
