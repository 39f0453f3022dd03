package main

import (
	"fmt"
	"net"
	"os"
)

// udpSocket is the UDP socket inherited as file descriptor fd (-udp-fd):
// one its supervisor holds across restarts and crashes (systemd's socket
// activation passes it as fd 3; internal/lbtest's rig does the same), so
// that the server's address never closes between two processes
// (docs/deploy.md, "Fleet": nginx stops relaying a flow's answers after an
// ICMP port unreachable). The descriptor is duplicated and closed: the
// returned socket is the server's own copy.
func udpSocket(fd int) (net.PacketConn, error) {
	if fd < 3 {
		return nil, fmt.Errorf("-udp-fd %d: descriptors 0 to 2 are stdin, stdout and stderr; an inherited socket is 3 or more", fd)
	}
	f := os.NewFile(uintptr(fd), fmt.Sprintf("udp-fd-%d", fd))
	if f == nil {
		return nil, fmt.Errorf("-udp-fd %d: not an open descriptor", fd)
	}
	defer f.Close()
	pc, err := net.FilePacketConn(f)
	if err != nil {
		return nil, fmt.Errorf("-udp-fd %d: not a bound UDP socket: %w", fd, err)
	}
	if _, ok := pc.(*net.UDPConn); !ok {
		pc.Close()
		return nil, fmt.Errorf("-udp-fd %d: a %T, not a UDP socket", fd, pc)
	}
	return pc, nil
}
