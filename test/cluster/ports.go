package cluster

import (
	"fmt"
	"net"
	"strconv"
)

// FreePorts asks the kernel for n unused loopback ports, holding every
// listener until all are chosen so no port is handed out twice.
func FreePorts(n int) ([]int, error) {
	var listeners []net.Listener
	defer func() {
		for _, l := range listeners {
			l.Close()
		}
	}()
	ports := make([]int, 0, n)
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("finding a free port: %w", err)
		}
		listeners = append(listeners, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// Loopback is 127.0.0.1:port.
func Loopback(port int) string {
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
}
