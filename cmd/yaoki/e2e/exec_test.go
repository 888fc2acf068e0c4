package e2e

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
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
	// Not retried by default; --retry-on 127 asks for it (a program that
	// a mount or an install makes appear): three attempts, then 127.
	if strings.Contains(r.stderr, "retrying") {
		t.Errorf("a command not found was retried without --retry-on 127:\n%s", r.stderr)
	}
	r = run(t, nil, "exec", "--base", "0", "--retry-on", "127", "--", "/nonexistent/command")
	if r.code != 127 || strings.Count(r.stderr, "retrying") != 2 || !strings.Contains(r.stderr, "cannot run /nonexistent/command") {
		t.Fatalf("--retry-on 127: exit %d; want 127 after 3 attempts\n%s", r.code, r.stderr)
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

// A policy document's States.Timeout retrier retries an attempt that ran
// past TimeoutSeconds, though the command it stopped exited with a code of
// its own (143, which the policy could name as Exit.143): the timeout is
// the more specific name, as in Step Functions.
func TestExecPolicyRetriesTimeout(t *testing.T) {
	doc := filepath.Join(t.TempDir(), "policy.json")
	if err := os.WriteFile(doc, []byte(`{"Retry": [{"ErrorEquals": ["States.Timeout"], "IntervalSeconds": 0, "MaxAttempts": 1}], "TimeoutSeconds": 0.05}`), 0o600); err != nil {
		t.Fatal(err)
	}
	r := run(t, nil, "exec", "--policy", doc, "--", "sleep", "10")
	if r.code != 124 || strings.Count(r.stderr, "attempt timed out") != 1 || !strings.Contains(r.stderr, "retrying") || !strings.Contains(r.stderr, "gave up after 2 attempts") {
		t.Fatalf("exit %d; want 124 after 2 timed-out attempts, the first retried:\n%s", r.code, r.stderr)
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

// gone reports whether the process pid has ended: it is no more, or a
// zombie that its new parent has not reaped yet.
func gone(pid string) bool {
	b, err := os.ReadFile("/proc/" + pid + "/stat")
	if err != nil {
		return true
	}
	_, after, _ := strings.Cut(string(b), ") ")
	return strings.HasPrefix(after, "Z") || strings.HasPrefix(after, "X")
}

// An attempt ended by --attempt-timeout, or by a signal sent to yaoki,
// ends the processes its command started too, not only the command: none
// of them runs on beside the next attempt or after yaoki exits. yaoki runs in a session of its own, without
// a controlling terminal, as under CI or a service manager.
func TestExecEndsTheCommandsChildren(t *testing.T) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("needs /proc")
	}
	for _, tc := range []struct {
		name   string
		args   []string
		script string
		signal os.Signal // sent to yaoki once the command printed its child's PID
		code   int
	}{
		// sleep ends on the SIGTERM sent to the command's process group.
		// The timeouts leave sh the time to start and print its child's
		// PID on a loaded machine (100 ms did not, now and then).
		{"timeout", []string{"--attempt-timeout", "1s", "--max-attempts", "1"}, "sleep 300 >/dev/null 2>&1 & echo $!; wait", nil, 124},
		// Nothing ends on SIGTERM: SIGKILL after --grace.
		{"timeout, SIGTERM ignored", []string{"--attempt-timeout", "1s", "--max-attempts", "1", "--grace", "100ms"}, "trap '' TERM; sleep 300 >/dev/null 2>&1 & echo $!; wait", nil, 124},
		// The forwarded SIGTERM reaches sleep too; sh dies of it.
		{"forwarded signal", []string{"--max-attempts", "3"}, "sleep 300 >/dev/null 2>&1 & echo $!; wait", syscall.SIGTERM, 143},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := append(append([]string{"exec", "--base", "0"}, tc.args...), "--", "sh", "-c", tc.script)
			c := exec.Command(yaoki, args...)
			c.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
			stdout, err := c.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			s := start(t, c)
			t.Cleanup(s.kill)
			rd := bufio.NewReader(stdout)
			line, err := rd.ReadString('\n')
			pid := strings.TrimSpace(line)
			if err != nil || pid == "" {
				t.Fatalf("the command printed no PID: %q, %v\n%s", line, err, strings.Join(s.lines(), "\n"))
			}
			t.Cleanup(func() { // a test that fails leaves no sleep behind
				if n, err := strconv.Atoi(pid); err == nil && !gone(pid) {
					syscall.Kill(n, syscall.SIGKILL)
				}
			})
			if tc.signal != nil {
				s.cmd.Process.Signal(tc.signal)
			}
			code := s.wait(t)
			if code != tc.code {
				t.Errorf("exit %d; want %d\n%s", code, tc.code, strings.Join(s.lines(), "\n"))
			}
			// yaoki has exited: the command's child is gone with it, or
			// at most dying of the SIGKILL it was sent.
			if !poll(5*time.Second, 5*time.Millisecond, func() bool { return gone(pid) }) {
				t.Fatalf("the command's child (PID %s) still runs after yaoki exited\n%s", pid, strings.Join(s.lines(), "\n"))
			}
		})
	}
}

// Fault: an attempt fails (exit 1) and leaves a process running: a
// background child in its process group, one that left the group for a
// session of its own (setsid), a daemon made by a double fork (its parent
// gone, it is an orphan), one that ignores SIGTERM. None of them may run on
// beside the next attempt: the retry checks, through /proc, whether the
// first attempt's leftover still runs. With one attempt, none runs on after
// yaoki exits. yaoki runs without a controlling terminal, as under CI.
func TestExecFailedAttemptLeavesNothingRunning(t *testing.T) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("needs /proc")
	}
	if _, err := exec.LookPath("setsid"); err != nil {
		t.Skip("needs setsid")
	}
	const quiet = "</dev/null >/dev/null 2>&1"
	for _, tc := range []struct{ name, leftover string }{
		{"background child", `sleep 300 ` + quiet + ` & echo $! > "$d/child"`},
		{"setsid child", `setsid sleep 300 ` + quiet + ` & echo $! > "$d/child"`},
		{"double fork daemon", `sh -c 'setsid sleep 300 ` + quiet + ` & echo $! > "$d/child"'`},
		{"SIGTERM ignored", `(trap '' TERM; exec sleep 300 ` + quiet + `) & echo $! > "$d/child"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := t.TempDir()
			script := filepath.Join(d, "attempt.sh")
			body := "#!/bin/sh\nd='" + d + "'\nexport d\n" + `if [ -e "$d/child" ]; then
  s=$(cut -d' ' -f3 "/proc/$(cat "$d/child")/stat" 2>/dev/null)
  case "$s" in ''|Z|X) echo alone > "$d/seen";; *) echo "overlap, state $s" > "$d/seen";; esac
  exit 0
fi
` + tc.leftover + "\nexit 1\n"
			if err := os.WriteFile(script, []byte(body), 0o755); err != nil {
				t.Fatal(err)
			}
			childPID := func() string {
				b, _ := os.ReadFile(filepath.Join(d, "child"))
				return strings.TrimSpace(string(b))
			}
			t.Cleanup(func() { // a test that fails leaves no sleep behind
				if n, err := strconv.Atoi(childPID()); err == nil && !gone(childPID()) {
					syscall.Kill(n, syscall.SIGKILL)
				}
			})
			for _, attempts := range []string{"2", "1"} {
				os.Remove(filepath.Join(d, "child"))
				os.Remove(filepath.Join(d, "seen"))
				c := exec.Command(yaoki, "exec", "--base", "0", "--grace", "100ms", "--max-attempts", attempts, "--", script)
				c.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
				var out, errb strings.Builder
				c.Stdout, c.Stderr = &out, &errb
				err := c.Run()
				if attempts == "2" {
					seen, _ := os.ReadFile(filepath.Join(d, "seen"))
					if err != nil || strings.TrimSpace(string(seen)) != "alone" {
						t.Fatalf("retry: %v, the retry saw %q: want exit 0 and the first attempt's leftover (PID %s) gone\n%s",
							err, seen, childPID(), errb.String())
					}
					if n, _ := strconv.Atoi(childPID()); n > 0 && !gone(childPID()) {
						syscall.Kill(n, syscall.SIGKILL)
					}
					continue
				}
				if pid := childPID(); pid == "" || !gone(pid) {
					t.Fatalf("one attempt: %v; its leftover (PID %q) still runs after yaoki exited\n%s", err, pid, errb.String())
				}
			}
		})
	}
}

// Fault: the user's signal (Ctrl-C's SIGINT, SIGTERM, SIGHUP) comes while
// yaoki waits between attempts, no command running. yaoki exits 128+N, as
// a command killed by it would: a shell running yaoki in a script sees the
// interruption and stops the script, where the last attempt's code (1)
// would let it go on as after an ordinary failure.
func TestExecSignalDuringWaitExits128PlusN(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP} {
		t.Run(sig.String(), func(t *testing.T) {
			// The 10 s wait is never waited: the signal ends it.
			s, line, _ := startPrinting(t, nil, yaoki, "exec", "--max-attempts", "3", "--base", "10s", "--jitter", "none", "--", "sh", "-c", "echo started; exit 1")
			t.Cleanup(s.kill)
			if line != "started" {
				t.Fatalf("got %q", line)
			}
			if !poll(10*time.Second, 5*time.Millisecond, func() bool { return strings.Contains(strings.Join(s.lines(), "\n"), "retrying in") }) {
				t.Fatalf("no wait reported:\n%s", strings.Join(s.lines(), "\n"))
			}
			s.cmd.Process.Signal(sig)
			code := s.wait(t)
			stderr := strings.Join(s.lines(), "\n")
			if code != 128+int(sig) || !strings.Contains(stderr, "stopped by a signal") {
				t.Fatalf("exit %d; want %d (128+%d, the signal that stopped the retrying)\n%s", code, 128+int(sig), int(sig), stderr)
			}
		})
	}
}

// A signal that reaches a running command leaves the exit code to it: a
// command that traps SIGTERM and exits 3 makes yaoki exit 3.
func TestExecSignalDuringAttemptKeepsCommandsCode(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "never")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	// Opening the FIFO blocks: no writer ever comes.
	s, line, _ := startPrinting(t, nil, yaoki, "exec", "--max-attempts", "3", "--base", "0", "--",
		"sh", "-c", `trap 'exit 3' TERM; echo started; read x < "$0" & wait`, fifo)
	t.Cleanup(s.kill)
	if line != "started" {
		t.Fatalf("got %q", line)
	}
	s.cmd.Process.Signal(syscall.SIGTERM)
	if code := s.wait(t); code != 3 {
		t.Fatalf("exit %d; want 3, the command's own\n%s", code, strings.Join(s.lines(), "\n"))
	}
}

// Fault: yaoki exec is killed with SIGKILL (kill -9, the OOM killer) while
// an attempt runs. On Linux the command gets SIGKILL with it (the parent
// death signal): it does not run on unwatched, to be started again beside
// itself by whoever runs yaoki again.
func TestExecKilledYaokiTakesTheCommandWithIt(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the parent death signal is Linux's")
	}
	fifo := filepath.Join(t.TempDir(), "never")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	// The command prints its PID, then blocks opening the FIFO.
	s, pid, _ := startPrinting(t, nil, yaoki, "exec", "--max-attempts", "3", "--base", "0", "--",
		"sh", "-c", `echo $$; exec cat "$0"`, fifo)
	t.Cleanup(s.kill) // runs last: once the command is gone, its stderr ends
	t.Cleanup(func() {
		if n, err := strconv.Atoi(pid); err == nil && !gone(pid) {
			syscall.Kill(n, syscall.SIGKILL)
		}
	})
	s.cmd.Process.Signal(syscall.SIGKILL)
	if !poll(5*time.Second, 5*time.Millisecond, func() bool { return gone(pid) }) {
		t.Fatalf("the command (PID %s) runs on after yaoki was killed", pid)
	}
}
