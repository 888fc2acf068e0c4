package e2e

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// upstreamEnv makes the test binary a scripted upstream (see serveUpstream)
// instead of running the tests: the proxy's tests start it as a process of
// its own, so that it can be killed.
const upstreamEnv = "YAOKI_E2E_UPSTREAM"

// upSeen is one request as the scripted upstream saw it, or an event of it
// ("cancelled": the client of a /slow request went away).
type upSeen struct {
	Event   string            `json:"event,omitempty"`
	Method  string            `json:"method,omitempty"`
	Path    string            `json:"path,omitempty"`
	N       int               `json:"n,omitempty"` // the request's number for its path
	Attempt string            `json:"attempt,omitempty"`
	Key     string            `json:"key,omitempty"`
	Body    int               `json:"body,omitempty"`
	Ms      int64             `json:"ms"` // since the upstream started
	Header  map[string]string `json:"header,omitempty"`
}

// serveUpstream is the scripted upstream: it listens on a loopback port,
// prints its URL, then one JSON line (an upSeen) per request on stdout.
//
//	/script/NAME?s=503,429:ra=1,200:slow=300ms
//	          the n-th request for NAME gets the n-th answer (the last repeats):
//	          a status, with Retry-After (ra=seconds) and a delay (slow=);
//	          reports "cancelled" if the client goes during the delay
//	/echo     200, the request's method, header and body length in JSON
//	/stream?n=N&every=D   text/event-stream: N events, one every D, each flushed;
//	                      reports "cancelled" if the client goes first
//	/slow?d=D             200 after D; reports "cancelled" if the client goes first
//	/big?mb=N             N MiB as fast as they are taken; reports "cancelled",
//	                      with the bytes sent in Body, if a write fails first
//	/ws                   a protocol upgrade (Upgrade: yaoki-echo) that echoes lines
func serveUpstream() int {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	start := time.Now()
	var mu sync.Mutex
	counts := map[string]int{}
	out := json.NewEncoder(os.Stdout)
	record := func(s upSeen) {
		s.Ms = time.Since(start).Milliseconds()
		mu.Lock()
		defer mu.Unlock()
		_ = out.Encode(s)
	}
	saw := func(r *http.Request, body int) upSeen {
		mu.Lock()
		counts[r.URL.Path]++
		n := counts[r.URL.Path]
		mu.Unlock()
		h := map[string]string{}
		for k, v := range r.Header {
			h[k] = strings.Join(v, ", ")
		}
		return upSeen{Method: r.Method, Path: r.URL.Path, N: n, Attempt: r.Header.Get("Attempt-Count"),
			Key: r.Header.Get("Idempotency-Key"), Body: body, Header: h}
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/script/", func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.Copy(io.Discard, r.Body)
		s := saw(r, int(body))
		record(s)
		steps := strings.Split(r.URL.Query().Get("s"), ",")
		step := steps[min(s.N, len(steps))-1]
		parts := strings.Split(step, ":")
		code, _ := strconv.Atoi(parts[0])
		for _, opt := range parts[1:] {
			k, v, _ := strings.Cut(opt, "=")
			switch k {
			case "ra":
				w.Header().Set("Retry-After", v)
			case "slow":
				d, _ := time.ParseDuration(v)
				select {
				case <-time.After(d):
				case <-r.Context().Done():
					record(upSeen{Event: "cancelled", Path: r.URL.Path, N: s.N})
					return
				}
			}
		}
		w.WriteHeader(code)
		fmt.Fprintf(w, "answer %d: %d\n", s.N, code)
	})
	mux.HandleFunc("/mark", func(w http.ResponseWriter, r *http.Request) { record(saw(r, 0)) })
	mux.HandleFunc("/echo", func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.Copy(io.Discard, r.Body)
		s := saw(r, int(body))
		record(s)
		w.Header().Set("Connection", "X-Upstream-Private")
		w.Header().Set("X-Upstream-Private", "hop")
		w.Header().Set("X-Upstream-Public", "end-to-end")
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(s)
	})
	mux.HandleFunc("/stream", func(w http.ResponseWriter, r *http.Request) {
		record(saw(r, 0))
		n, _ := strconv.Atoi(r.URL.Query().Get("n"))
		every, _ := time.ParseDuration(r.URL.Query().Get("every"))
		w.Header().Set("Content-Type", "text/event-stream")
		w.Header().Set("Cache-Control", "no-cache")
		f := w.(http.Flusher)
		for i := 1; i <= n; i++ {
			fmt.Fprintf(w, "data: event %d\n\n", i)
			f.Flush()
			select {
			case <-r.Context().Done():
				record(upSeen{Event: "cancelled", Path: r.URL.Path})
				return
			case <-time.After(every):
			}
		}
	})
	mux.HandleFunc("/big", func(w http.ResponseWriter, r *http.Request) {
		s := saw(r, 0)
		record(s)
		mb, _ := strconv.Atoi(r.URL.Query().Get("mb"))
		w.Header().Set("Content-Length", strconv.Itoa(mb<<20))
		chunk := make([]byte, 64<<10)
		for sent := 0; sent < mb<<20; sent += len(chunk) {
			if _, err := w.Write(chunk); err != nil {
				record(upSeen{Event: "cancelled", Path: r.URL.Path, N: s.N, Body: sent})
				return
			}
		}
	})
	mux.HandleFunc("/slow", func(w http.ResponseWriter, r *http.Request) {
		s := saw(r, 0)
		record(s)
		d, _ := time.ParseDuration(r.URL.Query().Get("d"))
		select {
		case <-time.After(d):
			fmt.Fprintf(w, "slow %d done\n", s.N)
		case <-r.Context().Done():
			record(upSeen{Event: "cancelled", Path: r.URL.Path, N: s.N})
		}
	})
	mux.HandleFunc("/ws", func(w http.ResponseWriter, r *http.Request) {
		record(saw(r, 0))
		if r.Header.Get("Upgrade") != "yaoki-echo" {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		conn, rw, err := http.NewResponseController(w).Hijack()
		if err != nil {
			return
		}
		defer conn.Close()
		fmt.Fprint(rw, "HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: yaoki-echo\r\n\r\n")
		rw.Flush()
		for {
			line, err := rw.ReadString('\n')
			if err != nil {
				return
			}
			fmt.Fprint(rw, "echo: "+line)
			rw.Flush()
		}
	})
	fmt.Printf("http://%s\n", ln.Addr())
	srv := &http.Server{Handler: mux}
	_ = srv.Serve(ln)
	return 0
}

// upstream is a running scripted upstream.
type upstream struct {
	url   string
	proc  *server
	mu    sync.Mutex
	log   []upSeen
	marks int           // requests made to /mark
	read  chan struct{} // closed when the log's pipe ends
}

// startUpstream starts the scripted upstream; it is killed at the end of
// the test.
func startUpstream(t *testing.T) *upstream {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	s, url, rest := startPrinting(t, []string{upstreamEnv + "=1"}, self)
	u := &upstream{url: url, proc: s, read: make(chan struct{})}
	go func() {
		defer close(u.read)
		sc := bufio.NewScanner(rest)
		for sc.Scan() {
			var s upSeen
			if json.Unmarshal(sc.Bytes(), &s) == nil {
				u.mu.Lock()
				u.log = append(u.log, s)
				u.mu.Unlock()
			}
		}
	}()
	t.Cleanup(u.kill)
	return u
}

// kill ends the upstream with SIGKILL: no answer in progress is finished.
func (u *upstream) kill() {
	u.proc.kill()
	<-u.read
}

// requests returns the requests the upstream saw for path until now: it
// first sends a request of its own to /mark and waits for it in the log,
// which the upstream writes in order, so that every request answered
// before is in it.
func (u *upstream) requests(t *testing.T, path string) []upSeen {
	t.Helper()
	u.marks++
	resp, err := http.Get(u.url + "/mark")
	if err != nil {
		t.Fatalf("upstream /mark: %v", err)
	}
	resp.Body.Close()
	if got := u.waitFor(t, u.marks, func(s upSeen) bool { return s.Path == "/mark" }); len(got) != u.marks {
		t.Fatalf("the upstream's /mark request %d is not in its log", u.marks)
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	var out []upSeen
	for _, s := range u.log {
		if s.Path == path && s.Event == "" {
			out = append(out, s)
		}
	}
	return out
}

// waitFor polls (at most 10 s) until the upstream's log for path has n
// entries that keep says are wanted: the log reaches us through a pipe.
func (u *upstream) waitFor(t *testing.T, n int, keep func(upSeen) bool) []upSeen {
	t.Helper()
	var out []upSeen
	poll(10*time.Second, 5*time.Millisecond, func() bool {
		u.mu.Lock()
		defer u.mu.Unlock()
		out = nil
		for _, s := range u.log {
			if keep(s) {
				out = append(out, s)
			}
		}
		return len(out) >= n
	})
	return out
}
