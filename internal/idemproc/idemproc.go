// Package idemproc runs the idempotency middleware in a separate process,
// so that the store tests can kill the process that holds a key or wrote a
// record and start another one: the test binary runs itself again as a
// child server (Main, called from the test's TestMain) and the test drives
// it (Start).
//
// A child serves, on a loopback port it prints on its first line of output:
//
//	POST /charges  201 {"charge":"ch_...","pid":N}
//	POST /hang     the same, except in a child started with Hang: then it
//	               never answers (until the process is killed)
//
// behind the middleware over the store the test names, with the lease and a
// clock offset that the test gives (so that a child can act "after the
// lease" without the test waiting for it). A child may stop a request for
// good at a named step (Options.Pause) for the test to kill it there, and
// record each run of its handler in a file (Options.Runs).
//
// The fault scenarios (faults.go) are shared by the redis and postgres
// modules' fault-injection suites: each injects one fault (a link cut or a
// lost reply through internal/faultproxy, a server stopped and started, a
// process killed at a step) and checks the handler's runs and every
// client's answer.
package idemproc

import (
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/yaoki-go/yaoki/header"
	"github.com/yaoki-go/yaoki/idempotency"
)

// Environment of a child.
const (
	envChild  = "YAOKI_IDEMPROC_CHILD" // the child's store address (set: run as a child)
	envLease  = "YAOKI_IDEMPROC_LEASE"
	envOffset = "YAOKI_IDEMPROC_CLOCK_OFFSET"
	envHang   = "YAOKI_IDEMPROC_HANG"
	envPause  = "YAOKI_IDEMPROC_PAUSE" // the step at which a request stops for good
	envRuns   = "YAOKI_IDEMPROC_RUNS"  // the file each handler run appends a line to
)

// Main runs a child server when the process was started by Start, and
// never returns then; otherwise it returns at once. Call it first in
// TestMain; open builds the store from the address given to Start.
func Main(open func(addr string) (idempotency.Store, error)) {
	RunChild(envChild, "idemproc child", func(addr string) error { return serve(addr, open) })
}

// RunChild is how a test's TestMain becomes the child that Spawn started:
// when the variable env is set, it runs serve with its value and exits (2,
// after printing serve's error after what, when serve fails); otherwise it
// returns at once.
func RunChild(env, what string, serve func(value string) error) {
	v, ok := os.LookupEnv(env)
	if !ok {
		return
	}
	if err := serve(v); err != nil {
		fmt.Fprintln(os.Stderr, what+":", err)
		os.Exit(2)
	}
	os.Exit(0)
}

// Serve is the child's side of Spawn: it listens on a loopback port,
// prints "listening URL" as its first line of output, and serves h until
// the process ends.
func Serve(h http.Handler) error {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	fmt.Printf("listening http://%s\n", l.Addr())
	return http.Serve(l, h)
}

// Pause stops the calling goroutine of a child for good at a named step,
// after printing "paused STEP" (what WaitLine waits for), for the test to
// kill the process there.
func Pause(step string) {
	fmt.Printf("paused %s\n", step)
	select {} // until the test kills the process
}

func serve(addr string, open func(string) (idempotency.Store, error)) error {
	store, err := open(addr)
	if err != nil {
		return err
	}
	lease, err := time.ParseDuration(os.Getenv(envLease))
	if err != nil {
		return fmt.Errorf("lease: %w", err)
	}
	offset, err := time.ParseDuration(os.Getenv(envOffset))
	if err != nil {
		return fmt.Errorf("clock offset: %w", err)
	}
	hang := os.Getenv(envHang) == "1"
	if step := os.Getenv(envPause); step != "" {
		store = &pausing{Store: store, at: step}
	}
	runs := os.Getenv(envRuns)
	var runsMu sync.Mutex
	m, err := idempotency.New(idempotency.Config{
		Store:    store,
		Lease:    lease,
		Now:      func() time.Time { return time.Now().Add(offset) },
		ErrorLog: log.New(os.Stderr, "idemproc child: ", 0),
	})
	if err != nil {
		return err
	}
	pid := os.Getpid()
	charge := func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		id := "ch_" + rand.Text()
		if runs != "" { // the effect, seen by the test across processes
			if err := appendLine(&runsMu, runs, fmt.Sprintf("%s %d", id, pid)); err != nil {
				http.Error(w, err.Error(), http.StatusInternalServerError)
				return
			}
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		fmt.Fprintf(w, `{"charge":"%s","pid":%d}`, id, pid)
	}
	mux := http.NewServeMux()
	mux.Handle("POST /charges", m.Require(http.HandlerFunc(charge)))
	mux.Handle("POST /hang", m.Require(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if hang {
			select {} // until the process is killed
		}
		charge(w, r)
	})))
	return Serve(mux)
}

// Options of a child.
type Options struct {
	// Addr is the store's address, passed to Main's open.
	Addr string
	// Lease is the middleware's lease. Zero: idempotency.DefaultLease.
	Lease time.Duration
	// ClockOffset is added to the child's clock.
	ClockOffset time.Duration
	// Hang makes POST /hang never answer.
	Hang bool
	// Pause names the step at which a keyed request stops for good,
	// after the child prints "paused STEP", for the test to kill the
	// process there: "claimed" (Begin claimed the key; the handler has not
	// run), "handled" (the handler ran; Complete has not been sent),
	// "completed" (Complete stored the response; the client has not got
	// it). Empty: none.
	Pause string
	// Runs is a file to which each run of the handler appends a line
	// (charge id and pid) before it answers: the handler's effect, which
	// survives the process. Empty: none.
	Runs string
}

// Child is a child server.
type Child struct {
	URL   string
	Pid   int
	cmd   *exec.Cmd
	done  chan struct{}
	lines chan string // the lines printed after the first, for WaitLine
}

// Start runs the test binary again as a child server with o, waits until
// it listens, and kills it when t ends (if Kill did not before).
func Start(t *testing.T, o Options) *Child {
	t.Helper()
	if o.Lease == 0 {
		o.Lease = idempotency.DefaultLease
	}
	return Spawn(t,
		envChild+"="+o.Addr,
		envLease+"="+o.Lease.String(),
		envOffset+"="+o.ClockOffset.String(),
		envHang+"="+map[bool]string{true: "1", false: "0"}[o.Hang],
		envPause+"="+o.Pause,
		envRuns+"="+o.Runs)
}

// Kill kills the child at once (SIGKILL: no handler, defer or cleanup runs
// in it) and waits until it is gone.
func (c *Child) Kill() {
	_ = c.cmd.Process.Kill()
	<-c.done
}

// Post sends POST path with key and body to the child and returns the
// status, the body and the replay header. ctx bounds it.
func (c *Child) Post(ctx context.Context, client *http.Client, path, key, body string) (int, string, string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.URL+path, strings.NewReader(body))
	if err != nil {
		return 0, "", "", err
	}
	req.Header.Set(header.IdempotencyKey, key)
	resp, err := client.Do(req)
	if err != nil {
		return 0, "", "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), resp.Header.Get(header.IdempotentReplayed), err
}

// The steps at which a child may pause (Options.Pause).
const (
	StepClaimed   = "claimed"
	StepHandled   = "handled"
	StepCompleted = "completed"
)

// pausing stops the request at its step: a store in front of the child's
// own, so that the middleware runs unchanged.
type pausing struct {
	idempotency.Store
	at string
}

func (p *pausing) Begin(ctx context.Context, id idempotency.ID, fp idempotency.Fingerprint, token string, now time.Time, lease time.Duration) (idempotency.Record, bool, error) {
	rec, claimed, err := p.Store.Begin(ctx, id, fp, token, now, lease)
	if claimed && p.at == StepClaimed {
		Pause(StepClaimed)
	}
	return rec, claimed, err
}

func (p *pausing) Complete(ctx context.Context, id idempotency.ID, token string, resp idempotency.Response, now time.Time, ttl time.Duration) error {
	if p.at == StepHandled {
		Pause(StepHandled)
	}
	err := p.Store.Complete(ctx, id, token, resp, now, ttl)
	if err == nil && p.at == StepCompleted {
		Pause(StepCompleted)
	}
	return err
}

// appendLine appends line to the file at path; mu serialises the
// process's appends.
func appendLine(mu *sync.Mutex, path, line string) error {
	mu.Lock()
	defer mu.Unlock()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.WriteString(line + "\n"); err != nil {
		_ = f.Close()
		return err
	}
	return f.Sync()
}

// Runs returns the lines of a runs file (Options.Runs): one per run of
// the handler, in any child.
func Runs(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	return strings.Fields(strings.ReplaceAll(strings.TrimSpace(string(b)), " ", "_"))
}
