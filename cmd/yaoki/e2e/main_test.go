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
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
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

// fastRetries make yaoki's backoff waits 1 ms, so that tests run quickly;
// a server's Retry-After is still honoured. (curl's own retry waits are
// at least a second, so the comparisons with curl that retry use --retry 1.)
var fastRetries = []string{"--base", "1ms", "--throttle-base", "1ms"}

// server is a running program: yaoki flaky, proxy or another subcommand,
// the proxy tests' upstream, a Pushgateway.
type server struct {
	url  string
	cmd  *exec.Cmd
	mu   sync.Mutex
	log  []string // its stderr lines so far
	done chan struct{}
}

// startFlaky starts `yaoki flaky args...` and returns once it printed its
// URL. The server is stopped (SIGINT) at the end of the test.
func startFlaky(t *testing.T, args ...string) *server {
	t.Helper()
	return serve(t, append([]string{"flaky"}, args...)...)
}

// serve starts `yaoki args...`, a command that serves on a loopback port
// and prints its URL first, and returns once it did; the rest of its
// stdout is discarded. It is stopped (SIGINT) at the end of the test.
func serve(t *testing.T, args ...string) *server {
	t.Helper()
	return serveEnv(t, nil, args...)
}

// serveEnv is serve with env added to the environment.
func serveEnv(t *testing.T, env []string, args ...string) *server {
	t.Helper()
	s, url, rest := startPrinting(t, env, yaoki, args...)
	go io.Copy(io.Discard, rest)
	s.url = url
	t.Cleanup(s.stop)
	return s
}

// startPrinting starts the program at path with args (and env added to the
// environment) as start does, and returns once it printed its first line
// on stdout: that line without its newline, and the rest of stdout for
// the caller to read.
func startPrinting(t *testing.T, env []string, path string, args ...string) (*server, string, *bufio.Reader) {
	t.Helper()
	c := exec.Command(path, args...)
	if env != nil {
		c.Env = append(os.Environ(), env...)
	}
	stdout, err := c.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	s := start(t, c)
	rd := bufio.NewReader(stdout)
	line, err := rd.ReadString('\n')
	if err != nil {
		s.kill()
		t.Fatalf("%s %q printed no line on stdout: %v\n%s", filepath.Base(path), args, err, strings.Join(s.lines(), "\n"))
	}
	return s, strings.TrimSpace(line), rd
}

// startYaoki starts yaoki with args in the background, its stdout
// discarded; it is stopped at the end of the test if still running.
func startYaoki(t *testing.T, args ...string) *server {
	t.Helper()
	s := startProgram(t, yaoki, args...)
	t.Cleanup(s.stop)
	return s
}

// startProgram starts the program at path with args as start does, its
// stdout discarded.
func startProgram(t *testing.T, path string, args ...string) *server {
	t.Helper()
	c := exec.Command(path, args...)
	c.Stdout = io.Discard
	return start(t, c)
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

// stop ends the process with SIGINT, as Ctrl-C does, and waits for it and
// its log.
func (s *server) stop() { s.end(os.Interrupt) }

// kill ends the process with SIGKILL: no answer in progress is finished.
func (s *server) kill() { s.end(os.Kill) }

func (s *server) end(sig os.Signal) {
	if s.cmd.ProcessState == nil {
		_ = s.cmd.Process.Signal(sig)
		<-s.done
		_ = s.cmd.Wait()
	}
}

// wait waits for the process to end and returns its exit code.
func (s *server) wait(t *testing.T) int {
	t.Helper()
	<-s.done
	err := s.cmd.Wait()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return 0
}

// lines returns the server's stderr lines so far.
func (s *server) lines() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.log)
}

// waitLine waits (polling, at most 10 s: the log reaches us through a
// pipe) for a line of the log that holds sub, and returns it.
func (s *server) waitLine(t *testing.T, sub string) string {
	t.Helper()
	var line string
	if !poll(10*time.Second, 5*time.Millisecond, func() bool {
		lines := s.lines()
		i := slices.IndexFunc(lines, func(l string) bool { return strings.Contains(l, sub) })
		if i >= 0 {
			line = lines[i]
		}
		return i >= 0
	}) {
		t.Fatalf("no %q on stderr after 10 s:\n%s", sub, strings.Join(s.lines(), "\n"))
	}
	return line
}

// metricsURL waits for the "metrics on URL" line of a log.
func (s *server) metricsURL(t *testing.T) string {
	t.Helper()
	_, url, _ := strings.Cut(s.waitLine(t, ": metrics on "), ": metrics on ")
	return url
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
	var r []string
	poll(5*time.Second, 5*time.Millisecond, func() bool {
		r = s.requests()
		return len(r) >= n
	})
	return r
}

// poll calls done every so often until it returns true, for at most
// within, and reports whether it did. The tests talk to real processes,
// whose state reaches them through pipes and sockets: where they wait for
// it, they poll.
func poll(within, every time.Duration, done func() bool) bool {
	deadline := time.Now().Add(within)
	for !done() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(every)
	}
	return true
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

// freePort returns a loopback address whose port was free a moment ago.
func freePort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// needProgram returns the path of the program name, or skips the test
// when it is not installed.
func needProgram(t *testing.T, name string) string {
	t.Helper()
	path, err := exec.LookPath(name)
	if err != nil {
		t.Skipf("%s is not installed", name)
	}
	return path
}

// wantStderr reports each of wants that r's stderr lacks.
func (r result) wantStderr(t *testing.T, wants ...string) {
	t.Helper()
	for _, want := range wants {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, r.stderr)
		}
	}
}
