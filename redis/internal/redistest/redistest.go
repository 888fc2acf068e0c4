// Package redistest starts a real redis-server for tests: Debian's binary,
// on a free loopback port, in a temporary directory, without persistence,
// stopped when the test ends. Tests skip with a message when the binary is
// not installed (.ci/run installs it).
package redistest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/yaoki-go/yaoki/internal/childproc"
)

// Server is a running redis-server. Kill and Resume must not run
// concurrently with each other.
type Server struct {
	Addr string // 127.0.0.1:port
	args []string
	cmd  *exec.Cmd
	out  *bytes.Buffer
	done chan error // the process's exit
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
	return startOrSkip(tb, "", nil)
}

// StartDurable starts a server as Start does, with the append-only file
// on and written at every command (appendfsync always): what it
// acknowledged survives Kill and Resume.
func StartDurable(tb testing.TB) *Server {
	tb.Helper()
	return startOrSkip(tb, "", durable)
}

// durable is the append-only file on, written at every command.
func durable(string) []string { return []string{"--appendonly", "yes", "--appendfsync", "always"} }

// StartAppendOnly starts a server as Start does, with the append-only file
// on and fsynced as fsync says ("always", "everysec" or "no", Redis's
// appendfsync). Redis writes the file before it answers (unless a slow
// disk makes it postpone the write under everysec): what it acknowledged
// survives Kill and Resume whatever fsync is; fsync decides what a crash
// of the machine would lose, which a test cannot cause.
func StartAppendOnly(tb testing.TB, fsync string) *Server {
	tb.Helper()
	return startOrSkip(tb, " with appendfsync "+fsync, func(string) []string {
		return []string{"--appendonly", "yes", "--appendfsync", fsync}
	})
}

// startOrSkip starts a server in a directory of tb's, with the extra
// arguments (mode says which, for an error), stopped when tb ends, or skips
// tb when redis-server is missing.
func startOrSkip(tb testing.TB, mode string, extra func(dir string) []string) *Server {
	tb.Helper()
	if Binary() == "" {
		tb.Skip("redistest: redis-server is not installed (apt-get install redis-server); skipping the Redis integration test")
	}
	s, err := open(tb.TempDir(), mode, extra)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(s.Kill)
	return s
}

// Open starts a server in dir outside a test: with durableAOF set, the
// append-only file is on and written at every command, as StartDurable's.
// The caller stops the server with Kill and removes dir.
func Open(dir string, durableAOF bool) (*Server, error) {
	if durableAOF {
		return open(dir, "", durable)
	}
	return open(dir, "", nil)
}

// open starts a server in dir with the extra arguments, trying five free
// ports before it gives up.
func open(dir, mode string, extra func(dir string) []string) (*Server, error) {
	bin := Binary()
	if bin == "" {
		return nil, errors.New("redistest: redis-server is not installed (apt-get install redis-server)")
	}
	var args []string
	if extra != nil {
		args = extra(dir)
	}
	var lastErr error
	for range 5 { // a free port may be taken between choosing and binding it
		s, err := start(bin, dir, args)
		if err == nil {
			return s, nil
		}
		lastErr = err
	}
	return nil, fmt.Errorf("redistest: could not start redis-server%s in %s: %w", mode, dir, lastErr)
}

func start(bin, dir string, extra []string) (*Server, error) {
	port, err := childproc.FreePort()
	if err != nil {
		return nil, err
	}
	args := []string{bin, "--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
		"--dir", dir, "--daemonize", "no", "--protected-mode", "yes", "--loglevel", "warning",
		"--repl-diskless-sync-delay", "0"} // a replica (StartReplica) syncs at once, not after 5 s
	args = append(args, extra...)
	s := &Server{Addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), args: args}
	if err := s.run(); err != nil {
		return nil, err
	}
	return s, nil
}

// run starts the process and waits until it answers PING, or exits (port
// taken), for at most 10 s.
func (s *Server) run() error {
	s.out = &bytes.Buffer{}
	cmd := exec.Command(s.args[0], s.args[1:]...)
	cmd.Stdout, cmd.Stderr = s.out, s.out
	childproc.DieWithParent(cmd)
	if err := cmd.Start(); err != nil {
		return err
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	c := goredis.NewClient(&goredis.Options{Addr: s.Addr, MaxRetries: -1, DialTimeout: time.Second})
	defer c.Close()
	deadline := time.Now().Add(10 * time.Second)
	for {
		select {
		case err := <-done:
			return fmt.Errorf("redis-server exited (%v): %s", err, s.out)
		default:
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		err := c.Ping(ctx).Err()
		cancel()
		if err == nil {
			s.cmd, s.done = cmd, done
			return nil
		}
		if time.Now().After(deadline) {
			_ = cmd.Process.Kill()
			<-done
			return fmt.Errorf("redis-server on %s did not answer within 10 s: %v: %s", s.Addr, err, s.out)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Kill kills the server (SIGKILL: a crash) and waits until it is gone. It
// does nothing when the server is not running.
func (s *Server) Kill() {
	if s.cmd == nil {
		return
	}
	_ = s.cmd.Process.Kill()
	<-s.done
	s.cmd = nil
}

// Freeze stops the server's process (SIGSTOP) without ending it: its
// connections stay open and its peers see it as connected, but it reads,
// runs and answers nothing until Thaw. A frozen replica is one that its
// primary still counts as connected (until repl-timeout, 60 s) but that
// acknowledges no write. Kill ends a frozen server too.
func (s *Server) Freeze(tb testing.TB) {
	tb.Helper()
	if s.cmd == nil {
		tb.Fatalf("redistest: freeze: the server on %s is not running", s.Addr)
	}
	if err := s.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		tb.Fatalf("redistest: freeze %s: %v", s.Addr, err)
	}
}

// Thaw lets a frozen server run again (SIGCONT).
func (s *Server) Thaw(tb testing.TB) {
	tb.Helper()
	if s.cmd == nil {
		return
	}
	if err := s.cmd.Process.Signal(syscall.SIGCONT); err != nil {
		tb.Fatalf("redistest: thaw %s: %v", s.Addr, err)
	}
}

// Resume starts a killed server again, on the same port and directory: a
// server started by StartDurable comes back with what it acknowledged.
func (s *Server) Resume() error {
	if s.cmd != nil {
		return fmt.Errorf("redistest: resume: the server on %s is running", s.Addr)
	}
	return s.run()
}

// Client returns a client of the server, closed when tb ends.
func (s *Server) Client(tb testing.TB) *goredis.Client {
	c := goredis.NewClient(&goredis.Options{Addr: s.Addr, PoolSize: 64})
	tb.Cleanup(func() { _ = c.Close() })
	return c
}
