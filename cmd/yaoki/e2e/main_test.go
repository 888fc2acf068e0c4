// Package e2e tests the yaoki command as a user runs it: TestMain builds
// the binary once into a temporary directory, and every test runs it as a
// separate process, talking to it only through its arguments, standard
// streams, exit code and (for flaky) a loopback port.
package e2e

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// yaoki is the path of the binary built by TestMain.
var yaoki string

func TestMain(m *testing.M) {
	if os.Getenv(upstreamEnv) != "" {
		os.Exit(serveUpstream())
	}
	dir, err := os.MkdirTemp("", "yaoki-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	yaoki = filepath.Join(dir, "yaoki")
	build := exec.Command("go", "build", "-o", yaoki, "..")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "e2e: building yaoki:", err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// result is a finished run of the binary.
type result struct {
	code           int
	stdout, stderr string
}

// run runs yaoki with args (and env added to the environment) and waits
// for it, at most 60 s.
func run(t *testing.T, env []string, args ...string) result {
	t.Helper()
	return runProgram(t, yaoki, env, args...)
}

// runProgram runs the program at path as run runs yaoki.
func runProgram(t *testing.T, path string, env []string, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c := exec.CommandContext(ctx, path, args...)
	c.Env = append(os.Environ(), env...)
	var out, errb bytes.Buffer
	c.Stdout, c.Stderr = &out, &errb
	err := c.Run()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("running %s %v: %v", path, args, err)
	}
	return result{code: code, stdout: out.String(), stderr: errb.String()}
}

// server is a running `yaoki flaky`.
type server struct {
	url  string
	cmd  *exec.Cmd
	mu   sync.Mutex
	log  []string
	done chan struct{}
}

// startFlaky starts `yaoki flaky args...` and returns once it printed its
// URL. The server is stopped (SIGTERM) at the end of the test.
func startFlaky(t *testing.T, args ...string) *server {
	t.Helper()
	c := exec.Command(yaoki, append([]string{"flaky"}, args...)...)
	stdout, err := c.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	s := start(t, c)
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		c.Process.Kill()
		c.Wait()
		t.Fatalf("flaky printed no URL: %v", err)
	}
	go io.Copy(io.Discard, stdout)
	s.url = strings.TrimSpace(line)
	t.Cleanup(func() { s.stop() })
	return s
}

// start starts c, collecting its stderr lines into the returned server's
// log until it exits.
func start(t *testing.T, c *exec.Cmd) *server {
	t.Helper()
	stderr, err := c.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	s := &server{cmd: c, done: make(chan struct{})}
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			s.mu.Lock()
			s.log = append(s.log, sc.Text())
			s.mu.Unlock()
		}
		close(s.done)
	}()
	return s
}

// stop ends the server and waits for it and its log.
func (s *server) stop() {
	if s.cmd.ProcessState == nil {
		_ = s.cmd.Process.Signal(os.Interrupt)
		<-s.done
		_ = s.cmd.Wait()
	}
}

// requests returns the request lines of the log so far.
func (s *server) requests() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, l := range s.log {
		if strings.HasPrefix(l, "flaky: req=") {
			out = append(out, l)
		}
	}
	return out
}

// waitRequests waits (polling, at most 5 s) until the log has n requests:
// the server logs a request before it answers, but the log reaches us
// through a pipe.
func (s *server) waitRequests(t *testing.T, n int) []string {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		r := s.requests()
		if len(r) >= n || time.Now().After(deadline) {
			return r
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// field returns the value of name=value in a log line.
func field(line, name string) string {
	for _, f := range strings.Fields(line) {
		if v, ok := strings.CutPrefix(f, name+"="); ok {
			return v
		}
	}
	return ""
}
