package codec

import (
	"encoding/base64"
	"encoding/json"
	"math"
	"strconv"

	"github.com/mcp-flow/mcp-flow/codec/pb"
	"github.com/mcp-flow/mcp-flow/jsonrpc"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
)

// protoCodec is the protobuf encoding (pb/value.proto, spec §4.4): a frame
// holds a pb.Payload, a datagram a pb.Value. Numbers map as in number.go
// (sint64, uint64, double, or decimal text); base64 members as bytes.
type protoCodec struct{ lim Limits }

func (c *protoCodec) Name() Name { return Protobuf }

// treeBuilder is the sink that builds a pb.Value tree.
type treeBuilder struct {
	stack []*pb.Value
	keys  []string
	root  *pb.Value
}

func (t *treeBuilder) add(v *pb.Value) {
	if len(t.stack) == 0 {
		t.root = v
		return
	}
	switch p := t.stack[len(t.stack)-1].Kind.(type) {
	case *pb.Value_Array:
		p.Array.Items = append(p.Array.Items, v)
	case *pb.Value_Object:
		k := t.keys[len(t.keys)-1]
		p.Object.Members = append(p.Object.Members, &pb.Member{Key: k, Value: v})
	}
}

func (t *treeBuilder) null()          { t.add(&pb.Value{Kind: &pb.Value_Null{Null: true}}) }
func (t *treeBuilder) boolean(b bool) { t.add(&pb.Value{Kind: &pb.Value_Bool{Bool: b}}) }
func (t *treeBuilder) str(s string)   { t.add(&pb.Value{Kind: &pb.Value_String_{String_: s}}) }
func (t *treeBuilder) key(s string)   { t.keys[len(t.keys)-1] = s }
func (t *treeBuilder) number(n number) {
	switch n.kind {
	case numInt:
		t.add(&pb.Value{Kind: &pb.Value_Int{Int: n.i}})
	case numUint:
		t.add(&pb.Value{Kind: &pb.Value_Uint{Uint: n.u}})
	case numFloat:
		t.add(&pb.Value{Kind: &pb.Value_Double{Double: n.f}})
	case numBig:
		t.add(&pb.Value{Kind: &pb.Value_Number{Number: n.mant.String()}})
	case numDecimal:
		t.add(&pb.Value{Kind: &pb.Value_Number{Number: string(appendDecimal(nil, n.mant, n.exp))}})
	}
}
func (t *treeBuilder) binary(b64 []byte) bool {
	b := make([]byte, base64.StdEncoding.DecodedLen(len(b64)))
	n, err := strictBase64.Decode(b, b64)
	if err != nil {
		return false
	}
	t.add(&pb.Value{Kind: &pb.Value_Bytes{Bytes: b[:n]}})
	return true
}
func (t *treeBuilder) beginArray() { t.open(&pb.Value{Kind: &pb.Value_Array{Array: &pb.Array{}}}) }
func (t *treeBuilder) beginObject() {
	t.open(&pb.Value{Kind: &pb.Value_Object{Object: &pb.Object{}}})
}
func (t *treeBuilder) open(v *pb.Value) {
	t.add(v)
	t.stack = append(t.stack, v)
	t.keys = append(t.keys, "")
}
func (t *treeBuilder) endArray(int)  { t.close() }
func (t *treeBuilder) endObject(int) { t.close() }
func (t *treeBuilder) close() {
	t.stack = t.stack[:len(t.stack)-1]
	t.keys = t.keys[:len(t.keys)-1]
}

func (c *protoCodec) tree(raw json.RawMessage) (*pb.Value, error) {
	if len(raw) == 0 {
		return nil, nil
	}
	t := &treeBuilder{}
	if err := walkJSON(raw, c.lim, t); err != nil {
		return nil, encodeErr(Protobuf, err)
	}
	return t.root, nil
}

func (c *protoCodec) message(m jsonrpc.Message) (*pb.Message, error) {
	v := "2.0"
	out := &pb.Message{Jsonrpc: &v}
	var err error
	switch m := m.(type) {
	case *jsonrpc.Request:
		out.Method = &m.Method
		if m.ID.IsValid() {
			if out.Id, err = c.tree(json.RawMessage(m.ID.Raw())); err != nil {
				return nil, err
			}
		}
		out.Params, err = c.tree(m.Params)
	case *jsonrpc.Response:
		id := m.ID
		if !id.IsValid() {
			id = jsonrpc.NullID
		}
		if out.Id, err = c.tree(json.RawMessage(id.Raw())); err != nil {
			return nil, err
		}
		if m.Error != nil {
			out.Error, err = c.tree(m.Error.AppendJSON(nil))
		} else if len(m.Result) == 0 {
			out.Result = &pb.Value{Kind: &pb.Value_Object{Object: &pb.Object{}}}
		} else {
			out.Result, err = c.tree(m.Result)
		}
	}
	return out, err
}

var marshalOpts = proto.MarshalOptions{Deterministic: true}

func (c *protoCodec) Append(dst []byte, m jsonrpc.Message) ([]byte, error) {
	pm, err := c.message(m)
	if err != nil {
		return dst, err
	}
	return marshalOpts.MarshalAppend(dst, &pb.Payload{Body: &pb.Payload_Message{Message: pm}})
}

func (c *protoCodec) AppendBatch(dst []byte, batch []jsonrpc.Message) ([]byte, error) {
	b := &pb.Batch{}
	for _, m := range batch {
		pm, err := c.message(m)
		if err != nil {
			return dst, err
		}
		b.Messages = append(b.Messages, pm)
	}
	return marshalOpts.MarshalAppend(dst, &pb.Payload{Body: &pb.Payload_Batch{Batch: b}})
}

func (c *protoCodec) AppendValue(dst []byte, v json.RawMessage) ([]byte, error) {
	t, err := c.tree(v)
	if err != nil {
		return dst, err
	}
	return marshalOpts.MarshalAppend(dst, t)
}

func (c *protoCodec) unmarshal(data []byte, m proto.Message) error {
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

func (c *protoCodec) DecodeValue(data []byte) (json.RawMessage, error) {
	var v pb.Value
	if err := c.unmarshal(data, &v); err != nil {
		return nil, err
	}
	return c.json(nil, &v, 1)
}

func (c *protoCodec) Decode(data []byte) (jsonrpc.Payload, error) {
	var p pb.Payload
	if err := c.unmarshal(data, &p); err != nil {
		return jsonrpc.Payload{}, err
	}
	switch b := p.Body.(type) {
	case *pb.Payload_Message:
		e, err := c.envelope(b.Message)
		return jsonrpc.Payload{Elems: []jsonrpc.Envelope{e}}, err
	case *pb.Payload_Batch:
		if len(b.Batch.Messages) > c.lim.MaxBatch { // the scan has checked it already
			return jsonrpc.Payload{}, decodeErr(Protobuf, -1, errBatch(c.lim))
		}
		out := jsonrpc.Payload{Batch: true, Elems: make([]jsonrpc.Envelope, len(b.Batch.Messages))}
		for i, m := range b.Batch.Messages {
			var err error
			if out.Elems[i], err = c.envelope(m); err != nil {
				return jsonrpc.Payload{}, err
			}
		}
		return out, nil
	}
	return jsonrpc.Payload{}, &DecodeError{Encoding: Protobuf, Offset: -1, Reason: "payload holds neither a message nor a batch"}
}

func (c *protoCodec) envelope(m *pb.Message) (jsonrpc.Envelope, error) {
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
		b, err := c.json(nil, f.v, 2) // the message is level 1, as in the json codec
		if err != nil {
			return e, err
		}
		*f.dst = b
	}
	return e, nil
}

// json appends v's JSON text.
func (c *protoCodec) json(dst []byte, v *pb.Value, depth int) ([]byte, error) {
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
			if dst, err = c.json(dst, it, depth+1); err != nil {
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
			if dst, err = c.json(dst, mv, depth+1); err != nil {
				return dst, err
			}
		}
		return append(dst, '}'), nil
	}
	return fail("unknown value kind")
}

// validNumber reports whether s is a JSON number.
func validNumber(s string) bool {
	i := 0
	if i < len(s) && s[i] == '-' {
		i++
	}
	digits := func() int {
		j := i
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
		return i - j
	}
	if i < len(s) && s[i] == '0' {
		i++
	} else if digits() == 0 {
		return false
	}
	if i < len(s) && s[i] == '.' {
		i++
		if digits() == 0 {
			return false
		}
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		if digits() == 0 {
			return false
		}
	}
	return i == len(s)
}

// protoScan checks a protobuf payload's wire bytes against the limits
// before it is unmarshalled (spec §8): the elements of a batch (MaxBatch),
// of each array and object (MaxElements), the nesting (MaxDepth), the text
// of each number (MaxNumberDigits), and what the payload expands to
// (MaxDecoded: ProtobufValueCost per value and member, plus the text of its
// strings and bytes as Go strings and as JSON). It allocates nothing and
// costs one pass over the bytes; malformed wire bytes are refused here too.
type protoScan struct {
	lim  Limits
	cost int
}

// fields calls f with the number and contents of each length-delimited
// field of the message in b, skipping the others.
func (sc *protoScan) fields(b []byte, f func(num protowire.Number, v []byte) error) error {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return protowire.ParseError(n)
		}
		b = b[n:]
		m := protowire.ConsumeFieldValue(num, typ, b)
		if m < 0 {
			return protowire.ParseError(m)
		}
		if typ == protowire.BytesType {
			v, _ := protowire.ConsumeBytes(b)
			if err := f(num, v); err != nil {
				return err
			}
		}
		b = b[m:]
	}
	return nil
}

// repeated calls f with each occurrence of field 1 in b (the repeated
// field of Batch, Object and Array), failing with tooMany past max of them.
func (sc *protoScan) repeated(b []byte, max int, tooMany func(Limits) error, f func([]byte) error) error {
	n := 0
	return sc.fields(b, func(num protowire.Number, v []byte) error {
		if num != 1 {
			return nil
		}
		if n++; n > max {
			return tooMany(sc.lim)
		}
		return f(v)
	})
}

func (sc *protoScan) spend(n int) error {
	if sc.cost += n; sc.cost > sc.lim.MaxDecoded {
		return errDecoded(sc.lim)
	}
	return nil
}

func (sc *protoScan) payload(b []byte) error {
	return sc.fields(b, func(num protowire.Number, v []byte) error {
		switch num {
		case 1:
			return sc.message(v)
		case 2:
			return sc.repeated(v, sc.lim.MaxBatch, errBatch, sc.message)
		}
		return nil
	})
}

func (sc *protoScan) message(b []byte) error {
	if err := sc.spend(ProtobufValueCost); err != nil {
		return err
	}
	return sc.fields(b, func(num protowire.Number, v []byte) error {
		switch num {
		case 2, 4, 5, 6: // id, params, result, error
			return sc.value(v, 2) // the message is level 1, as in the json codec
		}
		return sc.spend(2*len(v) + 2) // jsonrpc, method
	})
}

func (sc *protoScan) value(b []byte, depth int) error {
	if err := sc.spend(ProtobufValueCost); err != nil {
		return err
	}
	if depth > sc.lim.MaxDepth+1 {
		return errTooDeep(sc.lim)
	}
	return sc.fields(b, func(num protowire.Number, v []byte) error {
		switch num {
		case 6: // string
			return sc.spend(len(v) + quotedLen(v))
		case 7: // bytes
			return sc.spend(len(v) + base64.StdEncoding.EncodedLen(len(v)) + 2)
		case 8: // number text
			if mantissaDigits(v) > sc.lim.MaxNumberDigits {
				return errNumber(sc.lim)
			}
			return sc.spend(2 * len(v))
		case 9: // object members
			return sc.repeated(v, sc.lim.MaxElements, errTooMany, func(v []byte) error { return sc.member(v, depth) })
		case 10: // array items
			return sc.repeated(v, sc.lim.MaxElements, errTooMany, func(v []byte) error { return sc.value(v, depth+1) })
		}
		return nil
	})
}

func (sc *protoScan) member(b []byte, depth int) error {
	if err := sc.spend(ProtobufValueCost); err != nil {
		return err
	}
	return sc.fields(b, func(num protowire.Number, v []byte) error {
		if num == 2 {
			return sc.value(v, depth+1)
		}
		return sc.spend(len(v) + quotedLen(v) + 1) // the key
	})
}
