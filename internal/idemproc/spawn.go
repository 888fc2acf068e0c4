package idemproc

import (
	"bufio"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/yaoki-go/yaoki/internal/childproc"
)

// Spawn runs the test binary again with env added to its environment (the
// variables by which the test's TestMain recognises a child and configures
// it), waits until the child prints "listening URL" as its first line of
// output, and kills it when t ends (if Kill did not before). Start uses it
// for the middleware's child; a test package that serves something else
// from its TestMain (postgres.Atomic's fault tests) uses it directly, with
// RunChild, Serve and Pause on the child's side. The lines the child
// prints afterwards are read by WaitLine.
func Spawn(t *testing.T, env ...string) *Child {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "-test.run=^$")
	cmd.Env = append(os.Environ(), env...)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	childproc.DieWithParent(cmd)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	c := &Child{Pid: cmd.Process.Pid, cmd: cmd, done: make(chan struct{}), lines: make(chan string, 64)}
	first := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		if sc.Scan() {
			first <- sc.Text()
		}
		close(first)
		for sc.Scan() {
			select {
			case c.lines <- sc.Text():
			default: // nobody waits for so many lines: drop them
			}
		}
		_, _ = io.Copy(io.Discard, out)
		_ = cmd.Wait()
		close(c.done)
	}()
	t.Cleanup(c.Kill)
	select {
	case line, ok := <-first:
		if !ok || !strings.HasPrefix(line, "listening ") {
			t.Fatalf("idemproc: child %d did not start (first line %q)", c.Pid, line)
		}
		c.URL = strings.TrimPrefix(line, "listening ")
	case <-time.After(30 * time.Second):
		t.Fatalf("idemproc: child %d did not listen within 30 s", c.Pid)
	}
	return c
}

// WaitLine waits until the child prints line (skipping the lines before it),
// for up to 30 s, and fails t if the child exits or the time passes first.
func (c *Child) WaitLine(t *testing.T, line string) {
	t.Helper()
	timeout := time.After(30 * time.Second)
	for {
		select {
		case l := <-c.lines:
			if l == line {
				return
			}
		case <-c.done:
			for len(c.lines) > 0 { // printed before it exited
				if <-c.lines == line {
					return
				}
			}
			t.Fatalf("idemproc: child %d exited before printing %q", c.Pid, line)
		case <-timeout:
			t.Fatalf("idemproc: child %d did not print %q within 30 s", c.Pid, line)
		}
	}
}

// WaitFor polls cond every 10 ms until it holds, for up to 30 s (then it
// fails t, naming what it waited for): for conditions that a child process
// or a server brings about in its own time.
func WaitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("idemproc: waited 30 s for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
