// Package pgtest starts a real PostgreSQL server for tests, from the
// machine's Debian binaries (initdb and postgres under
// /usr/lib/postgresql/*/bin): a new cluster in a temporary directory,
// listening on a free loopback port (and a unix socket in that directory),
// stopped and removed when the test ends. Start skips the test with a
// message (NotInstalled) when the binaries are not installed (apt-get
// install postgresql; .ci/run installs them).
//
// It is for tests only: the postgres module's own, and those of other
// modules of the repository (the yaoki command's end-to-end tests) that need
// a database.
//
// PostgreSQL refuses to run as root: when the test runs as root, the server
// runs as the "postgres" user (or "nobody") and its directory belongs to
// that user.
package pgtest

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/yaoki-go/yaoki/internal/childproc"
)

// Server is a running PostgreSQL server. Its fields are read-only; Close
// and Restart must not run concurrently with each other (a test's cleanup
// does Close). Any number of clients may use the server at once.
type Server struct {
	// DSN connects to its "postgres" database as the "postgres" superuser
	// over TCP on loopback, without a password.
	DSN string
	// Port is the loopback TCP port it listens on.
	Port int
	// Addr is 127.0.0.1:Port, for a client or a proxy (internal/faultproxy)
	// that takes a host:port.
	Addr string

	bin  string // directory of the binaries
	dir  string // cluster directory (data/ and the socket)
	cred *syscall.Credential
	cmd  *exec.Cmd
	out  *bytes.Buffer
	done chan struct{}
}

// BinDir returns the directory of the newest installed PostgreSQL's
// binaries, or "" when none is installed.
func BinDir() string {
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	var ok []string
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Join(d, "postgres")); err == nil {
			if _, err := os.Stat(filepath.Join(d, "initdb")); err == nil {
				ok = append(ok, d)
			}
		}
	}
	if len(ok) == 0 {
		return ""
	}
	slices.SortFunc(ok, func(a, b string) int { return version(a) - version(b) })
	return ok[len(ok)-1]
}

func version(binDir string) int {
	n, _ := strconv.Atoi(filepath.Base(filepath.Dir(binDir)))
	return n
}

// Start creates a cluster and starts its server for tb, or skips tb when
// PostgreSQL is not installed. Everything is stopped and removed when tb
// ends.
func Start(tb testing.TB) *Server {
	tb.Helper()
	if BinDir() == "" {
		tb.Skip(NotInstalled)
	}
	s, err := Open()
	if err != nil {
		tb.Fatalf("pgtest: %v", err)
	}
	tb.Cleanup(s.Close)
	return s
}

// NotInstalled is the message of a test skipped because PostgreSQL is not
// installed.
const NotInstalled = "pgtest: PostgreSQL is not installed (apt-get install postgresql); skipping the PostgreSQL integration test"

// Open creates a cluster and starts its server, for code that has no
// testing.TB (an Example, through TestMain). The caller must Close it. It
// fails when PostgreSQL is not installed (BinDir returns "").
func Open() (*Server, error) {
	bin := BinDir()
	if bin == "" {
		return nil, fmt.Errorf("PostgreSQL is not installed (apt-get install postgresql)")
	}
	s := &Server{bin: bin}
	var err error
	if s.cred, err = credential(); err != nil {
		return nil, err
	}
	if s.dir, err = os.MkdirTemp("", "yaoki-pgtest-"); err != nil {
		return nil, err
	}
	if err := s.open(); err != nil {
		_ = os.RemoveAll(s.dir)
		return nil, err
	}
	return s, nil
}

func (s *Server) open() error {
	if s.cred != nil {
		if err := os.Chown(s.dir, int(s.cred.Uid), int(s.cred.Gid)); err != nil {
			return err
		}
	}
	initdb := exec.Command(filepath.Join(s.bin, "initdb"), "-D", filepath.Join(s.dir, "data"), "-U", "postgres",
		"--auth=trust", "-E", "UTF8", "--locale=C", "--no-sync")
	initdb.SysProcAttr = &syscall.SysProcAttr{Credential: s.cred}
	initdb.Dir = s.dir
	if out, err := initdb.CombinedOutput(); err != nil {
		return fmt.Errorf("initdb: %v\n%s", err, out)
	}
	var err error
	for range 5 { // a free port may be taken between choosing and binding it
		if s.Port, err = childproc.FreePort(); err != nil {
			return err
		}
		if err = s.start(); err == nil {
			break
		}
	}
	if err != nil {
		return err
	}
	s.Addr = fmt.Sprintf("127.0.0.1:%d", s.Port)
	s.DSN = "postgres://postgres@" + s.Addr + "/postgres?sslmode=disable"
	return nil
}

// Close stops the server (fast shutdown) and removes its directory.
func (s *Server) Close() {
	s.stop()
	_ = os.RemoveAll(s.dir)
}

// credential returns whom to run the server as: nil when the test does not
// run as root, else the postgres user, else nobody.
func credential() (*syscall.Credential, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	for _, name := range []string{"postgres", "nobody"} {
		u, err := user.Lookup(name)
		if err != nil {
			continue
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, nil
	}
	return nil, fmt.Errorf("running as root and neither user postgres nor nobody exists to run PostgreSQL as")
}

func (s *Server) start() error {
	s.out = &bytes.Buffer{}
	s.cmd = exec.Command(filepath.Join(s.bin, "postgres"), "-D", filepath.Join(s.dir, "data"),
		"-h", "127.0.0.1", "-p", strconv.Itoa(s.Port), "-k", s.dir,
		"-c", "fsync=off", "-c", "max_connections=200", "-c", "shared_buffers=32MB",
		"-c", "logging_collector=off", "-c", "log_min_messages=warning")
	s.cmd.SysProcAttr = &syscall.SysProcAttr{Credential: s.cred, Setpgid: true}
	s.cmd.Dir = s.dir
	s.cmd.Stdout, s.cmd.Stderr = s.out, s.out
	childproc.DieWithParent(s.cmd)
	if err := s.cmd.Start(); err != nil {
		return fmt.Errorf("start postgres: %w", err)
	}
	s.done = make(chan struct{})
	go func(cmd *exec.Cmd, done chan struct{}) { _ = cmd.Wait(); close(done) }(s.cmd, s.done)
	dsn := fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable&connect_timeout=2", s.Port)
	deadline := time.Now().Add(60 * time.Second)
	for {
		select {
		case <-s.done:
			return fmt.Errorf("postgres exited: %s", s.out)
		default:
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		conn, err := pgx.Connect(ctx, dsn)
		if err == nil {
			err = conn.Ping(ctx)
			_ = conn.Close(ctx)
		}
		cancel()
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			s.kill()
			return fmt.Errorf("postgres on port %d not ready within 60 s: %v: %s", s.Port, err, s.out)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// stop asks for a fast shutdown (SIGINT: clients are disconnected, every
// committed transaction is on disk) and waits for it, killing the server if
// it takes more than 30 s.
func (s *Server) stop() {
	if s.cmd == nil {
		return
	}
	_ = s.cmd.Process.Signal(syscall.SIGINT)
	select {
	case <-s.done:
	case <-time.After(30 * time.Second):
		s.kill()
	}
	s.cmd = nil
}

func (s *Server) kill() {
	_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL) // its process group: the backends too
	<-s.done
}

// Stop stops the server (fast shutdown: clients are disconnected, what was
// committed is kept), for a test of what clients do while it is down.
// Resume starts it again. Stop, Resume, Restart and Close must not run
// concurrently.
func (s *Server) Stop() { s.stop() }

// Crash kills the server and its backends with SIGKILL, without a
// shutdown: what they held in memory is gone (WAL not yet written out, as
// asynchronous commits leave it), what they wrote to the files stays, and
// the next start runs crash recovery. Resume starts it again.
func (s *Server) Crash() {
	if s.cmd == nil {
		return
	}
	s.kill()
	s.cmd = nil
}

// Resume starts a stopped server again on the same port and data, and
// waits until it accepts connections.
func (s *Server) Resume() error {
	if s.cmd != nil {
		return fmt.Errorf("pgtest: resume: the server on port %d is running", s.Port)
	}
	return s.start()
}

// Restart stops the server (fast shutdown) and starts it again on the same
// port and data: what was committed is still there.
func (s *Server) Restart(tb testing.TB) {
	tb.Helper()
	s.stop()
	if err := s.start(); err != nil {
		tb.Fatalf("pgtest: restart: %v", err)
	}
}
