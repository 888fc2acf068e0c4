package curl

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
)

func TestRawHeaders(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		status   int
		want     string // "" for nil
	}{
		{"CRLF", "HTTP/1.1 200 OK\r\nA: 1\r\n\r\nbody", 200, "HTTP/1.1 200 OK\r\nA: 1\r\n\r\n"},
		{"LF", "HTTP/1.1 200 OK\nA: 1\n\nbody", 200, "HTTP/1.1 200 OK\nA: 1\n\n"},
		{"1xx first", "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\nHTTP/1.1 204 No Content\r\n\r\n", 204,
			"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\nHTTP/1.1 204 No Content\r\n\r\n"},
		{"101 is final", "HTTP/1.1 101 Switching Protocols\r\n\r\n", 101, "HTTP/1.1 101 Switching Protocols\r\n\r\n"},
		{"another status", "HTTP/1.1 200 OK\r\n\r\n", 404, ""},
		{"not HTTP", "\x16\x03\x01\x00", 200, ""},
		{"cut short", "HTTP/1.1 200 OK\r\nA: 1\r\n", 200, ""},
		{"no reason phrase", "HTTP/1.1 200\r\n\r\n", 200, "HTTP/1.1 200\r\n\r\n"},
		{"empty", "", 200, ""},
	} {
		got := rawHeaders([]byte(tc.in), tc.status)
		if string(got) != tc.want || (got == nil) != (tc.want == "") {
			t.Errorf("%s: rawHeaders(%q, %d) = %q; want %q", tc.name, tc.in, tc.status, got, tc.want)
		}
	}
}

// rawHeaders returns nil or a prefix of what it is given that starts with
// a status line and ends with a line end.
func FuzzRawHeaders(f *testing.F) {
	f.Add([]byte("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nA: 1\r\n\r\nbody"), 200)
	f.Add([]byte("HTTP/1.0 302 Found\nLocation: /x\n\n"), 302)
	f.Fuzz(func(t *testing.T, b []byte, status int) {
		got := rawHeaders(b, status)
		if got == nil {
			return
		}
		if !bytes.HasPrefix(b, got) || !bytes.HasPrefix(got, []byte("HTTP/1.")) || !bytes.HasSuffix(got, []byte("\n")) {
			t.Fatalf("rawHeaders(%q, %d) = %q: want a prefix that starts with a status line and ends with a line end", b, status, got)
		}
	})
}

// wireServer answers each request on a loopback port with the next of
// answers, written as is, keeping the connection open between them.
func wireServer(t *testing.T, answers ...string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	next := 0
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer c.Close()
				rd := bufio.NewReader(c)
				for {
					req, err := http.ReadRequest(rd)
					if err != nil {
						return
					}
					io.Copy(io.Discard, req.Body)
					mu.Lock()
					a := answers[min(next, len(answers)-1)]
					next++
					mu.Unlock()
					if _, err := io.WriteString(c, a); err != nil {
						return
					}
				}
			}()
		}
	}()
	t.Cleanup(func() { ln.Close(); wg.Wait() })
	return "http://" + ln.Addr().String()
}

// With -iL over one kept-alive connection, each hop's headers are written
// as they came, an answer without body (after which net/http reads the
// connection at once for the next answer) included.
func TestIncludeHeadersAsTheyCame(t *testing.T) {
	hop := "HTTP/1.1 302 Found\r\nlocation: /b\r\nContent-Length: 0\r\n\r\n"
	last := "HTTP/1.1 200 OK\r\nX-RateLimit-Remaining: 9\r\nETag: \"v1\"\r\nContent-Length: 3\r\n\r\nabc"
	url := wireServer(t, hop, hop, last)
	cmd := NewCommand()
	var out, errOut bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&errOut)
	cmd.SetIn(strings.NewReader(""))
	cmd.SetArgs([]string{"-sS", "-iL", "--retry", "0", "-w", "|%{size_header}", url + "/a"})
	if err := cmd.ExecuteContext(context.Background()); err != nil {
		t.Fatalf("%v: %s", err, errOut.String())
	}
	want := hop + hop + last + fmt.Sprintf("|%d", 2*len(hop)+len(last)-len("abc"))
	if out.String() != want {
		t.Errorf("stdout:\n%q\nwant\n%q", out.String(), want)
	}
}
