package flow

import "net"

// RefuseConnections makes srv's QUIC stack refuse a new connection with
// CONNECTION_REFUSED whenever refuse returns true for its address (asked
// once per Initial packet). Call it before Serve.
func RefuseConnections(srv *Server, refuse func(net.Addr) bool) { srv.refuse = refuse }

// WarnSmallBuffers logs, as Serve does, if pc's buffers are small.
func WarnSmallBuffers(srv *Server, pc net.PacketConn) { srv.warnSmallBuffers(pc) }
