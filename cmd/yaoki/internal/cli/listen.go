package cli

import (
	"net"
	"strconv"
	"strings"
)

// ListenAddr checks addr, the value of the listening address flag named
// flag ("--listen"): HOST:PORT, with a port from 0 to 65535 (0: any free
// port; a service name such as http is left to net.Listen). Its error is
// a usage error that says what is accepted, where net.Listen's would come
// only once the command runs, and read as a port already taken.
func ListenAddr(flag, addr string) error {
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return Usagef("%s %q: want HOST:PORT such as 127.0.0.1:8080 (port 0: any free port)", flag, addr)
	}
	if port != "" && strings.Trim(port, "0123456789") == "" {
		if _, err := strconv.ParseUint(port, 10, 16); err != nil {
			return Usagef("%s %q: port %q: want a port from 0 to 65535 (0: any free port)", flag, addr, port)
		}
	}
	return nil
}
