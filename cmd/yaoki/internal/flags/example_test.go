package flags_test

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/yaoki-go/yaoki/cmd/yaoki/internal/flags"
)

// The policy flags of a command, and the policy they make.
func ExamplePolicy() {
	var pf flags.Policy
	cmd := &cobra.Command{Use: "demo", RunE: func(cmd *cobra.Command, _ []string) error {
		p, err := pf.Build(cmd)
		if err != nil {
			return err
		}
		fmt.Println(p.Source, p.Attempts(), p.Retry.Backoff.Base, p.ModeText())
		return nil
	}}
	pf.Register(cmd.Flags())
	cmd.SetArgs([]string{"--max-attempts", "5", "--base", "0.2"})
	if err := cmd.Execute(); err != nil {
		fmt.Println(err)
	}
	// Output: flags 5 200ms default (no AWS retry mode asked for)
}
