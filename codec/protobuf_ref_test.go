package codec

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"math"
	"reflect"
	"strconv"
	"testing"

	"github.com/mcp-flow/mcp-flow/codec/pb"
	"github.com/mcp-flow/mcp-flow/jsonrpc"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
)

// The protobuf decoder as it was before it read wire bytes itself: the scan,
// proto.Unmarshal into a pb tree, then the tree to JSON text. It is the
// reference FuzzProtobufMatchesUnmarshal holds the decoder to.

func (c *protoCodec) refUnmarshal(data []byte, m proto.Message) error {
	if len(data) > c.lim.MaxPayload {
		return &DecodeError{Encoding: Protobuf, Offset: -1, Reason: "payload of " + strconv.Itoa(len(data)) + " bytes exceeds the limit of " + strconv.Itoa(c.lim.MaxPayload)}
	}
	// proto.Unmarshal allocates the whole tree before any limit could be
	// checked on it: a scan of the wire bytes checks them first.
	sc := &protoScan{lim: c.lim}
	var err error
	if _, ok := m.(*pb.Payload); ok {
		err = sc.payload(data)
	} else {
		err = sc.value(data, 1)
	}
	if err != nil {
		return decodeErr(Protobuf, -1, err)
	}
	// Each JSON level is three protobuf levels (Value, Object, Member).
	opts := proto.UnmarshalOptions{RecursionLimit: 3*c.lim.MaxDepth + 8}
	if err := opts.Unmarshal(data, m); err != nil {
		return &DecodeError{Encoding: Protobuf, Offset: -1, Reason: err.Error()}
	}
	return nil
}

func (c *protoCodec) refDecodeValue(data []byte) (json.RawMessage, error) {
	var v pb.Value
	if err := c.refUnmarshal(data, &v); err != nil {
		return nil, err
	}
	return c.refJSON(nil, &v, 1)
}

func (c *protoCodec) refDecode(data []byte) (jsonrpc.Payload, error) {
	var p pb.Payload
	if err := c.refUnmarshal(data, &p); err != nil {
		return jsonrpc.Payload{}, err
	}
	switch b := p.Body.(type) {
	case *pb.Payload_Message:
		e, err := c.refEnvelope(b.Message)
		return jsonrpc.Payload{Elems: []jsonrpc.Envelope{e}}, err
	case *pb.Payload_Batch:
		if len(b.Batch.Messages) > c.lim.MaxBatch { // the scan has checked it already
			return jsonrpc.Payload{}, decodeErr(Protobuf, -1, errBatch(c.lim))
		}
		out := jsonrpc.Payload{Batch: true, Elems: make([]jsonrpc.Envelope, len(b.Batch.Messages))}
		for i, m := range b.Batch.Messages {
			var err error
			if out.Elems[i], err = c.refEnvelope(m); err != nil {
				return jsonrpc.Payload{}, err
			}
		}
		return out, nil
	}
	return jsonrpc.Payload{}, &DecodeError{Encoding: Protobuf, Offset: -1, Reason: "payload holds neither a message nor a batch"}
}

func (c *protoCodec) refEnvelope(m *pb.Message) (jsonrpc.Envelope, error) {
	var e jsonrpc.Envelope
	if m == nil {
		return jsonrpc.Envelope{NotObject: true}, nil
	}
	if m.Jsonrpc != nil {
		e.JSONRPC = jsonrpc.AppendQuoted(nil, *m.Jsonrpc)
	}
	if m.Method != nil {
		e.Method = jsonrpc.AppendQuoted(nil, *m.Method)
	}
	for _, f := range []struct {
		v   *pb.Value
		dst *json.RawMessage
	}{{m.Id, &e.ID}, {m.Params, &e.Params}, {m.Result, &e.Result}, {m.Error, &e.Error}} {
		if f.v == nil {
			continue
		}
		b, err := c.refJSON(nil, f.v, 2) // the message is level 1, as in the json codec
		if err != nil {
			return e, err
		}
		*f.dst = b
	}
	return e, nil
}

// json appends v's JSON text.
func (c *protoCodec) refJSON(dst []byte, v *pb.Value, depth int) ([]byte, error) {
	fail := func(reason string) ([]byte, error) {
		return dst, &DecodeError{Encoding: Protobuf, Offset: -1, Reason: reason}
	}
	switch k := v.Kind.(type) {
	case nil, *pb.Value_Null:
		return append(dst, "null"...), nil
	case *pb.Value_Bool:
		return strconv.AppendBool(dst, k.Bool), nil
	case *pb.Value_Int:
		return strconv.AppendInt(dst, k.Int, 10), nil
	case *pb.Value_Uint:
		return strconv.AppendUint(dst, k.Uint, 10), nil
	case *pb.Value_Double:
		if math.IsNaN(k.Double) || math.IsInf(k.Double, 0) {
			return fail("NaN and infinities have no JSON form")
		}
		return appendFloat(dst, k.Double), nil
	case *pb.Value_String_:
		return jsonrpc.AppendQuoted(dst, k.String_), nil
	case *pb.Value_Bytes:
		return appendBase64(dst, base64.StdEncoding, k.Bytes), nil
	case *pb.Value_Number:
		if _, _, _, ok := normDecimal(k.Number); !ok || !validNumber(k.Number) {
			return fail("number " + strconv.Quote(clip(k.Number)) + " is not a JSON number")
		}
		return append(dst, k.Number...), nil
	case *pb.Value_Array:
		if depth > c.lim.MaxDepth {
			return dst, decodeErr(Protobuf, -1, errTooDeep(c.lim))
		}
		if len(k.Array.Items) > c.lim.MaxElements {
			return dst, decodeErr(Protobuf, -1, errTooMany(c.lim))
		}
		dst = append(dst, '[')
		for i, it := range k.Array.Items {
			if i > 0 {
				dst = append(dst, ',')
			}
			var err error
			if dst, err = c.refJSON(dst, it, depth+1); err != nil {
				return dst, err
			}
		}
		return append(dst, ']'), nil
	case *pb.Value_Object:
		if depth > c.lim.MaxDepth {
			return dst, decodeErr(Protobuf, -1, errTooDeep(c.lim))
		}
		ms := k.Object.Members
		if len(ms) > c.lim.MaxElements {
			return dst, decodeErr(Protobuf, -1, errTooMany(c.lim))
		}
		seen := make(map[string]struct{}, len(ms))
		dst = append(dst, '{')
		for i, m := range ms {
			if _, dup := seen[m.Key]; dup {
				return fail("duplicate member " + strconv.Quote(m.Key))
			}
			seen[m.Key] = struct{}{}
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = jsonrpc.AppendQuoted(dst, m.Key)
			dst = append(dst, ':')
			mv := m.Value
			if mv == nil {
				mv = &pb.Value{}
			}
			var err error
			if dst, err = c.refJSON(dst, mv, depth+1); err != nil {
				return dst, err
			}
		}
		return append(dst, '}'), nil
	}
	return fail("unknown value kind")
}

// FuzzProtobufMatchesUnmarshal: the protobuf decoder, which reads wire bytes
// itself, decodes every payload and value as the reference (proto.Unmarshal
// and the pb tree) does: the same JSON text, or an error where it fails.
func FuzzProtobufMatchesUnmarshal(f *testing.F) {
	seedFrames(f, Protobuf)
	for _, v := range []string{`{"a":[1,"x",null,true,1.5,-3,18446744073709551615,1e400]}`, `{"data":"AAEC"}`, `[]`, `""`} {
		b, err := Default(Protobuf).AppendValue(nil, json.RawMessage(v))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	// Repeated singular fields, merged messages, oneofs replaced, unknown
	// fields and wrong wire types.
	f.Add([]byte{0x4a, 0x05, 0x0a, 0x03, 0x0a, 0x01, 'a', 0x4a, 0x05, 0x0a, 0x03, 0x0a, 0x01, 'b'})
	f.Add([]byte{0x18, 0x02, 0x10, 0x01, 0x32, 0x01, 'x', 0x52, 0x00, 0x08, 0x01})
	f.Add([]byte{0x0a, 0x04, 0x12, 0x02, 0x18, 0x02, 0x0a, 0x04, 0x12, 0x02, 0x10, 0x01, 0x78, 0x05})
	f.Add([]byte{0x32, 0x01, 0xff, 0x10, 0x01})
	codecs := []*protoCodec{Default(Protobuf).(*protoCodec)}
	if c, err := New(Protobuf, smallLimits); err == nil {
		codecs = append(codecs, c.(*protoCodec))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, c := range codecs {
			got, gerr := c.DecodeValue(data)
			want, werr := c.refDecodeValue(data)
			if (gerr == nil) != (werr == nil) || (gerr == nil && !bytes.Equal(got, want)) {
				t.Fatalf("DecodeValue(%x): %s, %v; the reference: %s, %v", data, got, gerr, want, werr)
			}
			gp, gerr := c.Decode(data)
			wp, werr := c.refDecode(data)
			if (gerr == nil) != (werr == nil) {
				t.Fatalf("Decode(%x): err %v; the reference: %v", data, gerr, werr)
			}
			if gerr == nil && !reflect.DeepEqual(envelopesText(gp), envelopesText(wp)) {
				t.Fatalf("Decode(%x): %v; the reference: %v", data, envelopesText(gp), envelopesText(wp))
			}
		}
	})
}

// envelopesText lists a payload's envelopes as text, nil members as "-".
func envelopesText(p jsonrpc.Payload) []string {
	out := []string{strconv.FormatBool(p.Batch)}
	for _, e := range p.Elems {
		out = append(out, strconv.FormatBool(e.NotObject))
		for _, m := range [][]byte{e.JSONRPC, e.ID, e.Method, e.Params, e.Result, e.Error} {
			if m == nil {
				out = append(out, "-")
			} else {
				out = append(out, string(m))
			}
		}
	}
	return out
}

// TestShortBytesField checks the fast path of the field readers against
// protowire on the edges of what it takes: field number 0, a varint tag, a
// varint length, another wire type, a length past the end.
func TestShortBytesField(t *testing.T) {
	for _, b := range [][]byte{
		{0x0a, 0x00},
		{0x0a, 0x02, 'h', 'i', 0x10},
		{0x7a, 0x01, 'x'},       // field 15
		{0x02, 0x01, 'x'},       // field 0: invalid
		{0x82, 0x01, 0x01, 'x'}, // field 16: a two-byte tag
		{0x0a, 0x80, 0x01},      // a two-byte length
		{0x08, 0x01},            // a varint field
		{0x0a, 0x05, 'a'},       // past the end
		{0x0a},                  // no length
		{0x0a, 0x7f},            // 127 bytes announced, none there
	} {
		num, v, rest, ok := shortBytesField(b)
		wnum, typ, n := protowire.ConsumeTag(b)
		if n < 0 || wnum < 1 || typ != protowire.BytesType {
			if ok {
				t.Errorf("% x: taken, protowire refuses the tag", b)
			}
			continue
		}
		wv, m := protowire.ConsumeBytes(b[n:])
		switch {
		case m < 0 && ok:
			t.Errorf("% x: taken, protowire refuses the length", b)
		case m >= 0 && ok && (num != wnum || string(v) != string(wv) || len(rest) != len(b)-n-m):
			t.Errorf("% x: got field %d %q rest %d, protowire %d %q rest %d", b, num, v, len(rest), wnum, wv, len(b)-n-m)
		case m >= 0 && !ok && n == 1 && len(b) > 1 && b[1] < 0x80:
			t.Errorf("% x: a one-byte tag and length not taken", b)
		}
	}
}
