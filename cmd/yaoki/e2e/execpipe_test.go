package e2e

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Fault: the reader of yaoki exec's output goes away (yaoki exec -- CMD |
// head -1, head having read its line): the command dies of SIGPIPE. A retry
// would write to the same closed pipe and run the command's work again for
// nothing, so it is not retried by default: one attempt, exit 141 (128+13),
// as the command's. --retry-on 141 still retries it.
func TestExecReaderGoneNotRetried(t *testing.T) {
	counter := filepath.Join(t.TempDir(), "runs")
	// Each run counts itself, then writes to stdout, whose reader is gone.
	script := `echo x >> "$0"; exec seq 100000`
	for _, tc := range []struct {
		args []string
		runs int
	}{
		{nil, 1},
		{[]string{"--retry-on", "141"}, 3},
	} {
		os.Remove(counter)
		r, w, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		r.Close() // the reader is gone before the command writes
		args := append(append([]string{"exec", "--max-attempts", "3", "--base", "0"}, tc.args...), "--", "sh", "-c", script, counter)
		c := exec.Command(yaoki, args...)
		var errb strings.Builder
		c.Stdout, c.Stderr = w, &errb
		err = c.Run()
		w.Close()
		b, _ := os.ReadFile(counter)
		runs := strings.Count(string(b), "x")
		code := c.ProcessState.ExitCode()
		if code != 141 || runs != tc.runs {
			t.Errorf("exec %q with its reader gone: exit %d (%v) after %d runs; want 141 after %d\n%s", tc.args, code, err, runs, tc.runs, errb.String())
		}
	}
}

// Fault: an attempt fails and leaves a process that ignores SIGTERM (and
// SIGINT, as a background job of a script does), with --grace 1h; Ctrl-C
// comes while yaoki waits for it to end before the next attempt. yaoki
// stops at once: the leftover gets SIGKILL now, not after the hour, and
// yaoki exits 130 without another attempt. The shell ignores SIGTERM and
// SIGINT before it starts the leftover, which inherits that (set inside
// the leftover, the group's SIGTERM could come first and end it); the
// leftover says "reaped" once kill -0 no longer finds the shell, and only
// then is the signal sent (sent while the shell runs, it would be
// forwarded to it, and the shell's own exit code would stand).
func TestExecSignalDuringLeftoverGrace(t *testing.T) {
	const script = `trap '' TERM INT; (while kill -0 $$ 2>/dev/null; do :; done; echo reaped; exec sleep 300) </dev/null 2>/dev/null & echo $!; exit 1`
	c := exec.Command(yaoki, "exec", "--base", "0", "--grace", "1h", "--max-attempts", "3", "--", "sh", "-c", script)
	c.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	stdout, err := c.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	s := start(t, c)
	t.Cleanup(s.kill)
	out := bufio.NewReader(stdout)
	line, err := out.ReadString('\n')
	pid := strings.TrimSpace(line)
	if err != nil || pid == "" {
		t.Fatalf("the command printed no PID: %q, %v", line, err)
	}
	t.Cleanup(func() {
		if n, err := strconv.Atoi(pid); err == nil && !gone(pid) {
			syscall.Kill(n, syscall.SIGKILL)
		}
	})
	if line, err := out.ReadString('\n'); err != nil || strings.TrimSpace(line) != "reaped" {
		t.Fatalf("the leftover did not say that the attempt's shell was reaped: %q, %v\n%s", line, err, strings.Join(s.lines(), "\n"))
	}
	_ = c.Process.Signal(syscall.SIGINT)
	exited := make(chan int, 1)
	go func() { exited <- s.wait(t) }()
	select {
	case code := <-exited:
		log := strings.Join(s.lines(), "\n")
		if code != 130 || strings.Contains(log, "attempt 2") {
			t.Errorf("exit %d; want 130 and no second attempt\n%s", code, log)
		}
	case <-time.After(20 * time.Second):
		t.Fatalf("yaoki still runs 20 s after SIGINT: it waits --grace 1h for the leftover\n%s", strings.Join(s.lines(), "\n"))
	}
	if !gone(pid) {
		t.Errorf("the leftover (PID %s) still runs after yaoki exited", pid)
	}
}
