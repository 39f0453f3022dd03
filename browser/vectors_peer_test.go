package browser

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"os"
	"testing"

	"github.com/mcp-flow/mcp-flow/codec"
	"github.com/mcp-flow/mcp-flow/jsonrpc"
)

// peerEncoding is one encoding the browser peer wrote for a vector
// (check_vectors.mjs PEER_OUT): Hex in Encoding, of a message or batch
// (Kind "message") or a datagram payload ("value"), and JSON, the value it
// must have (the vector's, or with -0 made 0 where Loss names cbor-x's).
type peerEncoding struct {
	Where, Kind, Encoding, Hex, JSON, Loss string
}

// checkPeerEncodings judges the browser peer's encoder by the Go decoder
// (docs/conformance.md, "Test vectors"): each encoding the peer wrote must
// decode with codec.Default and be the same value as the vector's JSON.
func checkPeerEncodings(t *testing.T, path string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("the peer's encodings: %v", err)
	}
	var encs []peerEncoding
	if err := json.Unmarshal(b, &encs); err != nil {
		t.Fatalf("the peer's encodings: %v", err)
	}
	if len(encs) == 0 {
		t.Fatal("the peer wrote no encodings")
	}
	for _, e := range encs {
		data, err1 := hex.DecodeString(e.Hex)
		want, err2 := hex.DecodeString(e.JSON)
		if err1 != nil || err2 != nil {
			t.Fatalf("%s/%s: bad hex", e.Where, e.Encoding)
		}
		got, err := goValue(codec.Name(e.Encoding), e.Kind, data)
		if err != nil {
			t.Errorf("%s/%s: the Go decoder refuses the peer's encoding: %v", e.Where, e.Encoding, err)
			continue
		}
		exp, err := goValue(codec.JSON, e.Kind, want)
		if err != nil {
			t.Fatalf("%s: the vector's JSON: %v", e.Where, err)
		}
		if !bytes.Equal(got, exp) {
			t.Errorf("%s/%s: the Go decoder reads the peer's encoding as\n%.400s\nthe vector's value is\n%.400s", e.Where, e.Encoding, got, exp)
		}
	}
	t.Logf("the Go decoder judged the peer's %d encodings", len(encs))
}

// goValue decodes a payload (kind "message") or a value with the Go codec
// and writes it as canonical JSON text: through CBOR and back, which spells
// each number by its value alone (1.0 and 1 both as 1), so that equal values
// give equal bytes.
func goValue(enc codec.Name, kind string, data []byte) ([]byte, error) {
	var raw json.RawMessage
	if kind == "value" {
		v, err := codec.Default(enc).DecodeValue(data)
		if err != nil {
			return nil, err
		}
		raw = v
	} else {
		p, err := codec.Default(enc).Decode(data)
		if err != nil {
			return nil, err
		}
		raw = payloadJSON(p.Batch, p.Elems)
	}
	cb, err := codec.Default(codec.CBOR).AppendValue(nil, raw)
	if err != nil {
		return nil, err
	}
	return codec.Default(codec.CBOR).DecodeValue(cb)
}

// payloadJSON writes decoded envelopes as JSON text, members in envelope
// order.
func payloadJSON(batch bool, elems []jsonrpc.Envelope) json.RawMessage {
	var b bytes.Buffer
	if batch {
		b.WriteByte('[')
	}
	for i, e := range elems {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteByte('{')
		n := 0
		for _, m := range []struct {
			name string
			v    json.RawMessage
		}{{"jsonrpc", e.JSONRPC}, {"id", e.ID}, {"method", e.Method}, {"params", e.Params}, {"result", e.Result}, {"error", e.Error}} {
			if m.v == nil {
				continue
			}
			if n > 0 {
				b.WriteByte(',')
			}
			n++
			b.WriteString(`"` + m.name + `":`)
			b.Write(m.v)
		}
		b.WriteByte('}')
	}
	if batch {
		b.WriteByte(']')
	}
	return b.Bytes()
}
