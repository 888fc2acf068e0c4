package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
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
