package flow

import (
	"net"
	"syscall"
)

// wantUDPBuffer is the socket buffer size quic-go asks the kernel for, in
// each direction (quic-go's desiredBufferSize; see
// https://github.com/quic-go/quic-go/wiki/UDP-Buffer-Sizes). Less makes
// packet loss under bursts more likely.
const wantUDPBuffer = 7 << 20

// warnSmallBuffers logs, once per server, when the kernel left the UDP
// socket's buffers smaller than quic-go asked for (a limit such as Linux's
// net.core.rmem_max, with no right to exceed it). The server carries on.
func (s *Server) warnSmallBuffers(pc net.PacketConn) {
	rcv, snd, err := udpBuffers(pc)
	if err != nil {
		s.log.Debug("could not read the UDP socket's buffer sizes", "err", err)
		return
	}
	if rcv < wantUDPBuffer || snd < wantUDPBuffer {
		s.log.Warn("the kernel kept the UDP buffers smaller than QUIC wants; under load more packets may be lost (raise net.core.rmem_max and net.core.wmem_max, see https://github.com/quic-go/quic-go/wiki/UDP-Buffer-Sizes)",
			"receiveKiB", rcv>>10, "sendKiB", snd>>10, "wantKiB", wantUDPBuffer>>10)
	}
}

// udpBuffers returns the receive and send buffer sizes of pc's socket as the
// kernel reports them.
func udpBuffers(pc net.PacketConn) (rcv, snd int, err error) {
	sc, ok := pc.(syscall.Conn)
	if !ok {
		return 0, 0, errNotSocket
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return 0, 0, err
	}
	var serr error
	err = raw.Control(func(fd uintptr) {
		rcv, serr = getsockoptInt(fd, syscall.SO_RCVBUF)
		if serr == nil {
			snd, serr = getsockoptInt(fd, syscall.SO_SNDBUF)
		}
	})
	if err == nil {
		err = serr
	}
	return rcv, snd, err
}
