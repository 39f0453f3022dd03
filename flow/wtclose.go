package flow

import (
	"encoding/binary"
	"sync/atomic"
	"time"

	"github.com/quic-go/quic-go"
	"github.com/quic-go/quic-go/http3"
	"github.com/quic-go/quic-go/quicvarint"
)

// closeSessionCapsule is the type of the WT_CLOSE_SESSION capsule
// (draft-ietf-webtrans-http3 §6, CLOSE_WEBTRANSPORT_SESSION).
const closeSessionCapsule = 0x2843

// quicConnKey is the request context key under which the server keeps the
// QUIC connection of a CONNECT (set by its http3.Server's ConnContext).
type quicConnKey struct{}

// connectEnd is what a server session needs to end cleanly in every
// WebTransport engine (spec §7.2, "The close on the wire"): its CONNECT
// stream and its QUIC connection.
//
// webtransport-go's CloseWithError writes the close capsule, then cancels
// the CONNECT stream's reading (STOP_SENDING), then finishes it; quic-go
// sends control frames ahead of stream data, so the peer reads STOP_SENDING
// first (quic-go/webtransport-go#242). Chromium then fails the session
// ("Connection lost"), Firefox mostly too ("remote WebTransport close"), and
// Deno, which reads no capsule, sees nothing until the QUIC connection
// closes. connectEnd.close sends the capsule and the FIN alone, waits for
// the peer's answer, and then closes the QUIC connection with code 0.
type connectEnd struct {
	str  *http3.Stream
	conn *quic.Conn
	// paced is what the session's execution streams learnt of the path,
	// for the next one to start from (pace.go; only servers send them).
	paced atomic.Pointer[paceMemo]
}

// closeCapsule returns the WT_CLOSE_SESSION capsule for code and msg.
func closeCapsule(code uint32, msg string) []byte {
	b := quicvarint.Append(nil, closeSessionCapsule)
	b = quicvarint.Append(b, uint64(4+len(msg)))
	b = binary.BigEndian.AppendUint32(b, code)
	return append(b, msg...)
}

// closeSettle is how long a clean close waits before its capsule. A close
// that follows the peer's FIN on the control stream at once (the receiver's,
// spec §7.2 rule 4) reaches Chromium in the packet that acknowledges that
// FIN, and Chromium 156 then often reports "Connection lost" instead of the
// close (5 runs in 10 on loopback; none in 10 with 5 ms or 30 ms between).
const closeSettle = 20 * time.Millisecond

// close ends the session with code and msg (at most maxCloseMessage bytes)
// in this order (spec §7.2), after closeSettle:
//  1. the WT_CLOSE_SESSION capsule and the FIN on the CONNECT stream, with
//     no STOP_SENDING: the peer reads a clean close (Chromium, Firefox);
//  2. it gives the peer finWait (Limits.PeerFINWait) to close the
//     connection itself (Firefox and flow's client do, at once). Its
//     answer on the CONNECT stream is not enough: Chromium answers with
//     its FIN within a millisecond, yet a CONNECTION_CLOSE right behind
//     that FIN sometimes turns its `closed` into "Connection lost" (seen
//     1 run in 8);
//  3. it closes the QUIC connection with application error code 0, which
//     HTTP/3 reads as H3_NO_ERROR (RFC 9114 §8.1: an unknown code is
//     H3_NO_ERROR) and Deno reports as the session's closeCode. The
//     connection carries this session alone: webtransport-go without
//     WebTransport flow control admits one session per connection.
//
// It returns false, having sent nothing, when the connection ended first or
// the capsule could not be written at once (the peer withholds flow-control
// credit): the caller then closes as webtransport-go does.
func (c *connectEnd) close(code uint32, msg string, finWait time.Duration) bool {
	t := time.NewTimer(closeSettle)
	defer t.Stop()
	select {
	case <-c.conn.Context().Done():
		return false
	case <-t.C:
	}
	if err := c.str.TryWriteAll(closeCapsule(code, msg)); err != nil {
		return false
	}
	_ = c.str.Close()
	t.Reset(finWait)
	select {
	case <-c.conn.Context().Done():
	case <-t.C:
	}
	_ = c.conn.CloseWithError(0, msg)
	return true
}
