package e2e

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"testing"
	"time"

	"github.com/yaoki-go/yaoki/deadletter"
	"github.com/yaoki-go/yaoki/postgres/pgtest"
)

// nextWordRE finds the word after --after in list's stderr: the rest of the
// line, quotes and spaces included.
var nextWordRE = regexp.MustCompile(`next page: --after (.+)`)

// TestDeadLetterPagesOddIDs: letters whose IDs hold a tab, a newline, an
// escape, a bidi override, a quote, a space and a backslash are listed one
// page at a time, each page's --after being the word the previous page
// printed, read by a shell (bash) as an operator pastes it; the letter named
// by --after is deleted before the next page is read, and a letter is put
// behind the pages read. Every letter is listed once, in ID order. The word
// used to be the ID made printable (a tab as a space, the escape as the four
// characters \x1b), which is another ID: the pages skipped letters.
func TestDeadLetterPagesOddIDs(t *testing.T) {
	bash := needProgram(t, "bash")
	srv := pgtest.Start(t)
	db := newDB(t, srv, "oddids", true)
	ids := []string{"a\tb", "a\nb", "a\x1bb", "a b", "a'b", "a\\b", "a\u202eb", "ab", "é\r"}
	for _, id := range ids {
		db.put(t, deadletter.Letter{ID: id, Queue: "q", Due: time.Now()})
	}
	slices.Sort(ids)
	var listed []string
	word := ""
	for page := 0; page <= len(ids); page++ {
		script := `exec "$0" deadletter list --limit 1 --json`
		if word != "" {
			script += " --after " + word
		}
		c := exec.Command(bash, "-c", script, yaoki)
		c.Env = append(os.Environ(), db.env...)
		var out, errb bytes.Buffer
		c.Stdout, c.Stderr = &out, &errb
		if err := c.Run(); err != nil {
			t.Fatalf("page %d (--after %s): %v: %s", page, word, err, errb.String())
		}
		stderr := errb.String()
		for _, l := range parseLines(t, out.String()) {
			listed = append(listed, l.ID)
		}
		if page == 2 {
			// Behind the pages read: listed at the end.
			db.put(t, deadletter.Letter{ID: "z\x07", Queue: "q", Due: time.Now()})
			ids = append(ids, "z\x07")
			slices.Sort(ids)
		}
		// The letter named by --after is gone when the next page is read.
		if len(listed) > 0 {
			if err := db.store.Delete(context.Background(), listed[len(listed)-1]); err != nil {
				t.Fatal(err)
			}
		}
		m := nextWordRE.FindStringSubmatch(stderr)
		if m == nil {
			break
		}
		word = m[1]
	}
	if !slices.Equal(listed, ids) {
		t.Errorf("pages listed\n%q\nwant\n%q", listed, ids)
	}
}
