package httpletter_test

import (
	"testing"

	"github.com/yaoki-go/yaoki/internal/leakcheck"
)

func TestMain(m *testing.M) { leakcheck.Main(m) }
