package policy_test

import "syscall"

var errConnReset error = syscall.ECONNRESET
