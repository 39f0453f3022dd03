package codec

// This file is long because it is the protobuf writer in one piece: the
// message builder with its back-patched lengths, and the mapping of every JSON
// value to the Value message (codec/pb).

import (
	"encoding/json"
	"math"
	"slices"
	"strconv"
	"sync"

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

// fromJSON writes the JSON value raw with the fused scanner (fused.go),
// and reports false, leaving w as it found it, on anything walkJSON
// refuses.
func (w *pbWriter) fromJSON(raw []byte, lim Limits) bool {
	mark, lens, open, ctx := len(w.b), len(w.lens), len(w.open), len(w.ctx)
	if !fuse(fusedOut{pb: w}, &w.wk, raw, lim) {
		w.b, w.lens, w.open, w.ctx = w.b[:mark], w.lens[:lens], w.open[:open], w.ctx[:ctx]
		return false
	}
	return true
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
