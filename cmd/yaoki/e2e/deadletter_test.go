package e2e

import (
	"bufio"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/yaoki-go/yaoki/deadletter"
	"github.com/yaoki-go/yaoki/deadletter/httpletter"
	"github.com/yaoki-go/yaoki/postgres"
	"github.com/yaoki-go/yaoki/postgres/pgtest"
	"github.com/yaoki-go/yaoki/retry"
)

// dlDB is a database of its own on the test's PostgreSQL server: its DSN
// for the binary, and a store over it for the test to put and check
// letters.
type dlDB struct {
	dsn   string
	env   []string // YAOKI_POSTGRES=dsn
	pool  *pgxpool.Pool
	store *postgres.DeadLetters
}

// newDB creates database name on srv; migrated, it has the tables.
func newDB(t *testing.T, srv *pgtest.Server, name string, migrated bool) *dlDB {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, srv.DSN)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()); err != nil {
		t.Fatal(err)
	}
	u, err := url.Parse(srv.DSN)
	if err != nil {
		t.Fatal(err)
	}
	u.Path = "/" + name
	db := &dlDB{dsn: u.String()}
	db.env = []string{"YAOKI_POSTGRES=" + db.dsn}
	if db.pool, err = pgxpool.New(ctx, db.dsn); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(db.pool.Close)
	db.store = postgres.NewDeadLetters(db.pool)
	if migrated {
		if err := postgres.Migrate(ctx, db.pool); err != nil {
			t.Fatal(err)
		}
	}
	return db
}

func (db *dlDB) put(t *testing.T, l deadletter.Letter) {
	t.Helper()
	if l.Created.IsZero() {
		l.Created = time.Now().Add(-2 * time.Hour)
	}
	if l.Reason == "" {
		l.Reason = "attempts exhausted"
	}
	if err := db.store.Put(context.Background(), l); err != nil {
		t.Fatal(err)
	}
}

func (db *dlDB) get(t *testing.T, id string) (deadletter.Letter, bool) {
	t.Helper()
	l, err := db.store.Get(context.Background(), id)
	if errors.Is(err, deadletter.ErrNotFound) {
		return l, false
	}
	if err != nil {
		t.Fatal(err)
	}
	return l, true
}

// jsonLetter is the part of a letter's JSON line that the tests read.
type jsonLetter struct {
	ID              string    `json:"id"`
	Queue           string    `json:"queue"`
	Key             string    `json:"key"`
	State           string    `json:"state"`
	Due             time.Time `json:"due"`
	Redrives        int       `json:"redrives"`
	Attempts        int       `json:"attempts"`
	Reason          string    `json:"reason"`
	Error           string    `json:"error"`
	Parked          bool      `json:"parked"`
	Token           string    `json:"token"`
	PayloadBytes    int       `json:"payload_bytes"`
	PayloadEncoding string    `json:"payload_encoding"`
	Payload         string    `json:"payload"`
	HTTP            *struct {
		Method       string      `json:"method"`
		URL          string      `json:"url"`
		Host         string      `json:"host"`
		Header       http.Header `json:"header"`
		BodyEncoding string      `json:"body_encoding"`
		Body         string      `json:"body"`
		Trailer      http.Header `json:"trailer"`
	} `json:"http"`
}

func parseLines(t *testing.T, out string) []jsonLetter {
	t.Helper()
	var ls []jsonLetter
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(nil, 4<<20)
	for sc.Scan() {
		var l jsonLetter
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatalf("not a JSON line: %q: %v", sc.Text(), err)
		}
		ls = append(ls, l)
	}
	return ls
}

// afterRE finds the next page's --after in list's stderr.
var afterRE = regexp.MustCompile(`next page: --after (\S+)`)

// TestDeadLetter drives every deadletter subcommand against a real
// PostgreSQL, one database per subtest, with letters the test puts through
// the postgres store.
func TestDeadLetter(t *testing.T) {
	srv := pgtest.Start(t)

	t.Run("migrate", func(t *testing.T) {
		db := newDB(t, srv, "migrate", false)
		r := run(t, db.env, "deadletter", "list")
		if r.code != 1 || !strings.Contains(r.stderr, "no table yaoki_dead_letters") || !strings.Contains(r.stderr, "yaoki deadletter migrate") {
			t.Fatalf("list before migrate: exit %d, stderr %q; want 1 and a pointer to yaoki deadletter migrate", r.code, r.stderr)
		}
		r = run(t, nil, "deadletter", "migrate", "--postgres", db.dsn)
		if r.code != 0 || !strings.Contains(r.stdout, "applied 0001_idempotency\napplied 0002_dead_letters\n") {
			t.Fatalf("first migrate: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
		}
		r = run(t, db.env, "deadletter", "migrate")
		if r.code != 0 || !strings.HasPrefix(r.stdout, "nothing to apply") || strings.Contains(r.stdout, "applied") {
			t.Fatalf("second migrate: exit %d, stdout %q; want nothing applied", r.code, r.stdout)
		}
		r = run(t, db.env, "deadletter", "count")
		if r.code != 0 || !strings.Contains(r.stdout, "total    0") {
			t.Fatalf("count after migrate: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
		}
	})

	t.Run("list", func(t *testing.T) {
		db := newDB(t, srv, "list", true)
		ctx := context.Background()
		now := time.Now()
		// l01 is held: the only due letter of q when it is claimed.
		db.put(t, deadletter.Letter{ID: "l01", Queue: "q", Due: now.Add(-time.Hour), Payload: []byte("held")})
		if got, err := db.store.Claim(ctx, "q", now, 10, time.Hour); err != nil || len(got) != 1 {
			t.Fatalf("claim: %v, %v", got, err)
		}
		states := map[string]string{"l01": "held"}
		for i := 2; i <= 7; i++ {
			id := fmt.Sprintf("l%02d", i)
			l := deadletter.Letter{ID: id, Queue: "q", Due: now.Add(-time.Minute), Attempts: i, Error: "503 Service Unavailable\n\x1b[31mred"}
			switch i % 3 {
			case 0:
				l.Parked, l.Reason = true, deadletter.ReasonPermanent
				states[id] = "parked"
			case 1:
				l.Due = now.Add(time.Hour)
				states[id] = "waiting"
			default:
				states[id] = "due"
			}
			db.put(t, l)
		}
		db.put(t, deadletter.Letter{ID: "l03x", Queue: "other", Due: now, Payload: []byte{0xff, 0x00, 'a'}})

		// Three pages of 3 in queue q.
		var ids []string
		after := ""
		for page := 1; ; page++ {
			args := []string{"deadletter", "list", "--queue", "q", "--limit", "3"}
			if after != "" {
				args = append(args, "--after", after)
			}
			r := run(t, db.env, args...)
			if r.code != 0 {
				t.Fatalf("page %d: exit %d: %s", page, r.code, r.stderr)
			}
			lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
			if !strings.HasPrefix(lines[0], "ID ") || !strings.Contains(lines[0], "ERROR") {
				t.Fatalf("page %d: no header: %q", page, r.stdout)
			}
			for _, line := range lines[1:] {
				f := strings.Fields(line)
				ids = append(ids, f[0])
				if f[2] != states[f[0]] {
					t.Errorf("%s: state %q, want %q", f[0], f[2], states[f[0]])
				}
				if strings.Contains(line, "\x1b") {
					t.Errorf("the table passes an escape character to the terminal: %q", line)
				}
				if f[0] != "l01" && !strings.Contains(line, `503 Service Unavailable \x1b[31mred`) {
					t.Errorf("the error field does not show the ESC as \\x1b, as the payload does: %q", line)
				}
			}
			m := afterRE.FindStringSubmatch(r.stderr)
			if m == nil {
				if page != 3 {
					t.Fatalf("page %d says no more letters follow: %q", page, r.stderr)
				}
				break
			}
			after = m[1]
			if page == 3 || after != ids[len(ids)-1] {
				t.Fatalf("page %d: next --after %q, with ids %v", page, after, ids)
			}
		}
		if got := strings.Join(ids, ","); got != "l01,l02,l03,l04,l05,l06,l07" {
			t.Fatalf("pages list %s", got)
		}

		// --state filters, and pages too.
		r := run(t, db.env, "deadletter", "list", "--state", "parked", "--limit", "1")
		if r.code != 0 || !strings.HasPrefix(strings.Split(r.stdout, "\n")[1], "l03 ") || !strings.Contains(r.stderr, "--after l03") {
			t.Fatalf("--state parked --limit 1: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
		}
		r = run(t, db.env, "deadletter", "list", "--state", "parked", "--after", "l03", "--json")
		if ls := parseLines(t, r.stdout); r.code != 0 || len(ls) != 1 || ls[0].ID != "l06" || r.stderr != "" {
			t.Fatalf("--state parked --after l03: exit %d, %+v, stderr %q", r.code, ls, r.stderr)
		}

		// --json: every letter, its state as count counts it, its payload.
		r = run(t, db.env, "deadletter", "list", "--json")
		ls := parseLines(t, r.stdout)
		if r.code != 0 || len(ls) != 8 {
			t.Fatalf("--json: exit %d, %d letters, want 8: %s", r.code, len(ls), r.stderr)
		}
		tally := map[string]int{}
		for _, l := range ls {
			tally[l.State]++
			switch l.ID {
			case "l01":
				if l.PayloadEncoding != "text" || l.Payload != "held" || l.Token == "" {
					t.Errorf("l01: %+v: want text payload held and its claim's token", l)
				}
			case "l03x":
				b, err := base64.StdEncoding.DecodeString(l.Payload)
				if l.PayloadEncoding != "base64" || err != nil || string(b) != "\xff\x00a" || l.PayloadBytes != 3 {
					t.Errorf("l03x: %+v: want the bytes ff 00 61 in base64", l)
				}
			case "l04":
				if l.Error != "503 Service Unavailable\n\x1b[31mred" || l.Attempts != 4 {
					t.Errorf("l04: %+v: want the error as stored", l)
				}
			}
		}
		var c struct{ Waiting, Due, Held, Parked, Total int }
		r = run(t, db.env, "deadletter", "count", "--json")
		if err := json.Unmarshal([]byte(r.stdout), &c); r.code != 0 || err != nil {
			t.Fatalf("count --json: exit %d, %q, %v", r.code, r.stdout, err)
		}
		if c.Waiting != tally["waiting"] || c.Due != tally["due"] || c.Held != tally["held"] || c.Parked != tally["parked"] || c.Total != 8 {
			t.Errorf("count says %+v, list's states %v", c, tally)
		}
		if c.Waiting != 2 || c.Due != 3 || c.Held != 1 || c.Parked != 2 {
			t.Errorf("count says %+v, want 2 waiting, 3 due (l02, l05, l03x), 1 held, 2 parked", c)
		}
		r = run(t, db.env, "deadletter", "count", "--queue", "other")
		if r.code != 0 || !strings.Contains(r.stdout, "due      1\n") || !strings.Contains(r.stdout, "total    1\n") {
			t.Errorf("count --queue other: exit %d, %q", r.code, r.stdout)
		}
	})

	t.Run("show", func(t *testing.T) {
		db := newDB(t, srv, "show", true)
		req, _ := http.NewRequest(http.MethodPost, "http://127.0.0.1:9/charges?order=42", strings.NewReader(`{"amount":1250}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer secret-token")
		req.Header.Set("Idempotency-Key", "order-42")
		l, err := httpletter.Letter("charges", req)
		if err != nil {
			t.Fatal(err)
		}
		l.ID = "h1"
		if _, err := deadletter.Capture(context.Background(), db.store, l, &retry.Error{Reason: retry.ReasonExhausted, Attempts: 3, Last: errors.New("503 Service Unavailable")}, time.Now()); err != nil {
			t.Fatal(err)
		}
		r := run(t, db.env, "deadletter", "show", "h1")
		if r.code != 0 {
			t.Fatalf("show: exit %d: %s", r.code, r.stderr)
		}
		for _, want := range []string{"id:       h1\n", "queue:    charges\n", "key:      order-42\n", "state:    due\n", "attempts: 3\n",
			"reason:   attempts exhausted\n", "HTTP request", "POST http://127.0.0.1:9/charges?order=42\n",
			"Content-Type: application/json\n", "Idempotency-Key: order-42\n", "\n{\"amount\":1250}\n"} {
			if !strings.Contains(r.stdout, want) {
				t.Errorf("show lacks %q:\n%s", want, r.stdout)
			}
		}
		if strings.Contains(r.stdout, "secret-token") {
			t.Errorf("show prints the credentials that httpletter drops:\n%s", r.stdout)
		}
		r = run(t, db.env, "deadletter", "show", "h1", "--json")
		ls := parseLines(t, r.stdout)
		if r.code != 0 || len(ls) != 1 || ls[0].HTTP == nil {
			t.Fatalf("show --json: exit %d, %q", r.code, r.stdout)
		}
		h := ls[0].HTTP
		if h.Method != "POST" || h.URL != "http://127.0.0.1:9/charges?order=42" || h.Header.Get("Content-Type") != "application/json" ||
			h.BodyEncoding != "text" || h.Body != `{"amount":1250}` || ls[0].PayloadEncoding != "text" {
			t.Errorf("show --json: %+v, http %+v", ls[0], h)
		}
		// A request sent to another Host than its URL's, with a body sent
		// chunked and a trailer: show prints both.
		req, _ = http.NewRequest(http.MethodPut, "http://127.0.0.1:9/docs/1", io.NopCloser(strings.NewReader("doc")))
		req.Host = "api.example"
		req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(strings.NewReader("doc")), nil }
		req.ContentLength = -1 // sent chunked, as a trailer needs
		req.Trailer = http.Header{"X-Sum": {"abc"}}
		l, err = httpletter.Letter("docs", req)
		if err != nil {
			t.Fatal(err)
		}
		l.ID = "h2"
		if _, err := deadletter.Capture(context.Background(), db.store, l, &retry.Error{Reason: retry.ReasonExhausted, Attempts: 3, Last: errors.New("503 Service Unavailable")}, time.Now()); err != nil {
			t.Fatal(err)
		}
		r = run(t, db.env, "deadletter", "show", "h2")
		for _, want := range []string{"PUT http://127.0.0.1:9/docs/1\nHost: api.example\n", "\ndoc\n", "\ntrailer (sent after the body):\nX-Sum: abc\n"} {
			if r.code != 0 || !strings.Contains(r.stdout, want) {
				t.Errorf("show of a letter with a Host and a trailer: exit %d, lacks %q:\n%s", r.code, want, r.stdout)
			}
		}
		r = run(t, db.env, "deadletter", "show", "h2", "--json")
		if ls := parseLines(t, r.stdout); r.code != 0 || len(ls) != 1 || ls[0].HTTP == nil || ls[0].HTTP.Host != "api.example" || ls[0].HTTP.Trailer.Get("X-Sum") != "abc" {
			t.Errorf("show --json of a letter with a Host and a trailer: exit %d, %q", r.code, r.stdout)
		}
		r = run(t, db.env, "deadletter", "show", "nope")
		if r.code != 1 || !strings.Contains(r.stderr, "not found") {
			t.Errorf("show of a missing ID: exit %d, %q; want 1", r.code, r.stderr)
		}
	})

	t.Run("requeue", func(t *testing.T) {
		db := newDB(t, srv, "requeue", true)
		for _, id := range []string{"p1", "p2", "p3"} {
			db.put(t, deadletter.Letter{ID: id, Queue: "q", Due: time.Now().Add(-time.Hour), Parked: true, Redrives: 5, Attempts: 9, Reason: deadletter.ReasonRedrivesExhausted})
		}
		r := run(t, db.env, "deadletter", "requeue", "p1")
		if r.code != 0 || !strings.HasPrefix(r.stdout, "requeued p1, due ") {
			t.Fatalf("requeue p1: exit %d, %q, %q", r.code, r.stdout, r.stderr)
		}
		l, _ := db.get(t, "p1")
		if l.Parked || l.Redrives != 0 || l.Attempts != 9 || time.Since(l.Due) > time.Minute || time.Since(l.Due) < 0 {
			t.Errorf("p1 after requeue: %+v: want unparked, 0 redrives, due now", l)
		}
		r = run(t, db.env, "deadletter", "list", "--state", "due", "--json")
		if ls := parseLines(t, r.stdout); len(ls) != 1 || ls[0].ID != "p1" || ls[0].Redrives != 0 {
			t.Errorf("due letters after requeue: %+v", ls)
		}
		before := time.Now()
		r = run(t, db.env, "deadletter", "requeue", "--in", "1h", "p2")
		l, _ = db.get(t, "p2")
		if r.code != 0 || l.Parked || l.Due.Before(before.Add(time.Hour-time.Second)) || l.Due.After(time.Now().Add(time.Hour)) {
			t.Errorf("requeue --in 1h: exit %d, %+v", r.code, l)
		}
		r = run(t, db.env, "deadletter", "requeue", "--at", "2030-01-02T03:04:05+01:00", "p3")
		l, _ = db.get(t, "p3")
		if r.code != 0 || !l.Due.Equal(time.Date(2030, 1, 2, 2, 4, 5, 0, time.UTC)) {
			t.Errorf("requeue --at: exit %d, due %v", r.code, l.Due)
		}
		for _, args := range [][]string{
			{"--at", "2030-01-02", "p3"},
			{"--in", "soon", "p3"},
			{"--at", "2030-01-02T03:04:05Z", "--in", "1h", "p3"},
			{},
		} {
			r = run(t, db.env, append([]string{"deadletter", "requeue"}, args...)...)
			if r.code != 2 || r.stderr == "" {
				t.Errorf("requeue %v: exit %d, %q; want 2 and why", args, r.code, r.stderr)
			}
		}
	})

	t.Run("delete", func(t *testing.T) {
		db := newDB(t, srv, "delete", true)
		for _, id := range []string{"d1", "d2", "d3"} {
			db.put(t, deadletter.Letter{ID: id, Queue: "q", Due: time.Now()})
		}
		r := run(t, db.env, "deadletter", "delete", "d1", "missing", "d3")
		if r.code != 1 || r.stdout != "deleted d1\ndeleted d3\n" || !strings.Contains(r.stderr, "missing") {
			t.Fatalf("delete d1 missing d3: exit %d, stdout %q, stderr %q; want 1, both deleted, the missing one named", r.code, r.stdout, r.stderr)
		}
		for id, want := range map[string]bool{"d1": false, "d2": true, "d3": false} {
			if _, ok := db.get(t, id); ok != want {
				t.Errorf("%s stored: %v, want %v", id, ok, want)
			}
		}
		if r := run(t, db.env, "deadletter", "delete", "d2"); r.code != 0 || r.stdout != "deleted d2\n" {
			t.Errorf("delete d2: exit %d, %q", r.code, r.stdout)
		}
	})

	t.Run("redrive", func(t *testing.T) {
		db := newDB(t, srv, "redrive", true)
		var (
			mu   sync.Mutex
			keys []string
		)
		ok := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			body, _ := io.ReadAll(r.Body)
			mu.Lock()
			keys = append(keys, r.Method+" "+r.Header.Get("Idempotency-Key")+" "+string(body))
			mu.Unlock()
			w.WriteHeader(http.StatusCreated)
		}))
		defer ok.Close()
		gone := httptest.NewServer(http.NotFoundHandler())
		defer gone.Close()
		letter := func(id, queue, target, key string) {
			req, _ := http.NewRequest(http.MethodPost, target+"/hooks", strings.NewReader(`{"event":"`+id+`"}`))
			req.Header.Set("Idempotency-Key", key)
			l, err := httpletter.Letter(queue, req)
			if err != nil {
				t.Fatal(err)
			}
			l.ID, l.Due, l.Attempts = id, time.Now().Add(-time.Second), 3
			db.put(t, l)
		}
		letter("ok1", "hooks", ok.URL, "key-ok1")
		letter("gone1", "gone", gone.URL, "key-gone1")
		db.put(t, deadletter.Letter{ID: "raw1", Queue: "gone", Due: time.Now().Add(-time.Second), Payload: []byte("not a request")})

		r := run(t, db.env, "deadletter", "redrive", "--queue", "hooks", "--once")
		if r.code != 0 || r.stdout != "claimed 1, done 1, failed 0, parked 0, lease lost 0\n" {
			t.Fatalf("redrive 201: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
		}
		if _, found := db.get(t, "ok1"); found {
			t.Error("ok1 is still stored after a 201")
		}
		mu.Lock()
		if len(keys) != 1 || keys[0] != `POST key-ok1 {"event":"ok1"}` {
			t.Errorf("the server saw %q; want one POST with the key and the body", keys)
		}
		mu.Unlock()

		r = run(t, db.env, "deadletter", "redrive", "--queue", "gone", "--once", "-v")
		if r.code != 0 || r.stdout != "claimed 2, done 0, failed 0, parked 2, lease lost 0\n" {
			t.Fatalf("redrive 404: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
		}
		for _, id := range []string{"gone1", "raw1"} {
			l, found := db.get(t, id)
			if !found || !l.Parked || l.Reason != deadletter.ReasonPermanent || l.Redrives != 1 {
				t.Errorf("%s after redrive: %+v, found %v; want parked for a permanent error", id, l, found)
			}
			if !strings.Contains(r.stderr, "letter "+id+": ") || !strings.Contains(r.stderr, "permanent, parked") {
				t.Errorf("-v does not tell %s's outcome: %q", id, r.stderr)
			}
		}
		if l, _ := db.get(t, "gone1"); !strings.Contains(l.Error, "404 Not Found") || l.Attempts != 4 {
			t.Errorf("gone1: error %q, attempts %d; want the 404 and one more attempt", l.Error, l.Attempts)
		}

		// --log-format json: each letter handled is a record.
		letter("ok2", "hooks", ok.URL, "key-ok2")
		r = run(t, db.env, "deadletter", "redrive", "--queue", "hooks", "--once", "--log-format", "json")
		if r.code != 0 || !strings.Contains(r.stderr, `"msg":"dead letter redriven"`) || !strings.Contains(r.stderr, `"yaoki.outcome":"success"`) ||
			!strings.Contains(r.stderr, `"yaoki.name":"hooks"`) || !strings.Contains(r.stderr, `"level":"INFO"`) {
			t.Errorf("redrive --log-format json: exit %d, stderr %q; want an INFO record of the redrive", r.code, r.stderr)
		}
	})

	t.Run("redrive-until-signal", func(t *testing.T) {
		db := newDB(t, srv, "redriverun", true)
		var (
			mu   sync.Mutex
			hits int
		)
		target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			hits++
			mu.Unlock()
			w.WriteHeader(http.StatusNoContent)
		}))
		defer target.Close()
		s := startYaoki(t, "deadletter", "redrive", "--queue", "hooks", "--interval", "50ms", "--postgres", db.dsn)
		// Letters put while it runs are redriven at a later pass.
		for i := range 3 {
			req, _ := http.NewRequest(http.MethodPut, fmt.Sprintf("%s/items/%d", target.URL, i), nil)
			l, _ := httpletter.Letter("hooks", req)
			l.ID, l.Due = fmt.Sprintf("r%d", i), time.Now()
			db.put(t, l)
		}
		var left deadletter.Counts
		if !poll(20*time.Second, 20*time.Millisecond, func() bool {
			n, err := db.store.Count(context.Background(), "hooks", time.Now())
			if err != nil {
				t.Fatal(err)
			}
			left = n
			return n.Total() == 0
		}) {
			t.Fatalf("letters left after 20 s: %+v\n%s", left, strings.Join(s.lines(), "\n"))
		}
		_ = s.cmd.Process.Signal(os.Interrupt)
		if code := s.wait(t); code != 0 {
			t.Errorf("redrive stopped by SIGINT: exit %d; want 0", code)
		}
		log := strings.Join(s.lines(), "\n")
		if !strings.Contains(log, "queue hooks:") || !strings.Contains(log, "pass: claimed") || !strings.Contains(log, "stopped") {
			t.Errorf("stderr lacks the start, the passes or the stop:\n%s", log)
		}
		mu.Lock()
		defer mu.Unlock()
		if hits != 3 {
			t.Errorf("the server got %d requests, want 3", hits)
		}
	})

	t.Run("usage", func(t *testing.T) {
		db := newDB(t, srv, "usage", true)
		r := run(t, []string{"YAOKI_POSTGRES="}, "deadletter", "list")
		if r.code != 2 || !strings.Contains(r.stderr, "--postgres") || !strings.Contains(r.stderr, "YAOKI_POSTGRES") {
			t.Errorf("without a database: exit %d, %q; want 2 naming --postgres and YAOKI_POSTGRES", r.code, r.stderr)
		}
		r = run(t, db.env, "deadletter", "list", "--state", "lost")
		if r.code != 2 || !strings.Contains(r.stderr, "waiting, due, held, parked") {
			t.Errorf("--state lost: exit %d, %q; want 2 naming the states", r.code, r.stderr)
		}
		for _, args := range [][]string{
			{"list", "--limit", "0"},
			{"list", "--limit", "1001"},
			{"show"},
			{"delete"},
			{"redrive", "--once"},
			{"redrive", "--queue", "q", "--max-redrives", "0"},
			{"redrive", "--queue", "q", "--lease", "0"},
			{"frobnicate"},
		} {
			r = run(t, db.env, append([]string{"deadletter"}, args...)...)
			if r.code != 2 || r.stderr == "" {
				t.Errorf("deadletter %v: exit %d, %q; want 2 and why", args, r.code, r.stderr)
			}
		}
		// A port nothing listens on: a store error, exit 1.
		r = run(t, nil, "deadletter", "count", "--postgres", "postgres://postgres@"+freePort(t)+"/postgres?sslmode=disable&connect_timeout=5")
		if r.code != 1 || !strings.Contains(r.stderr, "cannot connect") {
			t.Errorf("unreachable database: exit %d, %q; want 1", r.code, r.stderr)
		}
	})
}
