package event_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/yaoki-go/yaoki/event"
)

type codeErr struct{ code int }

// namedErr names its own error type.
type namedErr struct{ name string }

func (e namedErr) Error() string     { return "named " + e.name }
func (e namedErr) ErrorType() string { return e.name }

func (e *codeErr) Error() string { return "code " + strconv.Itoa(e.code) }

func TestErrorType(t *testing.T) {
	refused := &url.Error{Op: "Get", URL: "http://127.0.0.1:1/", Err: &net.OpError{Op: "dial", Net: "tcp",
		Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}}
	reset := &net.OpError{Op: "read", Net: "tcp", Err: os.NewSyscallError("read", syscall.ECONNRESET)}
	for _, tc := range []struct {
		name   string
		err    error
		status int
		want   string
	}{
		{"nothing went wrong", nil, 0, ""},
		{"a 200 is no error", nil, 200, ""},
		{"a 304 is no error", nil, 304, ""},
		{"a 404 names its status", nil, 404, "404"},
		{"a 429 names its status even with an error", errors.New("x"), 429, "429"},
		{"first and last codes", nil, 400, "400"},
		{"last code", nil, 599, "599"},
		{"a status out of range is no status", nil, 600, ""},
		{"caller cancelled", fmt.Errorf("call: %w", context.Canceled), 0, event.ErrorCancelled},
		{"deadline", context.DeadlineExceeded, 0, event.ErrorTimeout},
		{"Timeout() true", fmt.Errorf("wrapped: %w", os.ErrDeadlineExceeded), 0, event.ErrorTimeout},
		{"refused, deep in url.Error", refused, 0, event.ErrorConnectionRefused},
		{"reset", reset, 0, event.ErrorConnectionReset},
		{"broken pipe", syscall.EPIPE, 0, event.ErrorConnectionReset},
		{"unexpected EOF", &url.Error{Op: "Get", URL: "http://x/", Err: io.ErrUnexpectedEOF}, 0, event.ErrorEOF},
		{"EOF", io.EOF, 0, event.ErrorEOF},
		{"errors.New says nothing", errors.New("boom"), 0, event.ErrorOther},
		{"fmt.Errorf says nothing", fmt.Errorf("boom %d", 1), 0, event.ErrorOther},
		{"a typed error names its type", fmt.Errorf("ctx: %w", &codeErr{7}), 0, "*event_test.codeErr"},
		{"a DNS error names its type", &net.DNSError{Err: "no such host", Name: "x.invalid", IsNotFound: true}, 0, "*net.DNSError"},
		{"joined: the first branch", errors.Join(&codeErr{1}, context.Canceled), 0, "*event_test.codeErr"},
		{"joined: a nil first branch is skipped", errors.Join(nil, io.EOF), 0, event.ErrorEOF},
		{"another errno names its type", syscall.ENOENT, 0, "syscall.Errno"},
		{"an error names itself", fmt.Errorf("run: %w", namedErr{"exit_3"}), 0, "exit_3"},
		{"an empty name is no name", namedErr{""}, 0, "event_test.namedErr"},
		{"the first name wins over a deadline beside it", errors.Join(namedErr{"x"}, context.DeadlineExceeded), 0, "x"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := event.Event{Err: tc.err, Status: tc.status}.ErrorType()
			if got != tc.want {
				t.Errorf("ErrorType() = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestErrorTypeEveryStatus(t *testing.T) {
	for code := 400; code <= 599; code++ {
		if got := (event.Event{Status: code}).ErrorType(); got != strconv.Itoa(code) {
			t.Fatalf("status %d: ErrorType() = %q", code, got)
		}
	}
}

func TestErrorTypeAllocatesNothing(t *testing.T) {
	refused := &url.Error{Op: "Get", URL: "http://127.0.0.1:1/", Err: &net.OpError{Op: "dial", Net: "tcp",
		Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}}
	for _, e := range []event.Event{{Status: 503}, {Err: refused}, {Err: &codeErr{1}}, {Err: errors.New("x")}} {
		if n := testing.AllocsPerRun(100, func() { _ = e.ErrorType() }); n != 0 {
			t.Errorf("ErrorType of %v allocates %v times, want 0", e.Err, n)
		}
	}
}

func TestStatusClass(t *testing.T) {
	for _, tc := range []struct {
		status int
		want   string
	}{{0, ""}, {99, ""}, {100, "1xx"}, {204, "2xx"}, {301, "3xx"}, {429, "4xx"}, {503, "5xx"}, {600, ""}, {-1, ""}} {
		if got := (event.Event{Status: tc.status}).StatusClass(); got != tc.want {
			t.Errorf("status %d: StatusClass() = %q, want %q", tc.status, got, tc.want)
		}
	}
}

func TestServer(t *testing.T) {
	for _, tc := range []struct {
		host, addr string
		port       int
	}{
		{"", "", 0},
		{"example.com", "example.com", 0},
		{"example.com:8443", "example.com", 8443},
		{"127.0.0.1:80", "127.0.0.1", 80},
		{"[::1]:8080", "::1", 8080},
		{"[::1]", "::1", 0},
		{"::1", "::1", 0},
		{"fe80::1:2", "fe80::1:2", 0},
		{"example.com:", "example.com", 0},
		{"example.com:http", "example.com", 0},
		{"example.com:70000", "example.com", 0},
		{"example.com:123456", "example.com", 0},
		{"[::1", "[::1", 0},
		{"[::1]x", "[::1]x", 0},
	} {
		addr, port := event.Event{Host: tc.host}.Server()
		if addr != tc.addr || port != tc.port {
			t.Errorf("Server() of %q = (%q, %d), want (%q, %d)", tc.host, addr, port, tc.addr, tc.port)
		}
	}
}

func FuzzServer(f *testing.F) {
	for _, s := range []string{"example.com:8443", "[::1]:80", "::1", "[", "a:b:c", ":1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, host string) {
		addr, port := event.Event{Host: host}.Server()
		if port < 0 || port > 65535 {
			t.Fatalf("Server() of %q: port %d out of range", host, port)
		}
		if !strings.Contains(host, addr) {
			t.Fatalf("Server() of %q = (%q, %d): the address is not part of the host", host, addr, port)
		}
		if port > 0 {
			h, p, err := net.SplitHostPort(host)
			if err != nil || h != addr || p != strconv.Itoa(port) && strings.TrimLeft(p, "0") != strconv.Itoa(port) {
				t.Fatalf("Server() of %q = (%q, %d); net.SplitHostPort says (%q, %q, %v)", host, addr, port, h, p, err)
			}
		}
	})
}

func TestKnownMethod(t *testing.T) {
	for m, want := range map[string]string{"": "", "GET": "GET", "QUERY": "QUERY", "PATCH": "PATCH", "get": event.MethodOther, "PROPFIND": event.MethodOther} {
		if got := (event.Event{Method: m}).KnownMethod(); got != want {
			t.Errorf("KnownMethod(%q) = %q, want %q", m, got, want)
		}
	}
}
