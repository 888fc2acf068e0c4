package childproc_test

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"

	"github.com/yaoki-go/yaoki/internal/childproc"
)

// A test starts a helper process that must not outlive it, on a port it
// chose free: FreePort gives the port, DieWithParent (before Start) has the
// process killed with the test's. Here the port is listened on in this
// process, and the helper is the test binary itself, run again to list its
// examples.
func Example() {
	port, err := childproc.FreePort()
	if err != nil {
		fmt.Println(err)
		return
	}
	l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("listening on the free port:", l.Addr().(*net.TCPAddr).Port == port)
	_ = l.Close()

	exe, err := os.Executable()
	if err != nil {
		fmt.Println(err)
		return
	}
	cmd := exec.Command(exe, "-test.list=^Example$")
	childproc.DieWithParent(cmd)
	out, err := cmd.Output()
	fmt.Printf("the child printed %q, error %v\n", out, err)
	// Output:
	// listening on the free port: true
	// the child printed "Example\n", error <nil>
}
