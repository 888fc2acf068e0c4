package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// failTwice writes a script that fails (exit 3) on its first two runs and
// succeeds after, counting runs in a file.
func failTwice(t *testing.T, code int) (script, counter string) {
	dir := t.TempDir()
	counter = filepath.Join(dir, "runs")
	script = filepath.Join(dir, "flaky.sh")
	body := `#!/bin/sh
n=$(cat "` + counter + `" 2>/dev/null || echo 0)
n=$((n+1))
echo $n > "` + counter + `"
echo "run $n"
[ $n -ge 3 ] && exit 0
exit ` + string(rune('0'+code)) + "\n"
	if err := os.WriteFile(script, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	return script, counter
}

func runs(t *testing.T, counter string) string {
	b, _ := os.ReadFile(counter)
	return strings.TrimSpace(string(b))
}

func TestExecRetriesUntilSuccess(t *testing.T) {
	script, counter := failTwice(t, 3)
	r := run(t, nil, "exec", "--base", "1ms", "--cap", "5ms", "--", script)
	if r.code != 0 || runs(t, counter) != "3" {
		t.Fatalf("exit %d after %s runs; want 0 after 3\n%s", r.code, runs(t, counter), r.stderr)
	}
	if r.stdout != "run 1\nrun 2\nrun 3\n" {
		t.Errorf("stdout %q: want the command's own output", r.stdout)
	}
	r.wantStderr(t, "attempt 1 of 3 failed (exit code 3); retrying in", "attempt 2 of 3 failed", "succeeded on attempt 3")
}

func TestExecGivesUpWithLastCode(t *testing.T) {
	script, counter := failTwice(t, 3)
	r := run(t, nil, "exec", "--max-attempts", "2", "--base", "0", "--", script)
	if r.code != 3 || runs(t, counter) != "2" || !strings.Contains(r.stderr, "gave up after 2 attempts") {
		t.Fatalf("exit %d after %s runs; want 3 (the command's) after 2:\n%s", r.code, runs(t, counter), r.stderr)
	}
	// A code outside --retry-on is not retried.
	script, counter = failTwice(t, 3)
	r = run(t, nil, "exec", "--retry-on", "75", "--base", "0", "--", script)
	if r.code != 3 || runs(t, counter) != "1" || !strings.Contains(r.stderr, "not retried") {
		t.Fatalf("--retry-on 75 with exit 3: exit %d after %s runs:\n%s", r.code, runs(t, counter), r.stderr)
	}
	// YAOKI_RETRY_MODE=off: one attempt.
	script, counter = failTwice(t, 3)
	r = run(t, []string{"YAOKI_RETRY_MODE=off"}, "exec", "--base", "0", "--", script)
	if r.code != 3 || runs(t, counter) != "1" {
		t.Fatalf("YAOKI_RETRY_MODE=off: exit %d after %s runs", r.code, runs(t, counter))
	}
}

func TestExecCannotRun(t *testing.T) {
	r := run(t, nil, "exec", "--base", "0", "--", "/nonexistent/command")
	if r.code != 127 || !strings.Contains(r.stderr, "cannot run /nonexistent/command") {
		t.Fatalf("exit %d, %q; want 127", r.code, r.stderr)
	}
	notExec := filepath.Join(t.TempDir(), "plain.txt")
	os.WriteFile(notExec, []byte("hello"), 0o644)
	r = run(t, nil, "exec", "--base", "0", "--", notExec)
	if r.code != 126 {
		t.Fatalf("not executable: exit %d, %q; want 126", r.code, r.stderr)
	}
	r = run(t, nil, "exec")
	if r.code != 2 || !strings.Contains(r.stderr, "exec needs a command") {
		t.Fatalf("no command: exit %d, %q; want 2", r.code, r.stderr)
	}
}

func TestExecAttemptTimeout(t *testing.T) {
	r := run(t, nil, "exec", "--attempt-timeout", "50ms", "--max-attempts", "2", "--base", "0", "--", "sleep", "10")
	if r.code != 124 || strings.Count(r.stderr, "attempt timed out") != 1 {
		t.Fatalf("exit %d; want 124 after 2 timed-out attempts:\n%s", r.code, r.stderr)
	}
}

// SIGTERM sent to yaoki reaches the command, and no attempt follows.
func TestExecForwardsSignals(t *testing.T) {
	start := time.Now()
	s, line, _ := startPrinting(t, nil, yaoki, "exec", "--max-attempts", "5", "--base", "0", "--", "sh", "-c", "echo started; exec sleep 30")
	t.Cleanup(s.kill)
	if line != "started" {
		t.Fatalf("got %q before the signal", line)
	}
	s.cmd.Process.Signal(syscall.SIGTERM)
	code := s.wait(t)
	stderr := strings.Join(s.lines(), "\n")
	if code != 128+15 {
		t.Fatalf("exit %d; want 143 (the command's, killed by the forwarded SIGTERM)\n%s", code, stderr)
	}
	if time.Since(start) > 10*time.Second || strings.Contains(stderr, "retrying") {
		t.Fatalf("a retry followed the signal:\n%s", stderr)
	}
	if !strings.Contains(stderr, "stopped by a signal") {
		t.Errorf("stderr %q: want it to say why it stopped", stderr)
	}
}
