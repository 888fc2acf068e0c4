package deadlettercli

import (
	"bufio"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/spf13/cobra"

	"github.com/yaoki-go/yaoki/cmd/yaoki/internal/cli"
	"github.com/yaoki-go/yaoki/deadletter"
	"github.com/yaoki-go/yaoki/deadletter/httpletter"
	"github.com/yaoki-go/yaoki/header"
)

// dlStates are the states a letter is in at a given time, in the order
// deadletter.Counts lists them.
var dlStates = []string{"waiting", "due", "held", "parked"}

// letterState returns the state of l at now, classified exactly as
// deadletter.Counts does: parked, else held (a claim whose lease runs past
// now), else waiting (due after now), else due.
func letterState(l *deadletter.Letter, now time.Time) string {
	switch {
	case l.Parked:
		return "parked"
	case l.Token != "" && l.LeaseEnd.After(now):
		return "held"
	case l.Due.After(now):
		return "waiting"
	}
	return "due"
}

// parseState checks a --state value.
func parseState(s string) (string, error) {
	v := strings.ToLower(strings.TrimSpace(s))
	if slices.Contains(dlStates, v) {
		return v, nil
	}
	return "", fmt.Errorf("--state %q: want one of %s", s, strings.Join(dlStates, ", "))
}

// now is the time a command decides by: the database's clock
// (clock_timestamp), in UTC, to the microsecond as the store keeps
// times. Every operator then sees a letter in the same state whatever
// their machine's clock says, and list gives a letter the state count
// gives it; the machine's clock may be minutes off the fleet's (a laptop),
// the database's is the one clock the fleet shares.
func (c *dlConn) now(ctx context.Context) (time.Time, error) {
	var t time.Time
	if err := c.pool.QueryRow(ctx, `SELECT clock_timestamp()`).Scan(&t); err != nil {
		return time.Time{}, err
	}
	return t.UTC().Truncate(time.Microsecond), nil
}

// Bounds of list --limit.
const (
	listDefault = 50
	listMax     = 1000
	listChunk   = 100 // letters read per store call (each may carry 1 MiB)
)

type listOptions struct {
	queue, state, after string
	limit, width        int
	json, relative      bool
}

func newDLListCmd(f *dlFlags) *cobra.Command {
	o := &listOptions{}
	cmd := &cobra.Command{
		Use:   "list [--queue Q] [--state waiting|due|held|parked] [--after ID] [--limit N] [--json]",
		Short: "List letters, a page at a time, in ID order",
		Long: `list prints up to --limit letters (50; at most 1000) in ID order, of one queue
(--queue) or of all, in one state (--state) or in any, starting after the ID
given with --after. When more letters follow, it says on stderr which --after
gives the next page.

The table has ID, QUEUE, STATE, DUE (RFC 3339 in UTC; --relative: "in 4m",
"2h ago"), REDRIVES (failed redrives since the letter was put or requeued),
ATTEMPTS, REASON and ERROR (the last error, cut to fit --width columns but
kept to at least 24 characters; show prints it whole). --json prints one JSON object per line, with every field and
the payload: as text when it is valid UTF-8 ("payload_encoding": "text"),
else in base64 ("payload_encoding": "base64").

The state is the letter's at the time the command runs, as count classifies
it; --state filters the pages as they are read, so a page of a rare state may
read many letters.
` + deadLetterHelp,
		Example: `  yaoki deadletter list
  yaoki deadletter list --queue payments --state parked --relative
  yaoki deadletter list --limit 1000 --after 7f3a0c --json | jq -r .id`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if o.limit < 1 || o.limit > listMax {
				return cli.Usagef("--limit %d: want 1 to %d letters per page", o.limit, listMax)
			}
			if o.state != "" {
				st, err := parseState(o.state)
				if err != nil {
					return cli.Usagef("%v", err)
				}
				o.state = st
			}
			if !utf8.ValidString(o.after) {
				return cli.Usagef("--after %q: want an ID (UTF-8 text), the last one of the previous page", o.after)
			}
			if o.width < 0 {
				return cli.Usagef("--width %d: want the columns of the terminal, ≥ 0 (0: $COLUMNS, else 160)", o.width)
			}
			return f.withStore(cmd, "list", func(ctx context.Context, c *dlConn) error { return o.run(ctx, cmd, c) })
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&o.queue, "queue", "", "list only this queue (default: every queue)")
	fs.StringVar(&o.state, "state", "", "list only letters in this state: waiting, due, held or parked")
	fs.StringVar(&o.after, "after", "", "start after this ID (the --after that the previous page printed)")
	fs.IntVar(&o.limit, "limit", listDefault, "most letters printed")
	fs.BoolVar(&o.json, "json", false, "print one JSON object per line, payload included")
	fs.BoolVar(&o.relative, "relative", false, "print DUE relative to now (in 4m, 2h ago)")
	fs.IntVar(&o.width, "width", 0, "columns the table fits in, ERROR being cut (default: $COLUMNS, else 160)")
	return cmd
}

func (o *listOptions) run(ctx context.Context, cmd *cobra.Command, c *dlConn) error {
	now, err := c.now(ctx)
	if err != nil {
		return failed("list", err)
	}
	out := bufio.NewWriter(cmd.OutOrStdout())
	defer out.Flush()
	enc := json.NewEncoder(out)
	var rows [][]string
	// cursor pages through the store; last is the last letter printed, the
	// --after of the next page when one more letter matches.
	cursor, last, next, n := o.after, "", "", 0
	chunk := min(o.limit+1, listChunk)
scan:
	for {
		page, err := c.store.List(ctx, o.queue, cursor, chunk)
		if s, ok := cli.Interrupted(ctx); ok && err != nil {
			// Print the letters read so far, and where the rest starts.
			if !o.json && n > 0 {
				printTable(out, rows, o.tableWidth())
			}
			out.Flush()
			rest := ""
			if cursor != "" {
				rest = ": the rest from --after " + shellQuote(cursor)
			}
			return cli.Exit(s.ExitCode(), fmt.Sprintf("deadletter list: %v after %d letter%s%s", s, n, cli.Plural(n), rest))
		}
		if err != nil {
			out.Flush()
			return failed("list", err)
		}
		for i := range page {
			l := &page[i]
			if o.state != "" && letterState(l, now) != o.state {
				continue
			}
			if n == o.limit {
				next = last
				break scan
			}
			n++
			last = l.ID
			if o.json {
				if err := enc.Encode(letterJSONOf(l, now)); err != nil {
					return cli.Exit(dlFailed, fmt.Sprintf("deadletter list: %v", err))
				}
			} else {
				rows = append(rows, o.row(l, now))
			}
		}
		if len(page) < chunk {
			break
		}
		cursor = page[len(page)-1].ID
	}
	switch {
	case n == 0:
		fmt.Fprintln(cmd.ErrOrStderr(), "yaoki deadletter list: no letters")
	case !o.json:
		printTable(out, rows, o.tableWidth())
	}
	if err := out.Flush(); err != nil {
		return cli.Exit(dlFailed, fmt.Sprintf("deadletter list: %v", err))
	}
	if next != "" {
		fmt.Fprintf(cmd.ErrOrStderr(), "yaoki deadletter list: more letters follow; next page: --after %s\n", shellQuote(next))
	}
	return nil
}

// tableWidth is the width the table fits in: --width, else $COLUMNS, else
// 160.
func (o *listOptions) tableWidth() int {
	if o.width > 0 {
		return o.width
	}
	if n, err := strconv.Atoi(os.Getenv("COLUMNS")); err == nil && n > 0 {
		return n
	}
	return 160
}

// row is l's line of the table.
func (o *listOptions) row(l *deadletter.Letter, now time.Time) []string {
	due := l.Due.UTC().Format(time.RFC3339)
	if o.relative {
		due = relative(l.Due, now)
	}
	return []string{oneLine(l.ID), oneLine(l.Queue), letterState(l, now), due, strconv.Itoa(l.Redrives),
		strconv.Itoa(l.Attempts), cutRunes(oneLine(l.Reason), 24), oneLine(l.Error)}
}

// printTable prints rows under the list's header, in columns two spaces
// apart, the last (ERROR) cut so that a line fits width (but kept to at
// least 24 runes).
func printTable(w io.Writer, rows [][]string, width int) {
	head := []string{"ID", "QUEUE", "STATE", "DUE", "REDRIVES", "ATTEMPTS", "REASON", "ERROR"}
	widths := make([]int, len(head))
	for _, r := range append([][]string{head}, rows...) {
		for i, cell := range r[:len(r)-1] {
			widths[i] = max(widths[i], utf8.RuneCountInString(cell))
		}
	}
	used := 0
	for _, n := range widths[:len(widths)-1] {
		used += n + 2
	}
	last := max(width-used, 24)
	for _, r := range append([][]string{head}, rows...) {
		var b strings.Builder
		for i, cell := range r[:len(r)-1] {
			b.WriteString(cell)
			b.WriteString(strings.Repeat(" ", widths[i]-utf8.RuneCountInString(cell)+2))
		}
		b.WriteString(cutRunes(r[len(r)-1], last))
		fmt.Fprintln(w, strings.TrimRight(b.String(), " "))
	}
}

// letterJSON is a letter as list --json and show --json print it.
type letterJSON struct {
	ID       string    `json:"id"`
	Queue    string    `json:"queue"`
	Key      string    `json:"key"`
	State    string    `json:"state"`
	Due      time.Time `json:"due"`
	Created  time.Time `json:"created"`
	Redrives int       `json:"redrives"`
	Attempts int       `json:"attempts"`
	Reason   string    `json:"reason"`
	Error    string    `json:"error"`
	Parked   bool      `json:"parked"`
	// Token and LeaseEnd are the claim that holds the letter, if one does
	// (its lease may have ended: the state says).
	Token    string    `json:"token,omitempty"`
	LeaseEnd time.Time `json:"lease_end,omitzero"`
	// Payload is the payload as text when it is valid UTF-8
	// (PayloadEncoding "text"), else in standard base64 ("base64").
	PayloadBytes    int       `json:"payload_bytes"`
	PayloadEncoding string    `json:"payload_encoding"`
	Payload         string    `json:"payload"`
	HTTP            *httpJSON `json:"http,omitempty"` // show only: the request of an HTTP letter
}

// httpJSON is an HTTP letter's request (httpletter.Decode).
type httpJSON struct {
	Method       string      `json:"method"`
	URL          string      `json:"url"`
	Host         string      `json:"host,omitempty"` // the Host sent, when it is not the URL's
	Header       http.Header `json:"header"`
	BodyEncoding string      `json:"body_encoding"` // text or base64, as for the payload
	Body         string      `json:"body"`
	Trailer      http.Header `json:"trailer,omitempty"` // the fields sent after the body
}

func letterJSONOf(l *deadletter.Letter, now time.Time) letterJSON {
	enc, p := encodeBytes(l.Payload)
	j := letterJSON{ID: l.ID, Queue: l.Queue, Key: l.Key, State: letterState(l, now), Due: l.Due.UTC(), Created: l.Created.UTC(),
		Redrives: l.Redrives, Attempts: l.Attempts, Reason: l.Reason, Error: l.Error, Parked: l.Parked,
		PayloadBytes: len(l.Payload), PayloadEncoding: enc, Payload: p}
	if l.Token != "" {
		j.Token, j.LeaseEnd = l.Token, l.LeaseEnd.UTC()
	}
	return j
}

// encodeBytes returns b as text when it is valid UTF-8, else in base64,
// with the name of the encoding.
func encodeBytes(b []byte) (encoding, s string) {
	if utf8.Valid(b) {
		return "text", string(b)
	}
	return "base64", base64.StdEncoding.EncodeToString(b)
}

func newDLShowCmd(f *dlFlags) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "show ID [--json]",
		Short: "Print one letter: every field and its payload",
		Long: `show prints every field of the letter ID: its queue, idempotency key, state,
due and creation times, redrives, attempts, reason, whole last error, the claim
that holds it if any, and its payload (as text when it is valid UTF-8, else in
base64). For an HTTP letter (one that package deadletter/httpletter made) it
prints the request instead of the raw payload: method, URL, Host (when it is
not the URL's), headers, body and trailer.
--json prints one JSON object, with the request under "http".
` + deadLetterHelp,
		Example: `  yaoki deadletter show 0f9c2e1a7b3d4c5e8f6a7b8c9d0e1f2a
  yaoki deadletter show 0f9c2e1a7b3d4c5e8f6a7b8c9d0e1f2a --json | jq -r .http.body`,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) != 1 {
				return cli.Usagef("show needs one letter ID: yaoki deadletter show ID (got %d arguments)", len(args))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			return f.withStore(cmd, "show", func(ctx context.Context, c *dlConn) error {
				l, err := c.store.Get(ctx, args[0])
				if err != nil {
					return failed("show", err)
				}
				now, err := c.now(ctx)
				if err != nil {
					return failed("show", err)
				}
				j := letterJSONOf(&l, now)
				if r, err := httpletter.Decode(l.Payload); err == nil {
					enc, body := encodeBytes(r.Body)
					j.HTTP = &httpJSON{Method: r.Method, URL: r.URL, Host: r.Host, Header: r.Header, BodyEncoding: enc, Body: body, Trailer: r.Trailer}
					if j.HTTP.Header == nil {
						j.HTTP.Header = http.Header{}
					}
				}
				if asJSON {
					return json.NewEncoder(cmd.OutOrStdout()).Encode(j)
				}
				printLetter(cmd.OutOrStdout(), &j, now)
				return nil
			})
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print one JSON object")
	return cmd
}

// printLetter prints show's text form of j.
func printLetter(w io.Writer, j *letterJSON, now time.Time) {
	field := func(name, value string) { fmt.Fprintf(w, "%-9s %s\n", name+":", value) }
	field("id", oneLine(j.ID))
	field("queue", oneLine(j.Queue))
	field("key", oneLine(j.Key))
	field("state", j.State)
	field("due", j.Due.Format(time.RFC3339Nano)+" ("+relative(j.Due, now)+")")
	field("created", j.Created.Format(time.RFC3339Nano)+" ("+relative(j.Created, now)+")")
	field("redrives", strconv.Itoa(j.Redrives))
	field("attempts", strconv.Itoa(j.Attempts))
	field("reason", oneLine(j.Reason))
	field("error", oneLine(j.Error))
	if j.Token != "" {
		field("claim", fmt.Sprintf("token %s, lease until %s (%s)", oneLine(j.Token), j.LeaseEnd.Format(time.RFC3339Nano), relative(j.LeaseEnd, now)))
	} else {
		field("claim", "none")
	}
	if j.HTTP != nil {
		field("payload", fmt.Sprintf("%d bytes: an HTTP request (httpletter)", j.PayloadBytes))
		fmt.Fprintln(w)
		h := j.HTTP
		fmt.Fprintf(w, "%s %s\n", oneLine(h.Method), oneLine(h.URL))
		if h.Host != "" {
			fmt.Fprintf(w, "Host: %s\n", oneLine(h.Host))
		}
		printFields(w, h.Header)
		if j.Key != "" && h.Header.Get(header.IdempotencyKey) != j.Key {
			fmt.Fprintf(w, "%s: %s   (the letter's key, sent on every redrive)\n", header.IdempotencyKey, oneLine(j.Key))
		}
		if h.Body != "" {
			fmt.Fprintln(w)
			printBytes(w, h.BodyEncoding, h.Body)
		}
		if len(h.Trailer) > 0 {
			fmt.Fprintln(w, "\ntrailer (sent after the body):")
			printFields(w, h.Trailer)
		}
		return
	}
	field("payload", fmt.Sprintf("%d bytes, %s", j.PayloadBytes, j.PayloadEncoding))
	if j.Payload != "" {
		fmt.Fprintln(w)
		printBytes(w, j.PayloadEncoding, j.Payload)
	}
}

// printFields prints the fields of h, one a line, names in order.
func printFields(w io.Writer, h http.Header) {
	names := make([]string, 0, len(h))
	for name := range h {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		for _, v := range h[name] {
			fmt.Fprintf(w, "%s: %s\n", oneLine(name), oneLine(v))
		}
	}
}

// printBytes prints text made safe for a terminal, or base64 in lines of 76.
func printBytes(w io.Writer, encoding, s string) {
	if encoding == "text" {
		s = safeText(s)
		fmt.Fprint(w, s)
		if !strings.HasSuffix(s, "\n") {
			fmt.Fprintln(w)
		}
		return
	}
	for len(s) > 76 {
		fmt.Fprintln(w, s[:76])
		s = s[76:]
	}
	fmt.Fprintln(w, s)
}
