// Package redistest starts a real redis-server for tests: Debian's binary,
// on a free loopback port, in a temporary directory, without persistence,
// stopped when the test ends. Tests skip with a message when the binary is
// not installed (.ci/run installs it).
package redistest

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/yaoki-go/yaoki/internal/childproc"
)

// Server is a running redis-server.
type Server struct {
	Addr string // 127.0.0.1:port
	cmd  *exec.Cmd
	out  *bytes.Buffer
}

// Binary returns the path of redis-server, or "" when it is not installed.
func Binary() string {
	if p, err := exec.LookPath("redis-server"); err == nil {
		return p
	}
	for _, p := range []string{"/usr/bin/redis-server", "/usr/local/bin/redis-server"} {
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	return ""
}

// Start starts a server for tb, or skips tb when redis-server is missing.
// The server is stopped, and its directory removed, when tb ends.
func Start(tb testing.TB) *Server {
	tb.Helper()
	bin := Binary()
	if bin == "" {
		tb.Skip("redistest: redis-server is not installed (apt-get install redis-server); skipping the Redis integration test")
	}
	var lastErr error
	for range 5 { // a free port may be taken between choosing and binding it
		s, err := start(tb, bin, nil)
		if err == nil {
			return s
		}
		lastErr = err
	}
	tb.Fatalf("redistest: could not start redis-server: %v", lastErr)
	return nil
}

func start(tb testing.TB, bin string, extra func(dir string) []string) (*Server, error) {
	port, err := childproc.FreePort()
	if err != nil {
		return nil, err
	}
	dir := tb.TempDir()
	out := &bytes.Buffer{}
	cmd := exec.Command(bin, "--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
		"--dir", dir, "--daemonize", "no", "--protected-mode", "yes", "--loglevel", "warning")
	if extra != nil {
		cmd.Args = append(cmd.Args, extra(dir)...)
	}
	cmd.Stdout, cmd.Stderr = out, out
	childproc.DieWithParent(cmd)
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	s := &Server{Addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), cmd: cmd, out: out}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	// Wait until it answers PING, or exits (port taken), for at most 10 s.
	c := goredis.NewClient(&goredis.Options{Addr: s.Addr, MaxRetries: -1, DialTimeout: time.Second})
	defer c.Close()
	deadline := time.Now().Add(10 * time.Second)
	for {
		select {
		case err := <-exited:
			return nil, fmt.Errorf("redis-server exited (%v): %s", err, out)
		default:
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		err := c.Ping(ctx).Err()
		cancel()
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			_ = cmd.Process.Kill()
			<-exited
			return nil, fmt.Errorf("redis-server on %s did not answer within 10 s: %v: %s", s.Addr, err, out)
		}
		time.Sleep(10 * time.Millisecond)
	}
	tb.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-exited
	})
	return s, nil
}

// Client returns a client of the server, closed when tb ends.
func (s *Server) Client(tb testing.TB) *goredis.Client {
	c := goredis.NewClient(&goredis.Options{Addr: s.Addr, PoolSize: 64})
	tb.Cleanup(func() { _ = c.Close() })
	return c
}
