package redis

import (
	"errors"

	"github.com/yaoki-go/yaoki/internal/configerr"
)

// ErrInvalidConfig matches the errors the constructors return for a
// configuration field that is missing or out of range; the message names
// the field, its value and what is accepted.
var ErrInvalidConfig = errors.New("redis: invalid configuration")

func invalid(field string, value any, want string) error {
	return configerr.Invalid(ErrInvalidConfig, field, value, want)
}
