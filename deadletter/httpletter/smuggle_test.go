package httpletter_test

import (
	"bufio"
	"context"
	"errors"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/yaoki-go/yaoki/deadletter"
	"github.com/yaoki-go/yaoki/deadletter/httpletter"
	"github.com/yaoki-go/yaoki/retry"
)

// rawServer is a loopback server that records the head of each request
// as it came on the wire and answers 201.
func rawServer(t *testing.T) (addr string, heads func() []string) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var (
		mu   sync.Mutex
		seen []string
		wg   sync.WaitGroup
	)
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Go(func() {
				defer c.Close()
				r := bufio.NewReader(c)
				var head strings.Builder
				for {
					line, err := r.ReadString('\n')
					if err != nil {
						return
					}
					head.WriteString(line)
					if line == "\r\n" {
						break
					}
				}
				mu.Lock()
				seen = append(seen, head.String())
				mu.Unlock()
				c.Write([]byte("HTTP/1.1 201 Created\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"))
			})
		}
	})
	t.Cleanup(func() { ln.Close(); wg.Wait() })
	return ln.Addr().String(), func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), seen...)
	}
}

// TestRedriveRefusesSmuggling: letters written by hand (or by whoever can
// write the table) whose header names the request's framing in lower case
// (which net/http writes as is, beside its own Content-Length: a request
// with two lengths, or a length and chunked, that a proxy in front may
// split into two), a second Host, hop-by-hop headers that ask a proxy to
// upgrade or to drop headers, or a query with a space (which ends the
// request target in the request line). Each is parked at once, nothing
// counted as attempted, and nothing reaches the server. A letter with a
// lower-case idempotency-key header is sent with one Idempotency-Key, the
// letter's.
func TestRedriveRefusesSmuggling(t *testing.T) {
	addr, heads := rawServer(t)
	client := &http.Client{Transport: &http.Transport{}}
	defer client.CloseIdleConnections()
	h := httpletter.Handler(client, nil)
	smuggled := `"body":"MA0KDQpHRVQgL2FkbWluIEhUVFAvMS4xDQpIb3N0OiBoDQoNCg=="` // 0\r\n\r\nGET /admin HTTP/1.1 ...
	for name, header := range map[string]string{
		"transfer-encoding": `{"transfer-encoding":["chunked"]}`,
		"content-length":    `{"content-length":["3"]}`,
		"Transfer-Encoding": `{"Transfer-Encoding":["chunked"]}`,
		"host":              `{"host":["admin.internal"]}`,
		"connection":        `{"connection":["Upgrade, HTTP2-Settings"],"upgrade":["h2c"],"Http2-Settings":["AAMAAABkAAQAAP__"]}`,
		"keep-alive":        `{"Keep-Alive":["timeout=5"]}`,
		"te":                `{"te":["trailers"],"trailer":["X-Evil"]}`,
		"proxy-connection":  `{"proxy-connection":["X-Forwarded-For"]}`,
		"trailer framing":   `{"X-Sum":["1"]},"trailer":{"transfer-encoding":["chunked"],"content-length":["3"]}`,
		"trailer host":      `{"X-Sum":["1"]},"trailer":{"host":["admin.internal"]}`,
	} {
		p := `{"method":"POST","url":"http://` + addr + `/charges","header":` + header + `,` + smuggled + `}`
		l := deadletter.Letter{ID: name, Queue: "q", Payload: []byte(p)}
		err := h(context.Background(), l)
		if err == nil || !retry.IsPermanent(err) || !errors.Is(err, deadletter.ErrNotAttempted) || !strings.Contains(err.Error(), "header") {
			t.Errorf("%s: %v; want a permanent error, not attempted, naming the header", name, err)
		}
	}
	l := deadletter.Letter{ID: "space", Queue: "q", Payload: []byte(`{"method":"GET","url":"http://` + addr + `/?a b HTTP/1.0"}`)}
	if err := h(context.Background(), l); err == nil || !retry.IsPermanent(err) || !errors.Is(err, deadletter.ErrNotAttempted) {
		t.Errorf("a query with a space: %v; want a permanent error, not attempted", err)
	}
	if got := heads(); len(got) != 0 {
		t.Fatalf("the server received %q; want nothing", got)
	}

	l = deadletter.Letter{ID: "key", Queue: "q", Key: "k-letter",
		Payload: []byte(`{"method":"POST","url":"http://` + addr + `/charges","header":{"idempotency-key":["k-other"]},"body":"e30="}`)}
	if err := h(context.Background(), l); err != nil {
		t.Fatal(err)
	}
	got := heads()
	if len(got) != 1 {
		t.Fatalf("the server received %q, want one request", got)
	}
	var keys []string
	for line := range strings.SplitSeq(got[0], "\r\n") {
		if name, v, ok := strings.Cut(line, ":"); ok && strings.EqualFold(name, "Idempotency-Key") {
			keys = append(keys, strings.TrimSpace(v))
		}
	}
	if len(keys) != 1 || keys[0] != "k-letter" {
		t.Fatalf("the redrive carried the keys %q; want one, the letter's (k-letter)\n%s", keys, got[0])
	}
}

// TestEncodeRefusesSpaceInQuery: a request whose URL's query holds a space
// (net/http writes it into the request line as it is) is refused at
// capture, saying why, rather than kept as a letter no redrive can send.
func TestEncodeRefusesSpaceInQuery(t *testing.T) {
	req, err := http.NewRequest(http.MethodGet, "http://h/?a b", nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := httpletter.Encode(req); err == nil || !strings.Contains(err.Error(), "space") {
		t.Fatalf("Encode of a query with a space: %v, want it refused, naming the space", err)
	}
}
