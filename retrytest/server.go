package retrytest

import (
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"
	"time"
)

// Server is a real HTTP server on a loopback port that answers as a script
// says, for tests of code that calls HTTP services: the n-th request gets
// the n-th step, whatever its path, and every request is recorded with its
// headers, body and arrival time. Once the script is over, requests are
// answered 200 with an empty body.
//
// A Server is safe for concurrent use; concurrent requests take the next
// steps in their order of arrival.
type Server struct {
	// URL is the server's base URL, "http://127.0.0.1:port".
	URL string

	srv  *httptest.Server
	done chan struct{}
	once sync.Once

	played
	conns int // TCP connections accepted
}

// NewServer starts a Server for script (see ParseScript) and closes it
// when tb's test ends. A bad script fails the test at once.
func NewServer(tb testing.TB, script string) *Server {
	tb.Helper()
	s, err := StartServer(script)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(s.Close)
	return s
}

// StartServer starts a Server for script (see ParseScript); the caller
// closes it. The failure "refused" cannot be served (the server exists)
// and is refused.
func StartServer(script string) (*Server, error) {
	steps, err := ParseScript(script)
	if err != nil {
		return nil, err
	}
	return StartServerSteps(steps...)
}

// StartServerSteps starts a Server that answers with steps; the caller
// closes it.
func StartServerSteps(steps ...Step) (*Server, error) {
	for i, st := range steps {
		if st.Fail == Refused {
			return nil, errors.New("retrytest: step " + strconv.Itoa(i+1) + " is \"refused\": a Server cannot refuse its own connections; use a RoundTripper, or a closed port")
		}
	}
	s := &Server{played: played{steps: steps}, done: make(chan struct{})}
	s.srv = httptest.NewUnstartedServer(http.HandlerFunc(s.serve))
	s.srv.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		if st == http.StateNew {
			s.mu.Lock()
			s.conns++
			s.mu.Unlock()
		}
	}
	s.srv.Start()
	s.URL = s.srv.URL
	return s, nil
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	step := s.take(r.Method, r.URL.RequestURI(), r.Header, body, time.Now())

	if step.Delay > 0 {
		t := time.NewTimer(step.Delay)
		select {
		case <-t.C:
		case <-r.Context().Done():
			t.Stop()
			return
		case <-s.done:
			t.Stop()
			return
		}
	}
	switch step.Fail {
	case Reset, EOF:
		conn, _, err := http.NewResponseController(w).Hijack()
		if err != nil {
			panic(http.ErrAbortHandler) // HTTP/2: abort the stream instead
		}
		if tc, ok := conn.(*net.TCPConn); ok && step.Fail == Reset {
			_ = tc.SetLinger(0) // close with RST
		}
		_ = conn.Close()
		return
	case Hang:
		select {
		case <-r.Context().Done():
		case <-s.done:
		}
		return
	}
	h := w.Header()
	for k, v := range step.header(time.Now()) {
		h[k] = v
	}
	h.Set("Content-Length", strconv.Itoa(len(step.Body)))
	w.WriteHeader(step.Status)
	if step.Cut {
		_, _ = io.WriteString(w, step.Body[:step.CutAfter])
		_ = http.NewResponseController(w).Flush()
		panic(http.ErrAbortHandler) // the connection is closed mid-body
	}
	_, _ = io.WriteString(w, step.Body)
}

// Attempts returns the requests received so far, in order of arrival.
func (s *Server) Attempts() []Attempt { return s.list() }

// Conns returns the number of TCP connections accepted so far: with
// keep-alive, fewer than the requests.
func (s *Server) Conns() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.conns
}

// Client returns an *http.Client whose transport is a new http.Transport
// (not http.DefaultTransport, so that tests do not share connections);
// closing the Server closes its idle connections.
func (s *Server) Client() *http.Client { return s.srv.Client() }

// Close ends hanging and delayed answers, closes the connections and
// stops the server. It may be called more than once.
func (s *Server) Close() {
	s.once.Do(func() {
		close(s.done)
		s.srv.Close()
	})
}
