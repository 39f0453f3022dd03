package codec

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"math"
	"slices"
	"strconv"
	"sync"
	"unicode/utf8"

	"github.com/mcp-flow/mcp-flow/jsonrpc"
	"google.golang.org/protobuf/encoding/protowire"
)

// protoCodec is the protobuf encoding (pb/value.proto, spec §4.4): a frame
// holds a pb.Payload, a datagram a pb.Value. Numbers map as in number.go
// (sint64, uint64, double, or decimal text); base64 members as bytes.
type protoCodec struct{ lim Limits }

func (c *protoCodec) Name() Name { return Protobuf }

// pbWriter is the sink that writes protobuf wire bytes (pb/value.proto)
// straight from JSON text, with no pb.Value tree. A length-delimited field's
// length is known only once its contents are written, so the contents are
// written first and the lengths inserted in one pass at the end (finish),
// which moves each byte once.
type pbWriter struct {
	b    []byte
	lens []pbLen // one per message field, in the order of their positions
	open []int   // indexes in lens of the message fields open
	ctx  []byte  // what each open JSON container is: 'a' array, 'o' object
	wk   walker
}

type pbLen struct {
	at    int // where the length goes in b
	n     int // the contents' length, the lengths inside them included
	extra int // while open: the bytes of the lengths inside
}

var pbWriters = sync.Pool{New: func() any { return new(pbWriter) }}

func getPBWriter(dst []byte) *pbWriter {
	w := pbWriters.Get().(*pbWriter)
	w.b = dst
	return w
}

func (w *pbWriter) put() {
	w.b = nil
	if cap(w.lens) > 16<<10 { // 384 KiB: a frame of a few MiB of small values
		w.lens = nil
	}
	w.lens, w.open, w.ctx = w.lens[:0], w.open[:0], w.ctx[:0]
	w.wk.release()
	pbWriters.Put(w)
}

// begin writes the tag of a message field and opens it.
func (w *pbWriter) begin(tag byte) {
	w.b = append(w.b, tag)
	w.lens = append(w.lens, pbLen{at: len(w.b)})
	w.open = append(w.open, len(w.lens)-1)
}

// end closes the message field opened last.
func (w *pbWriter) end() {
	i := w.open[len(w.open)-1]
	w.open = w.open[:len(w.open)-1]
	l := &w.lens[i]
	l.n = len(w.b) - l.at + l.extra
	if k := len(w.open); k > 0 {
		w.lens[w.open[k-1]].extra += l.extra + varintLen(l.n)
	}
}

func varintLen(n int) int {
	if n < 0x80 {
		return 1
	}
	return protowire.SizeVarint(uint64(n))
}

// finish inserts the lengths, moving the bytes after each one right, from
// the last to the first.
func (w *pbWriter) finish() []byte {
	grow := 0
	for _, l := range w.lens {
		grow += varintLen(l.n)
	}
	end := len(w.b)
	w.b = slices.Grow(w.b, grow)[:end+grow]
	b := w.b
	to := len(b)
	for i := len(w.lens) - 1; i >= 0; i-- {
		l := w.lens[i]
		to -= copy(b[to-(end-l.at):to], b[l.at:end])
		if l.n < 0x80 {
			to--
			b[to] = byte(l.n)
		} else {
			v := protowire.SizeVarint(uint64(l.n))
			protowire.AppendVarint(b[to-v:to-v], uint64(l.n))
			to -= v
		}
		end = l.at
	}
	return b
}

func (w *pbWriter) field(tag byte, s []byte) {
	if len(s) < 0x80 {
		w.b = append(w.b, tag, byte(len(s)))
	} else {
		w.b = protowire.AppendVarint(append(w.b, tag), uint64(len(s)))
	}
	w.b = append(w.b, s...)
}

// slot opens the field that holds the next value: an array item, or a
// member's value (the member itself was opened by key). At the top, the
// caller has opened it.
func (w *pbWriter) slot() {
	if k := len(w.ctx); k > 0 {
		if w.ctx[k-1] == 'a' {
			w.begin(0x0a) // Array.items
		} else {
			w.begin(0x12) // Member.value
		}
	}
}

// unslot closes what slot opened, and a member with its value.
func (w *pbWriter) unslot() {
	if k := len(w.ctx); k > 0 {
		w.end()
		if w.ctx[k-1] == 'o' {
			w.end() // the Member
		}
	}
}

// The fields of pb.Value, as tags.
const (
	pbNull   = 1<<3 | 0
	pbBool   = 2<<3 | 0
	pbInt    = 3<<3 | 0
	pbUint   = 4<<3 | 0
	pbDouble = 5<<3 | 1
	pbString = 6<<3 | 2
	pbBytes  = 7<<3 | 2
	pbNumber = 8<<3 | 2
	pbObject = 9<<3 | 2
	pbArray  = 10<<3 | 2
)

// scalar opens the field that holds the next value, a scalar whose fields
// take size bytes, writing its length at once (no entry in lens); done
// closes the member it completes, if any. At the top, the caller has opened
// the field.
func (w *pbWriter) scalar(size int) {
	if k := len(w.ctx); k > 0 {
		tag := byte(0x12) // Member.value
		if w.ctx[k-1] == 'a' {
			tag = 0x0a // Array.items
		}
		if size < 0x80 {
			w.b = append(w.b, tag, byte(size))
		} else {
			w.b = protowire.AppendVarint(append(w.b, tag), uint64(size))
		}
	}
}

func (w *pbWriter) done() {
	if k := len(w.ctx); k > 0 && w.ctx[k-1] == 'o' {
		w.end() // the Member
	}
}

// fieldLen is the size of a length-delimited field of n bytes with a
// one-byte tag.
func fieldLen(n int) int { return 1 + varintLen(n) + n }

func (w *pbWriter) null() {
	w.scalar(2)
	w.b = append(w.b, pbNull, 1)
	w.done()
}

func (w *pbWriter) boolean(b bool) {
	w.scalar(2)
	w.b = append(w.b, pbBool, byte(b2i(b)))
	w.done()
}

func (w *pbWriter) str(s []byte) {
	w.scalar(fieldLen(len(s)))
	w.field(pbString, s)
	w.done()
}

func (w *pbWriter) key(k []byte) {
	w.begin(0x0a) // Object.members
	w.field(0x0a, k)
}

func (w *pbWriter) number(n number) {
	switch n.kind {
	case numInt:
		v := protowire.EncodeZigZag(n.i)
		w.scalar(1 + protowire.SizeVarint(v))
		w.b = protowire.AppendVarint(append(w.b, pbInt), v)
	case numUint:
		w.scalar(1 + protowire.SizeVarint(n.u))
		w.b = protowire.AppendVarint(append(w.b, pbUint), n.u)
	case numFloat:
		w.scalar(9)
		w.b = protowire.AppendFixed64(append(w.b, pbDouble), math.Float64bits(n.f))
	case numBig:
		t := n.mant.Append(nil, 10)
		w.scalar(fieldLen(len(t)))
		w.field(pbNumber, t)
	case numDecimal:
		t := appendDecimal(nil, n.mant, n.exp)
		w.scalar(fieldLen(len(t)))
		w.field(pbNumber, t)
	}
	w.done()
}

func (w *pbWriter) binary(b64 []byte) bool {
	n := decodedLen(b64)
	start := len(w.b)
	w.scalar(fieldLen(n))
	w.b = protowire.AppendVarint(append(w.b, pbBytes), uint64(n))
	off := len(w.b)
	w.b = grow(w.b, n)
	if m, err := strictBase64.Decode(w.b[off:off+n], b64); err != nil || m != n {
		w.b = w.b[:start]
		return false
	}
	w.done()
	return true
}

func (w *pbWriter) beginArray() {
	w.slot()
	w.begin(pbArray)
	w.ctx = append(w.ctx, 'a')
}

func (w *pbWriter) beginObject() {
	w.slot()
	w.begin(pbObject)
	w.ctx = append(w.ctx, 'o')
}

func (w *pbWriter) endArray(int)  { w.endContainer() }
func (w *pbWriter) endObject(int) { w.endContainer() }

func (w *pbWriter) endContainer() {
	w.ctx = w.ctx[:len(w.ctx)-1]
	w.end()
	w.unslot()
}

// value writes raw JSON as a pb.Value's fields.
func (w *pbWriter) value(raw json.RawMessage, lim Limits) error {
	if i, ok := smallInt(raw); ok {
		w.b = protowire.AppendVarint(append(w.b, pbInt), protowire.EncodeZigZag(i))
		return nil
	}
	if w.fromJSON(raw, lim) {
		return nil
	}
	// Refused: the walk through the sink interface finds the exact error.
	if err := w.wk.walk(raw, lim, w); err != nil {
		return encodeErr(Protobuf, err)
	}
	return nil
}

// valueField writes raw JSON as the message field tag.
func (w *pbWriter) valueField(tag byte, raw json.RawMessage, lim Limits) error {
	w.begin(tag)
	err := w.value(raw, lim)
	w.end()
	return err
}

// The fields of pb.Message, as tags.
const (
	pbMsgJSONRPC = 1<<3 | 2
	pbMsgID      = 2<<3 | 2
	pbMsgMethod  = 3<<3 | 2
	pbMsgParams  = 4<<3 | 2
	pbMsgResult  = 5<<3 | 2
	pbMsgError   = 6<<3 | 2
)

func (c *protoCodec) message(w *pbWriter, m jsonrpc.Message) error {
	w.b = append(w.b, pbMsgJSONRPC, 3, '2', '.', '0')
	switch m := m.(type) {
	case *jsonrpc.Request:
		if m.ID.IsValid() {
			if err := w.valueField(pbMsgID, json.RawMessage(m.ID.Raw()), c.lim); err != nil {
				return err
			}
		}
		w.b = protowire.AppendString(protowire.AppendVarint(w.b, pbMsgMethod), m.Method)
		if len(m.Params) > 0 {
			return w.valueField(pbMsgParams, m.Params, c.lim)
		}
	case *jsonrpc.Response:
		id := m.ID
		if !id.IsValid() {
			id = jsonrpc.NullID
		}
		if err := w.valueField(pbMsgID, json.RawMessage(id.Raw()), c.lim); err != nil {
			return err
		}
		switch {
		case m.Error != nil:
			return w.valueField(pbMsgError, m.Error.AppendJSON(nil), c.lim)
		case len(m.Result) == 0:
			w.b = append(w.b, pbMsgResult, 2, pbObject, 0)
		default:
			return w.valueField(pbMsgResult, m.Result, c.lim)
		}
	}
	return nil
}

func (c *protoCodec) Append(dst []byte, m jsonrpc.Message) ([]byte, error) {
	w := getPBWriter(dst)
	defer w.put()
	w.begin(1<<3 | 2) // Payload.message
	if err := c.message(w, m); err != nil {
		return dst, err
	}
	w.end()
	return w.finish(), nil
}

func (c *protoCodec) AppendBatch(dst []byte, batch []jsonrpc.Message) ([]byte, error) {
	w := getPBWriter(dst)
	defer w.put()
	w.begin(2<<3 | 2) // Payload.batch
	for _, m := range batch {
		w.begin(1<<3 | 2) // Batch.messages
		if err := c.message(w, m); err != nil {
			return dst, err
		}
		w.end()
	}
	w.end()
	return w.finish(), nil
}

func (c *protoCodec) AppendValue(dst []byte, v json.RawMessage) ([]byte, error) {
	w := getPBWriter(dst)
	defer w.put()
	if err := w.value(v, c.lim); err != nil {
		return dst, err
	}
	return w.finish(), nil
}

// check refuses a payload past MaxPayload, and runs the scan that checks
// the wire bytes and the limits before anything is decoded.
func (c *protoCodec) check(data []byte, payload bool) error {
	if len(data) > c.lim.MaxPayload {
		return &DecodeError{Encoding: Protobuf, Offset: -1, Reason: "payload of " + strconv.Itoa(len(data)) + " bytes exceeds the limit of " + strconv.Itoa(c.lim.MaxPayload)}
	}
	sc := &protoScan{lim: c.lim}
	var err error
	if payload {
		err = sc.payload(data)
	} else {
		err = sc.value(data, 1)
	}
	if err != nil {
		return decodeErr(Protobuf, -1, err)
	}
	return nil
}

func (c *protoCodec) DecodeValue(data []byte) (json.RawMessage, error) {
	if err := c.check(data, false); err != nil {
		return nil, err
	}
	out, err := c.value(make([]byte, 0, min(2*len(data)+8, c.lim.MaxDecoded)), segs{n: 1, first: data}, 1)
	if err != nil {
		return nil, err
	}
	return out, nil
}

func (c *protoCodec) Decode(data []byte) (jsonrpc.Payload, error) {
	if err := c.check(data, true); err != nil {
		return jsonrpc.Payload{}, err
	}
	// Payload: message (1) or batch (2), a oneof.
	var kind protowire.Number
	var body segs
	for b := data; len(b) > 0; {
		f, rest := nextField(b)
		b = rest
		if (f.num == 1 || f.num == 2) && f.typ == protowire.BytesType {
			if kind != f.num {
				body = segs{}
			}
			kind = f.num
			body.add(f.val)
		}
	}
	buf := make([]byte, 0, min(len(data)+len(data)/2+64, c.lim.MaxDecoded))
	switch kind {
	case 1:
		e, buf, err := c.decodeMessage(buf, body)
		if err != nil {
			return jsonrpc.Payload{}, err
		}
		return jsonrpc.Payload{Elems: []jsonrpc.Envelope{e.envelope(buf)}}, nil
	case 2:
		var envs []envSpans
		for i := range body.n {
			for b := body.at(i); len(b) > 0; {
				f, rest := nextField(b)
				b = rest
				if f.num != 1 || f.typ != protowire.BytesType {
					continue
				}
				if len(envs) == c.lim.MaxBatch { // the scan has checked it already
					return jsonrpc.Payload{}, decodeErr(Protobuf, -1, errBatch(c.lim))
				}
				var e envSpans
				var err error
				if e, buf, err = c.decodeMessage(buf, segs{n: 1, first: f.val}); err != nil {
					return jsonrpc.Payload{}, err
				}
				envs = append(envs, e)
			}
		}
		p := jsonrpc.Payload{Batch: true, Elems: make([]jsonrpc.Envelope, len(envs))}
		for i, e := range envs {
			p.Elems[i] = e.envelope(buf)
		}
		return p, nil
	}
	return jsonrpc.Payload{}, &DecodeError{Encoding: Protobuf, Offset: -1, Reason: "payload holds neither a message nor a batch"}
}

// ---- decoding: wire bytes to JSON text ----
//
// The decoder reads wire bytes that the scan has checked, with proto3's
// rules for a field that occurs more than once (what proto.Unmarshal does;
// FuzzProtobufMatchesUnmarshal holds it to that): the last scalar wins, the
// occurrences of a message field merge (as if their bytes were one), the
// last member of a oneof replaces the others, and a field of an unknown
// number or of another wire type than its own is skipped. (The scan has
// checked that every string, in every occurrence, is UTF-8.)

// segs holds the bytes of a message field's occurrences, usually one.
type segs struct {
	n     int
	first []byte
	more  [][]byte
}

func (s *segs) add(b []byte) {
	if s.n == 0 {
		s.first = b
	} else {
		s.more = append(s.more, b)
	}
	s.n++
}

func (s *segs) at(i int) []byte {
	if i == 0 {
		return s.first
	}
	return s.more[i-1]
}

// pbField is one field: its number, wire type, and its bytes (BytesType) or
// value (VarintType, Fixed64Type).
type pbField struct {
	num protowire.Number
	typ protowire.Type
	val []byte
	v   uint64
}

// shortBytesField reads the field that starts b when it is the common one:
// a length-delimited field with a one-byte tag (numbers 1-15) and a
// one-byte length (under 128 bytes), which need no varint decoding. ok is
// false for anything else, left to protowire.
func shortBytesField(b []byte) (num protowire.Number, v, rest []byte, ok bool) {
	if len(b) < 2 || b[0]&0x87 != byte(protowire.BytesType) || b[0] < 8 || b[1] >= 0x80 || int(b[1]) > len(b)-2 {
		return 0, nil, nil, false
	}
	end := 2 + int(b[1])
	return protowire.Number(b[0] >> 3), b[2:end:end], b[end:], true
}

// nextField reads the field that starts b, which the scan has checked.
func nextField(b []byte) (pbField, []byte) {
	if num, v, rest, ok := shortBytesField(b); ok {
		return pbField{num: num, typ: protowire.BytesType, val: v}, rest
	}
	num, typ, n := protowire.ConsumeTag(b)
	if n < 0 {
		return pbField{}, nil
	}
	b = b[n:]
	f := pbField{num: num, typ: typ}
	switch typ {
	case protowire.BytesType:
		f.val, n = protowire.ConsumeBytes(b)
	case protowire.VarintType:
		f.v, n = protowire.ConsumeVarint(b)
	case protowire.Fixed64Type:
		f.v, n = protowire.ConsumeFixed64(b)
	default:
		n = protowire.ConsumeFieldValue(num, typ, b)
	}
	if n < 0 {
		return pbField{}, nil
	}
	return f, b[n:]
}

// errUTF8 refuses a string field that is not UTF-8, as proto.Unmarshal does.
var errUTF8 = errors.New("string field contains invalid UTF-8")

// decodeMessage appends the members of a pb.Message to buf and records
// where they lie.
func (c *protoCodec) decodeMessage(buf []byte, s segs) (envSpans, []byte, error) {
	var e envSpans
	var jv, method []byte
	var hasJ, hasM bool
	var vals [4]segs // id, params, result, error
	for i := range s.n {
		for b := s.at(i); len(b) > 0; {
			f, rest := nextField(b)
			b = rest
			if f.typ != protowire.BytesType {
				continue
			}
			switch f.num {
			case 1, 3:
				if f.num == 1 {
					jv, hasJ = f.val, true
				} else {
					method, hasM = f.val, true
				}
			case 2:
				vals[0].add(f.val)
			case 4, 5, 6:
				vals[f.num-3].add(f.val)
			}
		}
	}
	if hasJ {
		from := len(buf)
		buf = appendQuotedUTF8(buf, jv)
		e.spans[0] = span{from, len(buf)}
	}
	if hasM {
		from := len(buf)
		buf = appendQuotedUTF8(buf, method)
		e.spans[2] = span{from, len(buf)}
	}
	for i, slot := range [4]int{1, 3, 4, 5} {
		if vals[i].n == 0 {
			continue
		}
		from := len(buf)
		var err error
		if buf, err = c.value(buf, vals[i], 2); err != nil { // the message is level 1, as in the json codec
			return e, buf, err
		}
		e.spans[slot] = span{from, len(buf)}
	}
	return e, buf, nil
}

// value appends the JSON text of the pb.Value in s at nesting level depth.
func (c *protoCodec) value(dst []byte, s segs, depth int) ([]byte, error) {
	var kind protowire.Number
	var f pbField // the last scalar member of the oneof
	var sub segs  // the occurrences of the object or array member
	for i := range s.n {
		for b := s.at(i); len(b) > 0; {
			g, rest := nextField(b)
			b = rest
			switch {
			case g.num >= 1 && g.num <= 4 && g.typ == protowire.VarintType,
				g.num == 5 && g.typ == protowire.Fixed64Type:
			case g.num >= 6 && g.num <= 8 && g.typ == protowire.BytesType:
			case (g.num == 9 || g.num == 10) && g.typ == protowire.BytesType:
				if kind != g.num {
					sub = segs{}
				}
				sub.add(g.val)
			default:
				continue
			}
			kind, f = g.num, g
		}
	}
	switch kind {
	case 0, 1:
		return append(dst, "null"...), nil
	case 2:
		return strconv.AppendBool(dst, f.v != 0), nil
	case 3:
		return strconv.AppendInt(dst, protowire.DecodeZigZag(f.v), 10), nil
	case 4:
		return strconv.AppendUint(dst, f.v, 10), nil
	case 5:
		d := math.Float64frombits(f.v)
		if math.IsNaN(d) || math.IsInf(d, 0) {
			return dst, &DecodeError{Encoding: Protobuf, Offset: -1, Reason: "NaN and infinities have no JSON form"}
		}
		return appendFloat(dst, d), nil
	case 6:
		return appendQuotedUTF8(dst, f.val), nil
	case 7:
		return appendBase64(dst, base64.StdEncoding, f.val), nil
	case 8:
		if _, _, _, ok := normDecimal(string(f.val)); !ok || !validNumber(string(f.val)) {
			return dst, &DecodeError{Encoding: Protobuf, Offset: -1, Reason: "number " + strconv.Quote(clip(string(f.val))) + " is not a JSON number"}
		}
		return append(dst, f.val...), nil
	case 9:
		return c.object(dst, sub, depth)
	}
	return c.array(dst, sub, depth)
}

// items calls each with the contents of every occurrence of field 1 (the
// repeated field of Object and Array) in s, failing past MaxElements.
func (c *protoCodec) items(s segs, each func(i int, b []byte) error) error {
	n := 0
	for i := range s.n {
		for b := s.at(i); len(b) > 0; {
			f, rest := nextField(b)
			b = rest
			if f.num != 1 || f.typ != protowire.BytesType {
				continue
			}
			if n == c.lim.MaxElements {
				return decodeErr(Protobuf, -1, errTooMany(c.lim))
			}
			if err := each(n, f.val); err != nil {
				return err
			}
			n++
		}
	}
	return nil
}

func (c *protoCodec) array(dst []byte, s segs, depth int) ([]byte, error) {
	if depth > c.lim.MaxDepth {
		return dst, decodeErr(Protobuf, -1, errTooDeep(c.lim))
	}
	dst = append(dst, '[')
	err := c.items(s, func(i int, b []byte) error {
		if i > 0 {
			dst = append(dst, ',')
		}
		var err error
		dst, err = c.value(dst, segs{n: 1, first: b}, depth+1)
		return err
	})
	return append(dst, ']'), err
}

func (c *protoCodec) object(dst []byte, s segs, depth int) ([]byte, error) {
	if depth > c.lim.MaxDepth {
		return dst, decodeErr(Protobuf, -1, errTooDeep(c.lim))
	}
	var small [16][]byte
	var seen map[string]struct{}
	dst = append(dst, '{')
	err := c.items(s, func(i int, b []byte) error {
		// Member: key (1), value (2).
		var key []byte
		var val segs
		for len(b) > 0 {
			f, rest := nextField(b)
			b = rest
			if f.typ != protowire.BytesType {
				continue
			}
			switch f.num {
			case 1:
				key = f.val
			case 2:
				val.add(f.val)
			}
		}
		if i < len(small) {
			for _, k := range small[:i] {
				if string(k) == string(key) {
					return &DecodeError{Encoding: Protobuf, Offset: -1, Reason: "duplicate member " + strconv.Quote(string(key))}
				}
			}
			small[i] = key
		} else {
			if seen == nil {
				seen = make(map[string]struct{}, 2*len(small))
				for _, k := range small {
					seen[string(k)] = struct{}{}
				}
			}
			if _, dup := seen[string(key)]; dup {
				return &DecodeError{Encoding: Protobuf, Offset: -1, Reason: "duplicate member " + strconv.Quote(string(key))}
			}
			seen[string(key)] = struct{}{}
		}
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(appendQuotedUTF8(dst, key), ':')
		var err error
		dst, err = c.value(dst, val, depth+1)
		return err
	})
	return append(dst, '}'), err
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
		if num, v, rest, ok := shortBytesField(b); ok {
			if err := f(num, v); err != nil {
				return err
			}
			b = rest
			continue
		}
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return protowire.ParseError(n)
		}
		if num > protowire.MaxValidNumber {
			return errors.New("field number " + strconv.Itoa(int(num)) + " is out of range")
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
		case 1, 3: // jsonrpc, method
			if !utf8.Valid(v) {
				return errUTF8
			}
		}
		return sc.spend(2*len(v) + 2)
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
			if !utf8.Valid(v) {
				return errUTF8
			}
			return sc.spend(len(v) + quotedLen(v))
		case 7: // bytes
			return sc.spend(len(v) + base64.StdEncoding.EncodedLen(len(v)) + 2)
		case 8: // number text
			if !utf8.Valid(v) {
				return errUTF8
			}
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
		switch num {
		case 2:
			return sc.value(v, depth+1)
		case 1:
			if !utf8.Valid(v) {
				return errUTF8
			}
		}
		return sc.spend(len(v) + quotedLen(v) + 1) // the key
	})
}
