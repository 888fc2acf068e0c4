package telemetry_test

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/yaoki-go/yaoki/cmd/yaoki/internal/telemetry"
)

// Without a flag nor OTLP's environment, nothing is set up: no observer,
// no metrics endpoint.
func ExampleFlags() {
	var tf telemetry.Flags
	cmd := &cobra.Command{Use: "demo", RunE: func(cmd *cobra.Command, _ []string) error {
		run, err := tf.Start(cmd, "demo")
		if err != nil {
			return err
		}
		defer run.Stop()
		fmt.Printf("observer %v, metrics URL %q\n", run.Observer != nil, run.URL)
		return nil
	}}
	tf.Register(cmd.Flags())
	cmd.SetErr(io.Discard)
	cmd.SetArgs(nil)
	if err := cmd.Execute(); err != nil {
		fmt.Println(err)
	}
	// Output: observer false, metrics URL ""
}
