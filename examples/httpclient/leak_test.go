package main

import (
	"testing"

	"github.com/yaoki-go/yaoki/internal/leakcheck"
)

// TestMain fails the package's tests if they leave goroutines running (a
// server or a response body not closed, a loop still waiting).
func TestMain(m *testing.M) { leakcheck.Main(m) }
