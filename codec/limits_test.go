package codec

import (
	"bytes"
	"encoding/json"
	"errors"
	"runtime"
	"strings"
	"testing"

	"github.com/mcp-flow/mcp-flow/codec/pb"
	"github.com/mcp-flow/mcp-flow/jsonrpc"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
)

// allocated returns the bytes f allocates on the heap (all goroutines: the
// tests that call it do not run in parallel).
func allocated(f func()) uint64 {
	var a, b runtime.MemStats
	runtime.ReadMemStats(&a)
	f()
	runtime.ReadMemStats(&b)
	return b.TotalAlloc - a.TotalAlloc
}

// wantLimit fails unless err is a *DecodeError (or *EncodeError) caused by
// crossing the named limit.
func wantLimit(t *testing.T, err error, limit string) {
	t.Helper()
	var le *LimitError
	if !errors.As(err, &le) || le.Limit != limit {
		t.Fatalf("err = %v, want one caused by %s", err, limit)
	}
	var de *DecodeError
	var ee *EncodeError
	if !errors.As(err, &de) && !errors.As(err, &ee) {
		t.Fatalf("err = %T %v, want a *DecodeError or *EncodeError", err, err)
	}
	if de != nil && de.Code() != jsonrpc.CodeParseError {
		t.Fatalf("code %d, want -32700", de.Code())
	}
}

// batchOfZeros returns a batch of n elements of the smallest kind in enc:
// n zeros in JSON and CBOR, n empty messages in protobuf (where every
// element is a message). The 2 MiB JSON batch is n = 1<<20.
func batchOfZeros(enc Name, n int) []byte {
	switch enc {
	case JSON:
		return []byte("[" + strings.Repeat("0,", n-1) + "0]")
	case CBOR:
		return append(appendHead(nil, 4, uint64(n)), make([]byte, n)...)
	case Protobuf:
	default:
		panic("batchOfZeros: no batch written for encoding " + string(enc) + ": add its bytes here")
	}
	inner := bytes.Repeat([]byte{0x0a, 0x00}, n) // Batch.messages: n empty Messages
	b := protowire.AppendTag(nil, 2, protowire.BytesType)
	return protowire.AppendBytes(b, inner)
}

func pingBatch(t *testing.T, enc Name, n int) []byte {
	batch := make([]jsonrpc.Message, n)
	for i := range batch {
		batch[i] = &jsonrpc.Request{ID: jsonrpc.Int64ID(int64(i)), Method: "ping"}
	}
	b, err := Default(enc).AppendBatch(nil, batch)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestBatchLimit crosses MaxBatch in every encoding: at the limit a batch
// decodes whole; one more element is a -32700 caused by MaxBatch.
func TestBatchLimit(t *testing.T) {
	for _, n := range Names {
		c, err := New(n, Limits{MaxBatch: 4})
		if err != nil {
			t.Fatal(err)
		}
		p, err := c.Decode(pingBatch(t, n, 4))
		if err != nil || !p.Batch || len(p.Elems) != 4 {
			t.Fatalf("%s: a batch of 4 at a limit of 4: %d elements, %v", n, len(p.Elems), err)
		}
		_, err = c.Decode(pingBatch(t, n, 5))
		wantLimit(t, err, "MaxBatch")
	}
}

// TestBatchOfZerosIsCheap: the hostile batches (1,048,576 elements,
// 1-2 MiB) are refused, by the codec of their encoding and by Detect from
// any other, after allocating next to nothing: the count is checked before
// anything is kept per element. Before the limit, the JSON one took RSS
// from 18 to 665 MiB and the protobuf one 1.35 GiB.
func TestBatchOfZerosIsCheap(t *testing.T) {
	for _, n := range Names {
		data := batchOfZeros(n, 1<<20)
		var err error
		a := allocated(func() { _, err = Default(n).Decode(data) })
		wantLimit(t, err, "MaxBatch")
		if a > 1<<20 {
			t.Errorf("%s: refusing a %d-byte batch allocated %d bytes", n, len(data), a)
		}
		for _, other := range Names {
			if other == n {
				continue
			}
			var found Name
			var lerr error
			d := allocated(func() { found, _, lerr = Detect(data, other, nil) })
			if found != "" {
				t.Errorf("Detect found a %s batch past MaxBatch in a %s session", n, other)
			}
			wantLimit(t, lerr, "MaxBatch")
			if d > 1<<20 {
				t.Errorf("Detect of a %d-byte %s batch allocated %d bytes", len(data), n, d)
			}
		}
		t.Logf("%s: a batch of 2^20 elements in %d bytes: refused after %d bytes allocated", n, len(data), a)
	}
	// A protobuf batch of 16 MB (8M empty messages) is refused as cheaply.
	data := batchOfZeros(Protobuf, 8<<20)
	var err error
	if a := allocated(func() { _, err = Default(Protobuf).Decode(data) }); a > 1<<20 {
		t.Errorf("refusing a 16 MiB protobuf batch allocated %d bytes", a)
	}
	wantLimit(t, err, "MaxBatch")
}

func request(t *testing.T, enc Name, id string, params string) []byte {
	t.Helper()
	m := &jsonrpc.Request{Method: "m", Params: json.RawMessage(params)}
	if id != "" {
		var err error
		if m.ID, err = jsonrpc.ParseID([]byte(id)); err != nil {
			t.Fatal(err)
		}
	}
	b, err := Default(enc).Append(nil, m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestNumberLimit crosses MaxNumberDigits in every encoding, for an id and
// for a number in params: 40 digits decode, 41 do not. In CBOR such
// integers are bignums, in protobuf number texts. A decimal fraction counts
// its mantissa's digits, whatever its form: 0.000…1 is 1e-N in CBOR.
func TestNumberLimit(t *testing.T) {
	at := "1" + strings.Repeat("0", 39) // 40 digits
	neg := "-" + strings.Repeat("9", 40)
	past := "1" + strings.Repeat("0", 40) // 41 digits
	negPast := "-" + strings.Repeat("9", 41)
	for _, n := range Names {
		c, err := New(n, Limits{MaxNumberDigits: 40})
		if err != nil {
			t.Fatal(err)
		}
		for _, num := range []string{at, neg} {
			p, err := c.Decode(request(t, n, num, "["+num+"]"))
			if err != nil || string(p.Elems[0].ID) != num || string(p.Elems[0].Params) != "["+num+"]" {
				t.Fatalf("%s: %s at the limit: %+v, %v", n, num, p.Elems, err)
			}
		}
		for _, num := range []string{past, negPast} {
			_, err = c.Decode(request(t, n, num, "{}"))
			wantLimit(t, err, "MaxNumberDigits")
			_, err = c.Decode(request(t, n, "1", `{"a":[`+num+`]}`))
			wantLimit(t, err, "MaxNumberDigits")
			if n != JSON { // JSON text is copied as it is
				_, err = c.AppendValue(nil, json.RawMessage(num))
				wantLimit(t, err, "MaxNumberDigits")
			}
		}
	}
	for _, n := range Names {
		c, _ := New(n, Limits{MaxNumberDigits: 40})
		_, err := c.Decode(request(t, n, "1", "[0."+strings.Repeat("1", 41)+"]")) // 41 significant digits
		wantLimit(t, err, "MaxNumberDigits")
		in := "[0." + strings.Repeat("1", 39) + "e-5]" // 40 digits
		p, err := c.Decode(request(t, n, "1", in))
		if err != nil || !sameNumber(strings.Trim(string(p.Elems[0].Params), "[]"), strings.Trim(in, "[]")) {
			t.Fatalf("%s: %s at the limit: %s, %v", n, in, p.Elems[0].Params, err)
		}
	}
}

// TestHugeNumbersAreCheap: the CPU attacks are refused from the
// length alone, before math/big converts anything. An 8 MiB CBOR bignum id
// (before: about 20 s of CPU per frame, decoded twice on a JSON session)
// and a protobuf id of 4M digits (before: 17 s in big.Int.SetString when
// the reply was encoded) are refused by MaxNumberDigits without a
// conversion; a bignum whose magnitude
// is mostly leading zeros is still the small number it is.
func TestHugeNumbersAreCheap(t *testing.T) {
	bignum := func(mag []byte) []byte {
		b := appendHead(nil, 5, 3)
		b = appendHead(b, 3, 7)
		b = append(b, "jsonrpc"...)
		b = append(appendHead(b, 3, 3), "2.0"...)
		b = append(appendHead(b, 3, 2), "id"...)
		b = append(b, 0xc2)
		b = append(appendHead(b, 2, uint64(len(mag))), mag...)
		b = append(appendHead(b, 3, 6), "method"...)
		return append(appendHead(b, 3, 4), "ping"...)
	}
	huge := bignum(bytes.Repeat([]byte{0xff}, 8<<20))
	var err error
	a := allocated(func() { _, err = Default(CBOR).Decode(huge) })
	wantLimit(t, err, "MaxNumberDigits")
	var found Name
	d := allocated(func() { found, _, err = Detect(huge, JSON, nil) })
	wantLimit(t, err, "MaxNumberDigits")
	ok := found != ""
	// What is allocated is the output buffer, 1.5 times the payload;
	// converting the bignum would add 8 MiB for the big.Int and 20 MB of
	// decimal digits.
	if ok || a > 2*uint64(len(huge)) || d > 2*uint64(len(huge)) {
		t.Fatalf("8 MiB bignum: Decode allocated %d bytes, Detect %d (found: %v)", a, d, ok)
	}
	p, err := Default(CBOR).Decode(bignum(append(make([]byte, 8<<20), 7)))
	if err != nil || string(p.Elems[0].ID) != "7" {
		t.Fatalf("8 MiB of leading zeros then 7: %+v, %v", p.Elems, err)
	}

	digits := strings.Repeat("7", 4<<20)
	jv := "2.0"
	pm, err := proto.Marshal(&pb.Payload{Body: &pb.Payload_Message{Message: &pb.Message{Jsonrpc: &jv,
		Id: &pb.Value{Kind: &pb.Value_Number{Number: digits}}, Method: &jv}}})
	if err != nil {
		t.Fatal(err)
	}
	a = allocated(func() { _, err = Default(Protobuf).Decode(pm) })
	wantLimit(t, err, "MaxNumberDigits")
	if a > 1<<20 {
		t.Fatalf("a protobuf id of 4M digits: refusing it allocated %d bytes", a)
	}
	_, err = Default(JSON).Decode([]byte(`{"jsonrpc":"2.0","id":` + digits + `,"method":"ping"}`))
	wantLimit(t, err, "MaxNumberDigits")
}

// TestDecodedLimit crosses MaxDecoded exactly: a CBOR text string of 1000
// control characters becomes 6002 bytes of JSON (each one \u00XX); in
// protobuf the same string counts ProtobufValueCost + 1000 + 6002.
func TestDecodedLimit(t *testing.T) {
	ctl := bytes.Repeat([]byte{0x01}, 1000)
	cb := append(appendHead(nil, 3, 1000), ctl...)
	pv, err := proto.Marshal(&pb.Value{Kind: &pb.Value_String_{String_: string(ctl)}})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		enc  Name
		data []byte
		need int
	}{{CBOR, cb, 6002}, {Protobuf, pv, ProtobufValueCost + 1000 + 6002}} {
		c, _ := New(tc.enc, Limits{MaxDecoded: tc.need})
		if v, err := c.DecodeValue(tc.data); err != nil || len(v) != 6002 {
			t.Fatalf("%s at MaxDecoded %d: %d bytes, %v", tc.enc, tc.need, len(v), err)
		}
		c, _ = New(tc.enc, Limits{MaxDecoded: tc.need - 1})
		_, err := c.DecodeValue(tc.data)
		wantLimit(t, err, "MaxDecoded")
	}
	// A 4 MiB protobuf message whose params are 2^20 small integers would
	// unmarshal into ~100 MiB of tree: refused by the scan, before.
	inner := bytes.Repeat([]byte{0x0a, 0x02, 0x18, 0x00}, 1<<20) // Array.items: Value{int: 0}
	arr := protowire.AppendBytes(protowire.AppendTag(nil, 10, protowire.BytesType), inner)
	msg := protowire.AppendBytes(protowire.AppendTag(nil, 4, protowire.BytesType), arr)
	data := protowire.AppendBytes(protowire.AppendTag(nil, 1, protowire.BytesType), msg)
	a := allocated(func() { _, err = Default(Protobuf).Decode(data) })
	wantLimit(t, err, "MaxDecoded")
	if a > 1<<20 {
		t.Fatalf("refusing %d bytes of protobuf allocated %d bytes", len(data), a)
	}
}
