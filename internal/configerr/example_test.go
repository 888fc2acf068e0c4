package configerr_test

import (
	"errors"
	"fmt"
	"time"

	"github.com/yaoki-go/yaoki/internal/configerr"
)

// A package exports its sentinel and builds every rejection with Invalid; a
// package that holds another's configuration re-roots its errors with In.
func Example() {
	errBackoff := errors.New("backoff: invalid configuration")
	errRetry := errors.New("retry: invalid configuration")

	err := configerr.In(errRetry, "Backoff", configerr.Invalid(errBackoff, "Cap", -time.Second, "≥ 0 (0 means 20s)"))
	fmt.Println(err)
	fmt.Println(errors.Is(err, errRetry), errors.Is(err, errBackoff))
	// Output:
	// retry: invalid configuration: Backoff.Cap: -1s out of range; want ≥ 0 (0 means 20s)
	// true true
}
