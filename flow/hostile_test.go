package flow_test

import (
	"bytes"
	"context"
	"encoding/json"
	"runtime"
	"strings"
	"testing"

	"github.com/mcp-flow/mcp-flow/codec"
	"github.com/mcp-flow/mcp-flow/codec/pb"
	"github.com/mcp-flow/mcp-flow/flow"
	"github.com/mcp-flow/mcp-flow/jsonrpc"
	"github.com/mcp-flow/mcp-flow/protocol"
	"github.com/mcp-flow/mcp-flow/wire"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
)

// hostileBatch returns the batches of 2^20 elements: zeros in JSON
// (2 MiB) and CBOR (1 MiB), empty messages in protobuf (2 MiB).
func hostileBatch(enc codec.Name) []byte {
	const n = 1 << 20
	switch enc {
	case codec.JSON:
		return []byte("[" + strings.Repeat("0,", n-1) + "0]")
	case codec.CBOR:
		return append([]byte{0x9a, 0x00, 0x10, 0x00, 0x00}, make([]byte, n)...)
	}
	return protowire.AppendBytes(protowire.AppendTag(nil, 2, protowire.BytesType), bytes.Repeat([]byte{0x0a, 0x00}, n))
}

// TestHostileFramesBeforeInitialize sends, before initialize and without
// any credential, the frames of the security issue: each gets one -32700
// with a null id (spec §4.3, §8), the server's heap does not balloon, and
// the session then initializes normally.
func TestHostileFramesBeforeInitialize(t *testing.T) {
	srv := startServer(t, nil)
	p, _, err := dialRaw(t, srv, nil)
	if err != nil {
		t.Fatal(err)
	}
	bignum := append([]byte{0xa3, 0x67}, "jsonrpc"...)
	bignum = append(append(bignum, 0x63), "2.0"...)
	bignum = append(append(bignum, 0x62), "id"...)
	bignum = append(bignum, 0xc2, 0x5a, 0x00, 0x80, 0x00, 0x00) // tag 2, an 8 MiB byte string
	bignum = append(bignum, bytes.Repeat([]byte{0xff}, 8<<20)...)
	bignum = append(append(bignum, 0x66), "method"...)
	bignum = append(append(bignum, 0x64), "ping"...)
	frames := map[string]struct {
		data []byte
		says string // what the error message must name
	}{
		"json batch of 2^20 zeros":              {hostileBatch(codec.JSON), "batch of more than 1024 elements"},
		"cbor batch of 2^20 zeros":              {hostileBatch(codec.CBOR), "malformed cbor payload at byte 0: batch of more than 1024 elements"},
		"protobuf batch of 2^20 empty messages": {hostileBatch(codec.Protobuf), "malformed protobuf payload: batch of more than 1024 elements"},
		"cbor request with an 8 MiB bignum id":  {bignum, "MaxNumberDigits"},
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for name, f := range frames {
		p.write(wire.AppendFrame(nil, f.data))
		b := p.read()
		var r struct {
			ID    json.RawMessage
			Error *jsonrpc.Error
		}
		if err := json.Unmarshal(b, &r); err != nil || r.Error == nil || string(r.ID) != "null" || r.Error.Code != jsonrpc.CodeParseError {
			t.Fatalf("%s: got %s, want -32700 with a null id", name, b)
		}
		if !strings.Contains(r.Error.Message, f.says) {
			t.Errorf("%s: the error says %q, want it to name %q", name, r.Error.Message, f.says)
		}
		t.Logf("%s (%d bytes): %s", name, len(f.data), r.Error.Message)
	}
	runtime.ReadMemStats(&after)
	// Before the codec limits, the JSON batch alone allocated over 1 GiB.
	// What remains is QUIC's buffers, the frame reader's and one copy of
	// each frame: a few times the 13 MiB sent.
	if a := after.TotalAlloc - before.TotalAlloc; a > 256<<20 {
		t.Errorf("the server allocated %d MiB for %d MiB of hostile frames", a>>20, 13)
	} else {
		t.Logf("allocated %d MiB in the process for 13 MiB of hostile frames", a>>20)
	}
	p.write(frame(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"0"},"transport":{"type":"mcp-flow","version":"0.1","encodings":["json"]}}}`))
	var r struct{ Result *flow.InitializeResult }
	if b := p.read(); json.Unmarshal(b, &r) != nil || r.Result == nil {
		t.Fatalf("initialize after the hostile frames: %s", b)
	}
}

// TestHugeIDInProtobufSession: an id of 4M digits in a protobuf session is
// -32700 (MaxNumberDigits), answered at once; before, encoding the reply ran
// big.Int.SetString for 17 s. The session carries on.
func TestHugeIDInProtobufSession(t *testing.T) {
	srv := startServer(t, nil)
	p, _, err := dialRaw(t, srv, nil)
	if err != nil {
		t.Fatal(err)
	}
	p.write(frame(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"0"},"transport":{"type":"mcp-flow","version":"0.1","encodings":["protobuf"]}}}`))
	var r struct{ Result *flow.InitializeResult }
	if b := p.read(); json.Unmarshal(b, &r) != nil || r.Result == nil {
		t.Fatalf("initialize: %s", b)
	}
	pbc := codec.Default(codec.Protobuf)
	send := func(m jsonrpc.Message) {
		b, err := pbc.Append(nil, m)
		if err != nil {
			t.Fatal(err)
		}
		p.write(wire.AppendFrame(nil, b))
	}
	recv := func() *jsonrpc.Response {
		pl, err := pbc.Decode(p.read())
		if err != nil {
			t.Fatal(err)
		}
		msgs, _ := jsonrpc.Validate(pl)
		if len(msgs) != 1 {
			t.Fatalf("%d messages", len(msgs))
		}
		resp, ok := msgs[0].(*jsonrpc.Response)
		if !ok {
			t.Fatalf("got %T", msgs[0])
		}
		return resp
	}
	send(&jsonrpc.Request{Method: protocol.MethodInitialized})
	v := "2.0"
	method := "ping"
	huge, err := proto.Marshal(&pb.Payload{Body: &pb.Payload_Message{Message: &pb.Message{Jsonrpc: &v, Method: &method,
		Id: &pb.Value{Kind: &pb.Value_Number{Number: strings.Repeat("7", 4<<20)}}}}})
	if err != nil {
		t.Fatal(err)
	}
	p.write(wire.AppendFrame(nil, huge))
	if resp := recv(); resp.Error == nil || resp.Error.Code != jsonrpc.CodeParseError || !resp.ID.IsNull() {
		t.Fatalf("4M-digit id: got %s", jsonrpc.AppendJSON(nil, resp))
	}
	send(&jsonrpc.Request{ID: jsonrpc.Int64ID(3), Method: "ping"})
	if resp := recv(); resp.Error != nil || resp.ID != jsonrpc.Int64ID(3) {
		t.Fatalf("ping after: %s", jsonrpc.AppendJSON(nil, resp))
	}
}

// TestBatchReplyTooLarge: a batch whose replies together exceed the peer's
// maxFrameSize is answered, not dropped: each result becomes -32801 (spec
// §8.1), errors stay as they are.
func TestBatchReplyTooLarge(t *testing.T) {
	big := json.RawMessage(`"` + strings.Repeat("x", 9<<20) + `"`)
	srv := startServer(t, func(c *flow.ServerConfig) {
		c.Handler.(flow.Mux)["big"] = flow.HandlerFunc(func(context.Context, *flow.Request) (any, error) { return big, nil })
	})
	p := initRaw(t, srv)
	p.write(frame(`[{"jsonrpc":"2.0","id":1,"method":"big"},{"jsonrpc":"2.0","id":2,"method":"big"},{"jsonrpc":"2.0","id":3,"method":"nope"}]`))
	var replies []struct {
		ID    json.RawMessage
		Error *jsonrpc.Error
	}
	b := p.read()
	if err := json.Unmarshal(b, &replies); err != nil || len(replies) != 3 {
		t.Fatalf("batch reply: %.300s (%v)", b, err)
	}
	want := map[string]jsonrpc.Code{"1": jsonrpc.CodeContentTooLarge, "2": jsonrpc.CodeContentTooLarge, "3": jsonrpc.CodeMethodNotFound}
	for _, r := range replies {
		if r.Error == nil || want[string(r.ID)] != r.Error.Code {
			t.Fatalf("batch reply: %s", b)
		}
	}
}

// TestEncodingMismatchAtNumberBound: a CBOR request in a JSON session is
// -32003 with its id when the id is within MaxNumberDigits (256), and -32700
// naming the limit when it is one digit longer: the frame is tried in CBOR
// once, with the session's limits (spec §4.3, §8).
func TestEncodingMismatchAtNumberBound(t *testing.T) {
	srv := startServer(t, nil)
	p := initRaw(t, srv)
	enc, err := codec.New(codec.CBOR, codec.Limits{MaxNumberDigits: 1000}) // a peer with other limits
	if err != nil {
		t.Fatal(err)
	}
	for _, digits := range []int{256, 257} {
		id := strings.Repeat("9", digits)
		pid, err := jsonrpc.ParseID([]byte(id))
		if err != nil {
			t.Fatal(err)
		}
		b, err := enc.Append(nil, &jsonrpc.Request{ID: pid, Method: "ping"})
		if err != nil {
			t.Fatal(err)
		}
		p.write(wire.AppendFrame(nil, b))
		reply := p.read()
		if digits == 256 {
			expectError(t, reply, id, jsonrpc.CodeEncodingMismatch)
			continue
		}
		expectError(t, reply, "null", jsonrpc.CodeParseError)
		if !strings.Contains(string(reply), "MaxNumberDigits") {
			t.Fatalf("the -32700 does not name the limit: %s", reply)
		}
	}
}
