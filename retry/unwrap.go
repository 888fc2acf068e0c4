package retry

// find walks err's tree (Unwrap() error and Unwrap() []error, depth first,
// as errors.As does) for the first error of type T. Unlike errors.As it
// needs no pointer to a target, so it allocates nothing: the loop asks it
// several questions about every failed attempt.
func find[T any](err error) (T, bool) {
	for err != nil {
		if t, ok := err.(T); ok {
			return t, true
		}
		switch x := err.(type) {
		case interface{ Unwrap() error }:
			err = x.Unwrap()
		case interface{ Unwrap() []error }:
			for _, e := range x.Unwrap() {
				if t, ok := find[T](e); ok {
					return t, true
				}
			}
			err = nil
		default:
			err = nil
		}
	}
	var zero T
	return zero, false
}
