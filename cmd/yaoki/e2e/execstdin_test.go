package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// Fault: a command that reads its standard input fails after reading it
// all (curl -d @- whose answer is a 503, psql < migration.sql losing its
// connection). Given a file (yaoki exec -- CMD < input), the retry reads
// the same input from the same place: yaoki moves the file's offset back,
// which the command shares, to where it was when yaoki started (not the
// file's start: a script may have read a header line before). Given a
// pipe, which cannot be read again, the retry gets what the first attempt
// left: nothing.
func TestExecStdinReplayedFromAFile(t *testing.T) {
	d := t.TempDir()
	// Each run saves what it read as in.N; the first fails.
	script := filepath.Join(d, "attempt.sh")
	body := "#!/bin/sh\nd='" + d + `'
n=$(ls "$d" | grep -c '^in\.')
n=$((n+1))
cat > "$d/in.$n"
[ $n -ge 2 ] && exit 0
exit 1
`
	if err := os.WriteFile(script, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	input := filepath.Join(t.TempDir(), "input")
	if err := os.WriteFile(input, []byte("header\nline 1\nline 2\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	read := func(n string) string {
		b, _ := os.ReadFile(filepath.Join(d, "in."+n))
		return string(b)
	}
	clean := func() {
		for _, n := range []string{"1", "2"} {
			os.Remove(filepath.Join(d, "in."+n))
		}
	}

	f, err := os.Open(input)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Seek(int64(len("header\n")), 0); err != nil { // the caller read the header already
		t.Fatal(err)
	}
	c := exec.Command(yaoki, "exec", "--base", "0", "--", script)
	var errb strings.Builder
	c.Stdin, c.Stderr = f, &errb
	if err := c.Run(); err != nil {
		t.Fatalf("exec < file: %v\n%s", err, errb.String())
	}
	if got1, got2 := read("1"), read("2"); got1 != "line 1\nline 2\n" || got2 != got1 {
		t.Errorf("from a file: attempt 1 read %q, attempt 2 %q; want both %q", got1, got2, "line 1\nline 2\n")
	}

	clean()
	c = exec.Command(yaoki, "exec", "--base", "0", "--", script)
	c.Stdin, c.Stderr = strings.NewReader("line 1\nline 2\n"), &errb // a pipe
	if err := c.Run(); err != nil {
		t.Fatalf("exec < pipe: %v\n%s", err, errb.String())
	}
	if got1, got2 := read("1"), read("2"); got1 != "line 1\nline 2\n" || got2 != "" {
		t.Errorf("from a pipe: attempt 1 read %q, attempt 2 %q; want all, then nothing", got1, got2)
	}
}
