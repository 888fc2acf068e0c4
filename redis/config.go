package redis

import (
	"errors"
	"fmt"
)

// ErrInvalidConfig matches the errors the constructors return for a
// configuration field that is missing or out of range.
var ErrInvalidConfig = errors.New("redis: invalid configuration")

// ConfigError is a configuration field missing or out of range: it names
// the field, its value and what is accepted. errors.Is(err,
// ErrInvalidConfig) is true.
type ConfigError struct {
	Field string // e.g. "BreakerConfig.Client"
	Value any    // the value given
	Want  string // what is accepted, in words
}

func (e *ConfigError) Error() string {
	return fmt.Sprintf("redis: %s %v not accepted: want %s", e.Field, e.Value, e.Want)
}

// Is matches ErrInvalidConfig.
func (e *ConfigError) Is(target error) bool { return target == ErrInvalidConfig }
