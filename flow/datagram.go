package flow

import (
	"encoding/json"
	"time"

	"github.com/mcp-flow/mcp-flow/jsonrpc"
	"github.com/mcp-flow/mcp-flow/wire"
)

const progressChannel = wire.ChannelProgress

// SendDatagram sends payload (marshalled to JSON, then encoded in the
// session's encoding) as a datagram on channel ch about request id (0:
// session-wide), spec §6. Datagrams may be lost. It fails with -32004 when
// the session has no datagrams.
func (s *Session) SendDatagram(ch wire.Channel, requestID uint32, payload any) error {
	if !s.handshake().datagrams {
		return jsonrpc.NewError(jsonrpc.CodeDatagramsNotSupported, "datagrams are not enabled on this session (spec §6)")
	}
	return s.sendDatagramValue(ch, requestID, payload)
}

func (s *Session) sendDatagramValue(ch wire.Channel, requestID uint32, payload any) error {
	v, err := json.Marshal(payload)
	if err != nil {
		return err
	}
	b := wire.DatagramHeader{Channel: ch, RequestID: requestID}.Append(make([]byte, 0, 64+len(v)))
	if b, err = s.enc.Load().c.AppendValue(b, v); err != nil {
		return err
	}
	return s.wt.SendDatagram(b)
}

// receiveDatagrams reads datagrams until the session ends, draining the
// queue promptly (quic-go drops past 128 queued).
func (s *Session) receiveDatagrams() {
	for {
		b, err := s.wt.ReceiveDatagram(s.ctx)
		if err != nil {
			return
		}
		s.handleDatagram(b)
	}
}

func (s *Session) handleDatagram(b []byte) {
	if !s.handshake().datagrams || s.State() < StateReady {
		// -32004, at most once a second so that a flood cannot amplify.
		s.mu.Lock()
		now := time.Now()
		send := now.Sub(s.lastDgErr) >= time.Second
		if send {
			s.lastDgErr = now
		}
		s.mu.Unlock()
		if send {
			s.replyError(jsonrpc.NullID, jsonrpc.CodeDatagramsNotSupported, "datagram received, but datagrams are not enabled on this session (spec §6)")
		}
		return
	}
	h, payload, err := wire.ParseDatagram(b)
	if err != nil {
		s.log.Debug("dropped a malformed datagram", "err", err)
		return
	}
	v, err := s.enc.Load().c.DecodeValue(payload)
	if err != nil {
		s.log.Debug("dropped an undecodable datagram", "channel", h.Channel, "err", err)
		return
	}
	if h.Channel == wire.ChannelProgress {
		var p Progress
		if json.Unmarshal(v, &p) == nil && s.deliverProgress(h.RequestID, p) {
			return
		}
	}
	if s.hooks.Datagram != nil {
		s.hooks.Datagram(s, h, v)
	}
}

// deliverProgress hands progress to the call it belongs to: by the datagram
// header's request id, or (id 0) by the progress token. It reports whether a
// call took it.
func (s *Session) deliverProgress(id uint32, p Progress) bool {
	s.mu.Lock()
	var c *call
	if id != 0 {
		c = s.streamCalls[id]
	} else if tok, err := jsonrpc.ParseID(p.ProgressToken); err == nil {
		c = s.calls[tok]
		if c == nil {
			if n, ok := tok.Uint32(); ok {
				c = s.streamCalls[n]
			}
		}
	}
	s.mu.Unlock()
	if c == nil || c.onProgress == nil {
		return false
	}
	c.onProgress(p)
	return true
}
