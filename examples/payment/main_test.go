package main

import "testing"

func TestOneCharge(t *testing.T) {
	if n, err := run(false); err != nil || n != 2 {
		t.Fatalf("without the middleware: %d charges, %v; want 2 (the lost response's retry charges again)", n, err)
	}
	if n, err := run(true); err != nil || n != 1 {
		t.Fatalf("with the middleware: %d charges, %v; want 1", n, err)
	}
}
