package flow

import (
	"encoding/json"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcp-flow/mcp-flow/jsonrpc"
	"github.com/mcp-flow/mcp-flow/protocol"
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
	err := s.sendDatagramValue(ch, requestID, payload)
	if err != nil {
		s.datagramEvent("dropped", false, ch)
	}
	return err
}

// datagramEvent emits an EventDatagram (datagrams are counted, not logged).
func (s *Session) datagramEvent(outcome string, inbound bool, ch wire.Channel) {
	if s.hooks.Observe != nil {
		s.observe(Event{Kind: EventDatagram, Outcome: outcome, Inbound: inbound, Channel: uint8(ch)})
	}
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
	if err := s.wt.SendDatagram(b); err != nil {
		return err
	}
	s.datagramEvent("sent", false, ch)
	return nil
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
		s.datagramEvent("dropped", true, channelOf(b))
		// -32004, at most once a second so that a flood cannot amplify.
		if ok, held := s.reports.allow(); ok {
			s.replyError(jsonrpc.NullID, jsonrpc.CodeDatagramsNotSupported, "datagram received, but datagrams are not enabled on this session (spec §6)"+heldNote(held))
		}
		return
	}
	h, payload, err := wire.ParseDatagram(b)
	if err != nil {
		s.datagramEvent("dropped", true, channelOf(b))
		s.log.Debug("dropped a malformed datagram", "err", err)
		return
	}
	v, err := s.enc.Load().c.DecodeValue(payload)
	if err != nil {
		s.datagramEvent("dropped", true, h.Channel)
		s.log.Debug("dropped an undecodable datagram", "channel", h.Channel, "err", err)
		return
	}
	if h.Channel == wire.ChannelProgress {
		s.pg.received.Add(1)
		var p Progress
		if json.Unmarshal(v, &p) == nil {
			if took, stale := s.deliverProgress(h.RequestID, p); took {
				if stale {
					s.datagramEvent("dropped", true, h.Channel)
				} else {
					s.datagramEvent("received", true, h.Channel)
				}
				return
			}
		}
	}
	s.datagramEvent("received", true, h.Channel)
	if s.hooks.Datagram != nil {
		s.hooks.Datagram(s, h, v)
	}
}

// channelOf is the channel a datagram's first byte names (0 for none), for
// the event of one that cannot be read.
func channelOf(b []byte) wire.Channel {
	if len(b) == 0 {
		return 0
	}
	return wire.Channel(b[0])
}

// deliverProgress hands progress to the call it belongs to: by the datagram
// header's request id, or (id 0) by the progress token. It reports whether a
// call took it. Progress never goes backwards (spec §6.2): an update whose
// value is not above the last one delivered for the call is dropped (MCP
// wants each value above the previous; the newest value may arrive twice, as
// a datagram and on the control stream before the result, and a datagram
// may be overtaken); stale reports such a drop.
func (s *Session) deliverProgress(id uint32, p Progress) (took, stale bool) {
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
		return false, false
	}
	c.progressMu.Lock()
	defer c.progressMu.Unlock()
	if c.progressed && !(p.Progress > c.lastProgress) {
		s.pg.stale.Add(1)
		return true, true
	}
	c.progressed, c.lastProgress = true, p.Progress
	s.pg.delivered.Add(1)
	c.onProgress(p)
	return true, false
}

// ---- progress (spec §6.2) ----

// progressSender coalesces a session's progress datagrams: each request has
// one slot holding its newest update that has not left yet, and a newer
// update replaces it. One goroutine per session (started by the first
// update) drains the slots in turn, no faster than Limits.MaxProgressRate
// and no faster than the connection takes them (SendDatagram blocks while
// quic-go's send queue is full), so a burst, a slow path or loss costs
// superseded values, never a blocked handler nor a growing queue.
type progressSender struct {
	mu    sync.Mutex
	queue []*progressSlot // slots with an update waiting, in turn
	wake  chan struct{}   // cap 1: an update is waiting
	start sync.Once
	ended chan struct{} // closed when the sender goroutine has returned

	updates, superseded, datagrams, control atomic.Uint64 // sending
	received, delivered, stale              atomic.Uint64 // receiving
}

// progressSlot is one request's place in the progressSender.
type progressSlot struct {
	id uint32
	// ctrl is held while this request's progress goes on the control
	// stream, so that the result, which waits for it, cannot overtake it.
	ctrl sync.Mutex
	// Under progressSender.mu:
	next   *Progress // waiting to leave; a newer update replaces it
	queued bool      // in progressSender.queue
	last   *Progress // the newest that left as a datagram (or is leaving), unless it went on the control stream since
	closed bool      // the request was answered: no more progress
}

// queueProgress puts p in the slot of request in, replacing an update that
// has not left yet. It never blocks on the network.
func (s *Session) queueProgress(in *inbound, id uint32, p *Progress) {
	d := &s.pg
	d.mu.Lock()
	sl := in.progress
	if sl == nil {
		sl = &progressSlot{id: id}
		in.progress = sl
	}
	if sl.closed {
		d.mu.Unlock()
		s.datagramEvent("dropped", false, progressChannel) // the request was answered meanwhile
		return
	}
	d.updates.Add(1)
	superseded := sl.next != nil
	if superseded {
		d.superseded.Add(1)
	}
	sl.next = p
	if !sl.queued {
		sl.queued = true
		d.queue = append(d.queue, sl)
	}
	d.mu.Unlock()
	if superseded {
		s.datagramEvent("superseded", false, progressChannel)
	}
	d.start.Do(func() {
		d.wake, d.ended = make(chan struct{}, 1), make(chan struct{})
		go s.sendProgress()
	})
	select {
	case d.wake <- struct{}{}:
	default:
	}
}

// sendProgress is the session's progress sender; it ends with the session.
func (s *Session) sendProgress() {
	d := &s.pg
	defer close(d.ended)
	var gap time.Duration
	if r := s.lim.MaxProgressRate; r > 0 {
		gap = time.Second / time.Duration(r)
	}
	pace := time.NewTimer(0)
	defer pace.Stop()
	var earliest time.Time
	for {
		if wait := time.Until(earliest); gap > 0 && wait > 0 {
			pace.Reset(wait)
			select {
			case <-pace.C:
			case <-s.ctx.Done():
				return
			}
		}
		var sl *progressSlot
		var p *Progress
		d.mu.Lock()
		for p == nil && len(d.queue) > 0 {
			sl = d.queue[0]
			d.queue[0] = nil
			d.queue = d.queue[1:]
			sl.queued = false
			p, sl.next = sl.next, nil
			if p != nil {
				sl.last = p
			}
		}
		d.mu.Unlock()
		if p == nil {
			select {
			case <-d.wake:
				continue
			case <-s.ctx.Done():
				return
			}
		}
		err := s.sendDatagramValue(progressChannel, sl.id, p)
		earliest = time.Now().Add(gap)
		if err == nil {
			d.datagrams.Add(1)
			continue
		}
		if s.ctx.Err() != nil {
			return
		}
		// Too large for a datagram: the control stream is the fallback,
		// never silence (spec §6).
		sl.ctrl.Lock()
		d.mu.Lock()
		send := !sl.closed && sl.last == p
		if send {
			sl.last = nil
		}
		d.mu.Unlock()
		if send && s.Notify(protocol.MethodProgress, p) == nil {
			d.control.Add(1)
		}
		sl.ctrl.Unlock()
	}
}

// finishProgress closes the progress slot of request in, which is about to
// be answered; with flush set it first sends the request's newest update on
// the control stream, unless it went there already, so that it reaches the
// peer before the result: the datagram that carried it may be lost or
// overtaken (spec §6.2).
func (s *Session) finishProgress(in *inbound, flush bool) {
	if len(in.token) == 0 {
		return
	}
	d := &s.pg
	d.mu.Lock()
	sl := in.progress
	if sl == nil {
		// No datagram yet: none may come after this (queueProgress).
		in.progress = &progressSlot{closed: true}
	}
	d.mu.Unlock()
	if sl == nil {
		return
	}
	sl.ctrl.Lock()
	defer sl.ctrl.Unlock()
	d.mu.Lock()
	sl.closed = true
	p := sl.next
	if p == nil {
		p = sl.last
	}
	next := sl.next
	sl.next, sl.last = nil, nil
	d.mu.Unlock()
	if p != nil && flush && s.Notify(protocol.MethodProgress, p) == nil {
		d.control.Add(1)
	}
	if next != nil && !flush {
		// notifications/cancelled: the update that had not left never will.
		s.datagramEvent("dropped", false, progressChannel)
	}
}

// Stats counts a session's progress traffic (spec §6.2), for measuring
// coalescing and loss: the datagrams lost are the sender's
// ProgressDatagramsSent minus the receiver's ProgressDatagramsReceived.
type Stats struct {
	// Sending (Request.Progress on this session).
	ProgressUpdates       uint64 // updates given to the datagram path
	ProgressSuperseded    uint64 // replaced by a newer update before they left
	ProgressDatagramsSent uint64 // sent as datagrams
	ProgressOnControl     uint64 // sent as notifications/progress: the newest before a result, or a fallback
	// Receiving (calls made WithProgress on this session).
	ProgressDatagramsReceived uint64 // progress datagrams received
	ProgressDelivered         uint64 // updates handed to a WithProgress callback, by either path
	ProgressStale             uint64 // dropped: not above the last delivered for their request
}

// Stats returns the session's progress counters.
func (s *Session) Stats() Stats {
	d := &s.pg
	return Stats{
		ProgressUpdates:           d.updates.Load(),
		ProgressSuperseded:        d.superseded.Load(),
		ProgressDatagramsSent:     d.datagrams.Load(),
		ProgressOnControl:         d.control.Load(),
		ProgressDatagramsReceived: d.received.Load(),
		ProgressDelivered:         d.delivered.Load(),
		ProgressStale:             d.stale.Load(),
	}
}
