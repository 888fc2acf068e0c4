package deadlettercli_test

import (
	"fmt"

	"github.com/yaoki-go/yaoki/cmd/yaoki/internal/deadlettercli"
)

// The subcommands of yaoki deadletter.
func ExampleNewCommand() {
	for _, sub := range deadlettercli.NewCommand().Commands() {
		fmt.Println(sub.Name())
	}
	// Output:
	// count
	// delete
	// list
	// migrate
	// redrive
	// requeue
	// show
}
