package postgres_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/yaoki-go/yaoki/idempotency"
	"github.com/yaoki-go/yaoki/internal/faultproxy"
	"github.com/yaoki-go/yaoki/internal/idemproc"
	"github.com/yaoki-go/yaoki/postgres"
	"github.com/yaoki-go/yaoki/postgres/pgtest"
)

// The fault-injection suite of the PostgreSQL idempotency store (go test
// -run Fault): each test injects one fault against a real PostgreSQL and
// checks the handler's runs and every client's answers; the scenarios are
// in internal/idemproc. (TestFaultAtomicKill covers postgres.Atomic.)

func pgFaults(t *testing.T) (idemproc.Faults, *pgtest.Server) {
	srv, _ := start(t)
	return idemproc.Faults{
		Target:    fmt.Sprintf("127.0.0.1:%d", srv.Port),
		ChildAddr: srv.DSN,
		Open: func(t *testing.T, addr string) idempotency.Store {
			return postgres.NewIdempotencyStore(newPool(t, "postgres://postgres@"+addr+"/postgres?sslmode=disable&connect_timeout=2", 4))
		},
	}, srv
}

// TestFaultPostgresRestartAtComplete: PostgreSQL stops as the handler
// returns (its connections end with 57P01) and starts again 1.5 s later:
// Complete gets through once it is back.
func TestFaultPostgresRestartAtComplete(t *testing.T) {
	f, srv := pgFaults(t)
	idemproc.OutageAtComplete(t, f.Open(t, f.Target), idemproc.FaultLease, srv.Stop, func() {
		if err := srv.Resume(); err != nil {
			t.Errorf("restart PostgreSQL: %v", err)
		}
	}, 1500*time.Millisecond)
}

// TestFaultPostgresLinkCutAtComplete: the link is cut for 1.5 s as the
// handler returns (lease 3 s).
func TestFaultPostgresLinkCutAtComplete(t *testing.T) {
	f, _ := pgFaults(t)
	px := faultproxy.New(t, f.Target)
	idemproc.OutageAtComplete(t, f.Open(t, px.Addr), idemproc.FaultLease, px.Down, px.Up, 1500*time.Millisecond)
}

// TestFaultPostgresLostBeginReply: the claim was made but its reply lost:
// the request gets 503 and its claim is released, so that the client's
// retry runs at once rather than meeting 409 until the lease passes.
func TestFaultPostgresLostBeginReply(t *testing.T) {
	f, _ := pgFaults(t)
	idemproc.LostBeginReply(t, f)
}

func TestFaultPostgresLostCompleteReply(t *testing.T) {
	f, _ := pgFaults(t)
	idemproc.LostCompleteReply(t, f)
}

func TestFaultPostgresHolderCutOff(t *testing.T) {
	f, _ := pgFaults(t)
	idemproc.HolderCutOff(t, f)
}

func TestFaultPostgresKill(t *testing.T) {
	f, _ := pgFaults(t)
	for _, step := range []string{idemproc.StepClaimed, idemproc.StepHandled, idemproc.StepCompleted} {
		t.Run(step, func(t *testing.T) { idemproc.KillAt(t, f, step) })
	}
}

// TestScopeNotUTF8Postgres: a scope that the text column cannot hold is
// refused with 400 before the store is asked (it was a 503 from the
// database, which a retry cannot fix).
func TestScopeNotUTF8Postgres(t *testing.T) {
	_, pool := start(t)
	m, err := idempotency.New(idempotency.Config{
		Store: postgres.NewIdempotencyStore(pool),
		Scope: func(r *http.Request) string { return r.Header.Get("X-Principal") },
	})
	if err != nil {
		t.Fatal(err)
	}
	r := httptest.NewRequest("POST", "/x", strings.NewReader("{}"))
	r.Header.Set("Idempotency-Key", "k")
	r.Header.Set("X-Principal", "caf\xe9")
	w := httptest.NewRecorder()
	m.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(201) })).ServeHTTP(w, r)
	if w.Code != http.StatusBadRequest || !strings.Contains(w.Body.String(), idempotency.ReasonScopeMalformed) {
		t.Fatalf("scope not UTF-8: %d %s, want 400 %s", w.Code, w.Body, idempotency.ReasonScopeMalformed)
	}
}
