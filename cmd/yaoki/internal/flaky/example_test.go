package flaky_test

import (
	"bufio"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/yaoki-go/yaoki/cmd/yaoki/internal/flaky"
)

// A server that answers 503 with Retry-After, then 200, and stops after
// two requests.
func ExampleNewCommand() {
	pr, pw := io.Pipe()
	cmd := flaky.NewCommand()
	cmd.SetOut(pw)
	cmd.SetErr(io.Discard)
	cmd.SetArgs([]string{"--addr", "127.0.0.1:0", "--script", "503:retry-after=1,200", "--max-requests", "2"})
	done := make(chan error, 1)
	go func() { done <- cmd.Execute(); pw.Close() }()

	url, err := bufio.NewReader(pr).ReadString('\n') // the first line is its URL
	if err != nil {
		fmt.Println(err)
		return
	}
	go io.Copy(io.Discard, pr)
	for range 2 {
		resp, err := http.Get(strings.TrimSpace(url))
		if err != nil {
			fmt.Println(err)
			return
		}
		resp.Body.Close()
		fmt.Printf("%d Retry-After: %q\n", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	fmt.Println(<-done)
	// Output:
	// 503 Retry-After: "1"
	// 200 Retry-After: ""
	// <nil>
}
