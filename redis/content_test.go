package redis_test

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	goredis "github.com/redis/go-redis/v9"

	"github.com/yaoki-go/yaoki/idempotency"
	"github.com/yaoki-go/yaoki/redis"
	"github.com/yaoki-go/yaoki/redis/internal/redistest"
)

// TestIdempotencyContent: what a record holds comes back byte for byte,
// on one server and on a cluster (where a key's braces pick its slot):
// binary answers, every byte value among them, of exactly
// Config.MaxResponseBytes (1 MiB) for one key; header fields whose names are not in canonical
// form, one name in two spellings; keys with braces, quotes, backslashes and
// a comma (sent quoted), and one of MaxKeyLen bytes; scopes with a colon and
// with letters outside ASCII. Each (scope, key) runs its handler once and
// replays its own answer, never another's; an answer one byte over the
// limit is sent whole and answered 410 on the retry.
func TestIdempotencyContent(t *testing.T) {
	for _, tc := range []struct {
		name   string
		client func(t *testing.T) goredis.UniversalClient
	}{
		{"server", func(t *testing.T) goredis.UniversalClient { return redistest.Start(t).Client(t) }},
		{"cluster", func(t *testing.T) goredis.UniversalClient { return redistest.StartCluster(t).ClusterClient(t) }},
	} {
		t.Run(tc.name, func(t *testing.T) { content(t, redis.NewIdempotencyStore(tc.client(t), redis.IdempotencyConfig{})) })
	}
}

// answerBody is the body of the n-th run for scope and key: size
// pseudo-random bytes drawn from them, so that two runs, scopes or keys
// never share one.
func answerBody(scope, key string, n int64, size int) []byte {
	seed := sha256.Sum256([]byte(strconv.Quote(scope) + strconv.Quote(key) + strconv.FormatInt(n, 10)))
	b := make([]byte, size)
	_, _ = rand.NewChaCha8(seed).Read(b)
	for i := range 256 { // every byte value, NUL and 0xff among them
		b[i] = byte(i)
	}
	return b
}

func content(t *testing.T, store *redis.IdempotencyStore) {
	m, err := idempotency.New(idempotency.Config{Store: store, Scope: func(r *http.Request) string { return r.Header.Get("X-Principal") }})
	if err != nil {
		t.Fatal(err)
	}
	var runs atomic.Int64
	h := m.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := runs.Add(1)
		key, _ := idempotency.ParseKey(r.Header.Get("Idempotency-Key"))
		size := 4 << 10
		if r.URL.Query().Has("full") { // the most the middleware keeps
			size = idempotency.DefaultMaxResponseBytes
		}
		body := answerBody(r.Header.Get("X-Principal"), key, n, size)
		if r.URL.Query().Has("over") {
			body = append(body, 'x')
		}
		w.Header()["x-odd-CASE"] = []string{"a", "b"}
		w.Header()["X-Odd-Case"] = []string{"c"}
		w.Header()["content-type"] = []string{"application/octet-stream"}
		w.WriteHeader(http.StatusCreated)
		_, _ = w.Write(body)
	}))
	target := func(key string) string { // the answers of one key fill the limit
		if key == "{tag}pay" {
			return "/pay?full"
		}
		return "/pay"
	}
	send := func(scope, key, target string) *httptest.ResponseRecorder {
		req := httptest.NewRequest(http.MethodPost, target, strings.NewReader(`{"amount":1}`))
		req.Header.Set("Idempotency-Key", key)
		req.Header.Set("X-Principal", scope)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec
	}
	keys := map[string]string{ // as sent: the key
		"{tag}pay":                                 "{tag}pay",
		`"a,b {x} \"q\" \\"`:                       `a,b {x} "q" \`,
		"*?[]^$~!@#%&()+=|;:'<>./`":                "*?[]^$~!@#%&()+=|;:'<>./`",
		strings.Repeat("k", idempotency.MaxKeyLen): strings.Repeat("k", idempotency.MaxKeyLen),
	}
	scopes := []string{"", "al:ice", "ünï:cødé"}
	bodies := map[string][]byte{} // scope and key: the first answer's body
	for _, scope := range scopes {
		for sent, key := range keys {
			first := send(scope, sent, target(key))
			if first.Code != http.StatusCreated || first.Header().Get("Idempotent-Replayed") != "" {
				t.Fatalf("scope %q, key %q: first request %d (replayed %q); want its own run", scope, key, first.Code, first.Header().Get("Idempotent-Replayed"))
			}
			bodies[scope+"\x00"+key] = first.Body.Bytes()
		}
	}
	if n := runs.Load(); n != int64(len(scopes)*len(keys)) {
		t.Fatalf("%d runs for %d scopes × %d keys; want one each", n, len(scopes), len(keys))
	}
	for _, scope := range scopes {
		for sent, key := range keys {
			again := send(scope, sent, target(key))
			want := bodies[scope+"\x00"+key]
			switch {
			case again.Code != http.StatusCreated || again.Header().Get("Idempotent-Replayed") != "true":
				t.Fatalf("scope %q, key %q: retry %d (replayed %q); want the replay", scope, key, again.Code, again.Header().Get("Idempotent-Replayed"))
			case !bytes.Equal(again.Body.Bytes(), want):
				t.Fatalf("scope %q, key %q: the replayed body (%d bytes) differs from the first answer's (%d bytes)", scope, key, again.Body.Len(), len(want))
			case fmt.Sprint(again.Header()["x-odd-CASE"], again.Header()["X-Odd-Case"], again.Header()["content-type"]) != "[a b] [c] [application/octet-stream]":
				t.Fatalf("scope %q, key %q: replayed fields %v; want x-odd-CASE [a b], X-Odd-Case [c], content-type as the handler spelled them", scope, key, again.Header())
			case again.Header().Get("Content-Length") != strconv.Itoa(len(want)):
				t.Fatalf("scope %q, key %q: Content-Length %q; want %d", scope, key, again.Header().Get("Content-Length"), len(want))
			}
		}
	}
	over := send("alice", "over", "/pay?full&over")
	if over.Code != http.StatusCreated || over.Body.Len() != idempotency.DefaultMaxResponseBytes+1 {
		t.Fatalf("an answer one byte over the limit: %d, %d bytes; want 201 with the whole body", over.Code, over.Body.Len())
	}
	if again := send("alice", "over", "/pay?full&over"); again.Code != http.StatusGone || !strings.Contains(again.Body.String(), "response_too_large") {
		t.Fatalf("retry of an answer over the limit: %d %s; want 410 response_too_large", again.Code, again.Body)
	}
	if n := runs.Load(); n != int64(len(scopes)*len(keys)+1) {
		t.Fatalf("%d runs; want %d (the retries replayed)", n, len(scopes)*len(keys)+1)
	}
}
