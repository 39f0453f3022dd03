package hostile

import (
	"bytes"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/mcp-flow/mcp-flow/codec"
	"github.com/mcp-flow/mcp-flow/codec/pb"
	"github.com/mcp-flow/mcp-flow/jsonrpc"
	"github.com/mcp-flow/mcp-flow/wire"
)

// Codes of spec §8.1.
const (
	codeParse          = int(jsonrpc.CodeParseError)
	codeInvalid        = int(jsonrpc.CodeInvalidRequest)
	codeCancelled      = int(jsonrpc.CodeRequestCancelled)
	codeTooMany        = int(jsonrpc.CodeTooManyRequests)
	codeShuttingDown   = int(jsonrpc.CodeShuttingDown)
	codeInjection      = int(jsonrpc.CodeStreamInjection)
	codeNoDatagrams    = int(jsonrpc.CodeDatagramsNotSupported)
	codeEncodingBadFit = int(jsonrpc.CodeEncodingMismatch)
)

// TestOversizedAndZeroLengths: a zero length is -32600 and the session
// reads on; a length of 4 GiB - 1 is -32600 and the session is closed,
// without the server allocating from the declared length (spec §3.1, §8).
func TestOversizedAndZeroLengths(t *testing.T) {
	e := setup(t)
	e.during(func() {
		p := e.peer()
		p.Write([]byte{0, 0, 0, 0})
		e.expectError(p, "zero length", "null", codeInvalid)
		p.WriteFrame([]byte(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
		if r, err := p.ReadReply(e.ctx); err != nil || r.ID != "1" || r.Code != 0 {
			t.Fatalf("ping after a zero length: %+v %v", r, err)
		}
		// The server closes such a session a second after its reply
		// (its close waits for the reply to leave): eight at once.
		var wg sync.WaitGroup
		for range 8 {
			q := e.peer()
			wg.Go(func() {
				q.Write([]byte{0xff, 0xff, 0xff, 0xff, 'x'})
				r, err := q.ReadReply(e.ctx)
				if err != nil || r.Code != codeInvalid || r.ID != "null" {
					t.Errorf("length 2^32-1: got %+v %v, want -32600", r, err)
				}
				select {
				case <-q.Done():
				case <-e.ctx.Done():
					t.Error("the session is still open after a frame length past the limit")
				}
			})
		}
		wg.Wait()
	})
	m, _ := e.report()
	if m.HWM-e.base.HWM > 16<<20 {
		t.Errorf("the server's peak RSS grew by %s for 8 declared 4 GiB frames", mib(m.HWM-e.base.HWM))
	}
	e.alive()
}

// TestDeepNesting: 100,000-deep JSON arrays and objects, and CBOR arrays
// (definite and indefinite), are -32700 naming the depth limit (64,
// codec.Limits.MaxDepth), before and after initialize, at a bounded cost.
func TestDeepNesting(t *testing.T) {
	e := setup(t)
	const depth = 100_000
	frames := map[string][]byte{
		"json arrays":             []byte(strings.Repeat("[", depth) + strings.Repeat("]", depth)),
		"json objects":            []byte(strings.Repeat(`{"a":`, depth) + "0" + strings.Repeat("}", depth)),
		"cbor arrays":             append(bytes.Repeat([]byte{0x81}, depth), 0x00),
		"cbor indefinite arrays":  append(bytes.Repeat([]byte{0x9f}, depth), 0x00),
		"cbor maps":               append(bytes.Repeat([]byte{0xa1, 0x00}, depth), 0x00),
		"json after initialize":   []byte(`{"jsonrpc":"2.0","id":1,"method":"ping","params":` + strings.Repeat("[", depth) + strings.Repeat("]", depth) + "}"),
		"json object after init…": []byte(strings.Repeat(`{"a":`, depth) + "0" + strings.Repeat("}", depth)),
	}
	e.during(func() {
		p, q := e.peer(), e.initPeer()
		for name, f := range frames {
			peer := p
			if strings.Contains(name, "init") {
				peer = q
			}
			peer.WriteFrame(f)
			r := e.expectError(peer, name, "null", codeParse)
			// An indefinite-length CBOR array is not recognised as CBOR
			// by codec.Detect: a plain -32700 (JSON) will do.
			if name != "cbor indefinite arrays" && !strings.Contains(r.Message, "depth") && !strings.Contains(r.Message, "nesting") {
				t.Errorf("%s: the -32700 does not name the depth limit: %q", name, r.Message)
			}
		}
	})
	_, cpu := e.report()
	if cpu > 2*time.Second {
		t.Errorf("the server spent %.2f CPU-seconds on %d nested frames", cpu.Seconds(), len(frames))
	}
	e.alive()
}

// TestCBORBombs: CBOR items whose declared lengths are huge (an array of
// 2^64-1 elements, a map of 2^32-1 pairs, a byte string of 2^62 bytes, a
// text string of 2^31) are -32700 before initialize, without the server
// allocating from what they declare.
func TestCBORBombs(t *testing.T) {
	e := setup(t)
	bombs := map[string][]byte{
		"array of 2^64-1":        {0x9b, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x00},
		"map of 2^32-1":          {0xba, 0xff, 0xff, 0xff, 0xff, 0x00, 0x00},
		"byte string of 2^62":    {0x5b, 0x40, 0, 0, 0, 0, 0, 0, 0, 0x00},
		"text string of 2^31":    {0x7a, 0x80, 0, 0, 0, 'a'},
		"bignum of 2^32-1 bytes": {0xc2, 0x5a, 0xff, 0xff, 0xff, 0xff, 0x00},
	}
	e.during(func() {
		for name, b := range bombs {
			p := e.peer()
			p.WriteFrame(b)
			e.expectError(p, name, "null", codeParse)
		}
	})
	m, cpu := e.report()
	if m.HWM-e.base.HWM > 16<<20 || cpu > time.Second {
		t.Errorf("CBOR length bombs cost the server %s of peak RSS and %.2f CPU-seconds", mib(m.HWM-e.base.HWM), cpu.Seconds())
	}
	e.alive()
}

// hostileBatch returns the batches of 2^20 elements: zeros in JSON
// (2 MiB) and CBOR (1 MiB), empty messages in protobuf (2 MiB, or n).
func hostileBatch(enc codec.Name, n int) []byte {
	switch enc {
	case codec.JSON:
		return []byte("[" + strings.Repeat("0,", n-1) + "0]")
	case codec.CBOR:
		return append([]byte{0x9a, byte(n >> 24), byte(n >> 16), byte(n >> 8), byte(n)}, make([]byte, n)...)
	}
	return protowire.AppendBytes(protowire.AppendTag(nil, 2, protowire.BytesType), bytes.Repeat([]byte{0x0a, 0x00}, n))
}

// TestBatchesOfZeros: before initialize, in every encoding, batches of 2^20
// elements (and a 16 MB protobuf batch of 8M) are -32700 from their
// declared count (codec.Limits.MaxBatch, 1024), and the server's peak RSS
// stays within 128 MiB of where it was: the frames are 26 MiB, held at
// most twice (QUIC's receive buffers, the frame buffer) and then garbage.
// The issue measured 665 MiB (JSON), 3.5 GiB (six CBOR at once), 1.35 GiB
// (protobuf).
func TestBatchesOfZeros(t *testing.T) {
	e := setup(t)
	type shot struct {
		name string
		b    []byte
	}
	shots := []shot{
		{"json batch of 2^20 zeros (2 MiB)", hostileBatch(codec.JSON, 1<<20)},
		{"protobuf batch of 2^20 empty messages (2 MiB)", hostileBatch(codec.Protobuf, 1<<20)},
		{"protobuf batch of 2^23 empty messages (16 MiB)", hostileBatch(codec.Protobuf, 1<<23-8)},
	}
	for range 6 {
		shots = append(shots, shot{"cbor batch of 2^20 zeros (1 MiB)", hostileBatch(codec.CBOR, 1<<20)})
	}
	e.during(func() {
		var wg sync.WaitGroup
		errs := make(chan string, len(shots))
		for _, s := range shots {
			p := e.peer()
			wg.Go(func() {
				if err := p.WriteFrame(s.b); err != nil {
					errs <- s.name + ": " + err.Error()
					return
				}
				r, err := p.ReadReply(e.ctx)
				if err != nil || r.Code != codeParse || r.ID != "null" || !strings.Contains(r.Message, "batch") {
					errs <- s.name + ": got " + r.Message + " " + errString(err) + ", want -32700 naming the batch limit"
				}
			})
		}
		wg.Wait()
		close(errs)
		for s := range errs {
			t.Error(s)
		}
	})
	m, _ := e.report()
	if d := m.HWM - e.base.HWM; d > 128<<20 {
		t.Errorf("the server's peak RSS grew by %s for the batches", mib(d))
	}
	e.alive()
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// cborBignumRequest is a CBOR request whose id is a bignum of n bytes.
func cborBignumRequest(n int) []byte {
	b := append([]byte{0xa3, 0x67}, "jsonrpc"...)
	b = append(append(b, 0x63), "2.0"...)
	b = append(append(b, 0x62), "id"...)
	b = append(b, 0xc2, 0x5a, byte(n>>24), byte(n>>16), byte(n>>8), byte(n)) // tag 2, a byte string of n
	b = append(b, bytes.Repeat([]byte{0xff}, n)...)
	b = append(append(b, 0x66), "method"...)
	return append(append(b, 0x64), "ping"...)
}

// TestHugeNumbers: four sessions each send an 8 MiB CBOR bignum id before
// initialize (the issue: 125 CPU-seconds, other pings 60-106 ms), and a
// protobuf session sends an id of 4M digits (the issue: 17 s in
// big.Int.SetString). Each is -32700 naming MaxNumberDigits (256), for
// less than 2 CPU-seconds in all.
func TestHugeNumbers(t *testing.T) {
	e := setup(t)
	bignum := cborBignumRequest(8 << 20)
	e.during(func() {
		var wg sync.WaitGroup
		errs := make(chan string, 4)
		for range 4 {
			p := e.peer()
			wg.Go(func() {
				p.WriteFrame(bignum)
				r, err := p.ReadReply(e.ctx)
				if err != nil || r.Code != codeParse || !strings.Contains(r.Message, "MaxNumberDigits") {
					errs <- "8 MiB CBOR bignum: got " + r.Message + " " + errString(err) + ", want -32700 naming MaxNumberDigits"
				}
			})
		}
		wg.Wait()
		close(errs)
		for s := range errs {
			t.Error(s)
		}

		p := e.peer()
		p.WriteFrame(InitializeJSON("protobuf"))
		if r, err := p.ReadReply(e.ctx); err != nil || r.Code != 0 {
			t.Fatalf("protobuf initialize: %+v %v", r, err)
		}
		pbc := codec.Default(codec.Protobuf)
		b, err := pbc.Append(nil, &jsonrpc.Request{Method: "notifications/initialized"})
		if err != nil {
			t.Fatal(err)
		}
		p.WriteFrame(b)
		v, method := "2.0", "ping"
		huge, err := proto.Marshal(&pb.Payload{Body: &pb.Payload_Message{Message: &pb.Message{Jsonrpc: &v, Method: &method,
			Id: &pb.Value{Kind: &pb.Value_Number{Number: strings.Repeat("7", 4<<20)}}}}})
		if err != nil {
			t.Fatal(err)
		}
		p.WriteFrame(huge)
		f, err := p.ReadFrame(e.ctx, 1<<20)
		if err != nil {
			t.Fatalf("protobuf id of 4M digits: %v; server stderr:\n%s", err, e.srv.Stderr)
		}
		pl, err := pbc.Decode(f)
		if err != nil {
			t.Fatal(err)
		}
		msgs, _ := jsonrpc.Validate(pl)
		if len(msgs) != 1 {
			t.Fatalf("protobuf id of 4M digits: %d messages in the reply", len(msgs))
		}
		if resp, ok := msgs[0].(*jsonrpc.Response); !ok || resp.Error == nil || int(resp.Error.Code) != codeParse {
			t.Fatalf("protobuf id of 4M digits: got %s, want -32700", jsonrpc.AppendJSON(nil, msgs[0]))
		}
	})
	_, cpu := e.report()
	if cpu > 2*time.Second {
		t.Errorf("the server spent %.2f CPU-seconds on 4 bignums of 8 MiB and an id of 4M digits", cpu.Seconds())
	}
	e.alive()
}

// TestLargeFrameThenIdle: 12 initialized sessions, one after the other,
// each send one ping of nearly 16 MiB (the frame limit) and then stay idle.
// The server keeps no such buffer per idle session (wire.RetainedFrameBuffer,
// 64 KiB): its live heap (from its gctrace) stays within 32 MiB of where it
// was, where 12 held buffers would be 192 MiB. RSS cannot tell: the runtime
// returns freed memory lazily, and it ended 79-128 MiB up either way. The
// issue: 40 sessions held 692 MB; before the fix, 16 sessions here: RSS
// +462 MiB.
//
// The server's peak RSS during the attack (VmHWM) is bounded too, at
// peakRSSBound (256 MiB): the frames come one at a time, so the peak is a
// few frames' buffers and garbage the runtime has not yet returned, not 12
// frames. Measured on the shared 2-core machine (issue 22, 21 runs, some
// with two or three attacks at once): 96-150 MiB; with the buffers retained
// (the bug this test guards) 401-443 MiB, and the issue saw a 334 MiB peak.
// The bound leaves 1.7x the largest measured peak for a noisy machine and
// still fails a server that keeps the buffers.
func TestLargeFrameThenIdle(t *testing.T) {
	const peakRSSBound = 256 << 20
	e := setupEnv(t, []string{"GODEBUG=gctrace=1"})
	const sessions = 12
	pad := strings.Repeat("x", wire.DefaultMaxFrameSize-100)
	big := []byte(`{"jsonrpc":"2.0","id":7,"method":"ping","params":{"pad":"` + pad + `"}}`)
	gcPeer := e.initPeer()
	base := e.liveHeap(gcPeer)
	e.during(func() {
		for i := range sessions {
			p := e.initPeer()
			if err := p.WriteFrame(big); err != nil {
				t.Fatal(err)
			}
			if r, err := p.ReadReply(e.ctx); err != nil || r.ID != "7" || r.Code != 0 {
				t.Fatalf("session %d: the 16 MiB ping got %+v %v; server stderr:\n%s", i, r, err, e.srv.Stderr)
			}
		}
	})
	peak := e.mem().HWM // read before liveHeap's pings add to it
	after := e.liveHeap(gcPeer)
	e.report()
	t.Logf("measured: live heap (gctrace) before %s, with %d idle sessions that each sent 16 MiB %s", mib(base.Live), sessions, mib(after.Live))
	t.Logf("measured: peak RSS (VmHWM) %s before the attack, %s at its end; bound %s", mib(e.base.HWM), mib(peak), mib(peakRSSBound))
	if d := after.Live - base.Live; d > 32<<20 {
		t.Errorf("%d idle sessions that each sent one 16 MiB frame hold %s of live heap", sessions, mib(d))
	}
	if peak > peakRSSBound {
		t.Errorf("the server's peak RSS reached %s while %d sessions each sent one 16 MiB frame, over %s", mib(peak), sessions, mib(peakRSSBound))
	}
	e.alive()
}
