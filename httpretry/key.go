package httpretry

import "crypto/rand"

// NewKey returns a new Idempotency-Key: a random UUID (RFC 9562, version
// 4) from crypto/rand, in its 36-character text form, e.g.
// "0b5c6f4e-8d9a-4c1e-9f3a-2d7e1b6a8c40". It is what the Transport sends
// when IdempotencyKey is KeyAuto; callers that set their own key can use it
// too. It is safe for concurrent use.
func NewKey() string {
	var u [16]byte
	rand.Read(u[:])         // never fails (crypto/rand's Read panics rather than return an error)
	u[6] = u[6]&0x0f | 0x40 // version 4
	u[8] = u[8]&0x3f | 0x80 // variant 10 (RFC 9562)
	const hex = "0123456789abcdef"
	var b [36]byte
	j := 0
	for i, c := range u {
		if i == 4 || i == 6 || i == 8 || i == 10 {
			b[j] = '-'
			j++
		}
		b[j], b[j+1] = hex[c>>4], hex[c&0x0f]
		j += 2
	}
	return string(b[:])
}
