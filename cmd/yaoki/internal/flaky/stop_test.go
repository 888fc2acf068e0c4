package flaky

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// lines is a log that tells each line written on a channel.
type lines struct {
	mu  sync.Mutex
	all strings.Builder
	c   chan string
}

func (l *lines) Write(p []byte) (int, error) {
	l.mu.Lock()
	l.all.Write(p)
	l.mu.Unlock()
	select {
	case l.c <- string(p):
	default:
	}
	return len(p), nil
}

func (l *lines) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.all.String()
}

func newFlaky(t *testing.T, script string, maxRequests int) (*flaky, *lines) {
	t.Helper()
	s, err := parseScript(script)
	if err != nil {
		t.Fatal(err)
	}
	log := &lines{c: make(chan string, 16)}
	return &flaky{o: &flakyOptions{maxRequests: maxRequests, attemptHeader: "Attempt-Count"}, script: s, log: log,
		keys: map[string]*keyOp{}, answers: map[string]int{}, done: make(chan struct{}), stopping: make(chan struct{}),
		start: time.Now()}, log
}

// A request that comes once --max-requests were taken (on another
// connection, while the server stops) is not answered with the script's
// next step, logged and counted as an answer: its connection is closed,
// and the summary tells it apart. It was answered, and the summary said
// "5 requests" after --max-requests 2.
func TestMaxRequestsNotExceeded(t *testing.T) {
	fl, log := newFlaky(t, "503,200", 2)
	srv := httptest.NewServer(fl)
	defer srv.Close()
	client := srv.Client()
	for i, want := range []int{503, 200} {
		resp, err := client.Get(srv.URL)
		if err != nil || resp.StatusCode != want {
			t.Fatalf("request %d: %v, %v; want %d", i+1, resp, err, want)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	select {
	case <-fl.done:
	default:
		t.Fatal("the server is not told to stop after --max-requests 2")
	}
	// A connection of its own: Go's client sends a GET again, once, when
	// a reused connection closes without an answer.
	fresh := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	if resp, err := fresh.Get(srv.URL); err == nil {
		resp.Body.Close()
		t.Fatalf("a third request after --max-requests 2 was answered %s", resp.Status)
	}
	fl.summary()
	if got := log.String(); !strings.Contains(got, "after --max-requests 2: not answered") ||
		!strings.HasSuffix(got, "flaky: 2 requests, 0 keyed operations: 1×200, 1×503 (and 1 after --max-requests, not answered)\n") {
		t.Errorf("log:\n%s\nwant the third request refused and the summary of two answers", got)
	}
}

// A slow answer cut by the server's stop (SIGINT) is not counted as the
// answer it would have been: its client got the connection closed.
func TestStopDuringSlowAnswerCounted(t *testing.T) {
	fl, log := newFlaky(t, "200:slow=1h", 0)
	srv := httptest.NewServer(fl)
	defer srv.Close()
	got := make(chan error, 1)
	go func() {
		resp, err := srv.Client().Get(srv.URL)
		if err == nil {
			resp.Body.Close()
		}
		got <- err
	}()
	<-log.c // the request is logged: its handler waits its hour
	close(fl.stopping)
	if err := <-got; err == nil {
		t.Fatal("the slow answer was sent after the stop")
	}
	fl.summary()
	if s := log.String(); !strings.HasSuffix(s, "flaky: 1 request, 0 keyed operations: 1×closed\n") || !strings.Contains(s, "req=1 not answered: stopped during its slow=1h0m0s") {
		t.Errorf("log:\n%s\nwant the answer counted as closed", s)
	}
}
