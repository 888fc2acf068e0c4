package idempotency_test

import (
	"bytes"
	"errors"
	"net/http"
	"reflect"
	"testing"

	"github.com/yaoki-go/yaoki/idempotency"
)

func TestResponseEncoding(t *testing.T) {
	for _, r := range []idempotency.Response{
		{Status: 201, Header: http.Header{"Content-Type": {"application/json"}, "Set-Cookie": {"a=1", "b=2"}, "X-Empty": {""}}, Body: []byte(`{"ok":true}`), Size: 11},
		{Status: 204},
		{Status: 200, Header: http.Header{"A": {}}, Omitted: true, Size: 5 << 30},
	} {
		b, err := r.MarshalBinary()
		if err != nil {
			t.Fatal(err)
		}
		var got idempotency.Response
		if err := got.UnmarshalBinary(b); err != nil {
			t.Fatalf("UnmarshalBinary(MarshalBinary(%+v)): %v", r, err)
		}
		if got.Status != r.Status || got.Omitted != r.Omitted || got.Size != r.Size || !bytes.Equal(got.Body, r.Body) ||
			len(got.Header) != len(r.Header) || len(r.Header) > 0 && !reflect.DeepEqual(got.Header, r.Header) {
			t.Errorf("round trip:\n got %+v\nwant %+v", got, r)
		}
		b2, _ := got.MarshalBinary()
		if !bytes.Equal(b, b2) {
			t.Errorf("encoding not stable: %x then %x", b, b2)
		}
	}
	var r idempotency.Response
	for _, bad := range [][]byte{nil, {2}, {1}, {1, 0xc8, 1}, {1, 0xc8, 1, 2, 0}, {1, 0xc8, 1, 0, 5, 1}, {1, 0xc8, 1, 0, 1, 3, 'a'}} {
		if err := r.UnmarshalBinary(bad); !errors.Is(err, idempotency.ErrBadEncoding) {
			t.Errorf("UnmarshalBinary(%x) = %v, want ErrBadEncoding", bad, err)
		}
	}
}

func FuzzResponseEncoding(f *testing.F) {
	good, _ := idempotency.Response{Status: 200, Header: http.Header{"A": {"b"}}, Body: []byte("x")}.MarshalBinary()
	f.Add(good)
	f.Add([]byte{1, 0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		var r idempotency.Response
		if err := r.UnmarshalBinary(b); err != nil {
			if !errors.Is(err, idempotency.ErrBadEncoding) {
				t.Fatalf("error %v does not match ErrBadEncoding", err)
			}
			return
		}
		again, _ := r.MarshalBinary()
		var r2 idempotency.Response
		if err := r2.UnmarshalBinary(again); err != nil || r2.Status != r.Status || !bytes.Equal(r2.Body, r.Body) || len(r2.Header) != len(r.Header) {
			t.Fatalf("re-encoding %+v: %+v, %v", r, r2, err)
		}
	})
}
