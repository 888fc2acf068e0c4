package hedge_test

import (
	"testing"

	"github.com/yaoki-go/yaoki/internal/leakcheck"
)

// TestMain fails the package's tests if they leave goroutines running.
func TestMain(m *testing.M) { leakcheck.Main(m) }
