package codec

import "fmt"

// Limits bound what decoding a peer's payload may cost (spec §8). A Codec
// checks every length a payload declares against them, and against the bytes
// actually left, before it allocates anything.
type Limits struct {
	// MaxDepth bounds the nesting of arrays and objects. Default 64.
	MaxDepth int
	// MaxElements bounds the elements of one array or the members of one
	// object. Default 1<<20.
	MaxElements int
	// MaxPayload bounds one payload in bytes. Default 64 MiB (a control
	// frame is bounded by its own, smaller limit first).
	MaxPayload int
	// MaxBatch bounds the elements of one JSON-RPC batch. Default 1024. It
	// is checked against the count a CBOR or protobuf payload declares, or
	// while a JSON batch is scanned, before anything is kept per element.
	MaxBatch int
	// MaxNumberDigits bounds the digits of one number's mantissa: the
	// digits before any exponent, integer and fraction parts together (in
	// JSON text leading zeros count; CBOR and protobuf carry at most as
	// many).
	// Default 256; values below 32 are taken as 32, so that every float64
	// and 64-bit integer fits. It keeps bignums and decimal fractions away
	// from math/big's superlinear conversions: a CBOR bignum is refused from
	// its length, before any conversion. (An exponent costs linear time; in
	// CBOR it is 64 bits.)
	MaxNumberDigits int
	// MaxDecoded bounds what one CBOR or protobuf payload expands to while
	// it is decoded: its JSON text, plus, for protobuf, ProtobufValueCost
	// bytes per value for the tree it is unmarshalled into (counted by a
	// scan of the wire bytes before anything is unmarshalled). Default
	// 32 MiB, twice the default control frame: raise it with
	// flow.Limits.MaxFrameSize.
	MaxDecoded int
}

// ProtobufValueCost is what MaxDecoded counts for each value of a protobuf
// payload: about the heap one unmarshalled pb.Value, its oneof wrapper and
// its slot in the parent take.
const ProtobufValueCost = 128

// DefaultLimits returns the default limits.
func DefaultLimits() Limits {
	return Limits{MaxDepth: 64, MaxElements: 1 << 20, MaxPayload: 64 << 20, MaxBatch: 1024, MaxNumberDigits: 256, MaxDecoded: 32 << 20}
}

func (l Limits) withDefaults() Limits {
	d := DefaultLimits()
	if l.MaxDepth <= 0 {
		l.MaxDepth = d.MaxDepth
	}
	if l.MaxElements <= 0 {
		l.MaxElements = d.MaxElements
	}
	if l.MaxPayload <= 0 {
		l.MaxPayload = d.MaxPayload
	}
	if l.MaxBatch <= 0 {
		l.MaxBatch = d.MaxBatch
	}
	if l.MaxNumberDigits <= 0 {
		l.MaxNumberDigits = d.MaxNumberDigits
	}
	l.MaxNumberDigits = max(l.MaxNumberDigits, 32)
	if l.MaxDecoded <= 0 {
		l.MaxDecoded = d.MaxDecoded
	}
	return l
}

// New returns the codec for an encoding with the given limits (zero fields
// take their defaults).
func New(name Name, lim Limits) (Codec, error) {
	lim = lim.withDefaults()
	switch name {
	case JSON:
		return &jsonCodec{lim: lim}, nil
	case CBOR:
		return newCBOR(lim)
	case Protobuf:
		return &protoCodec{lim: lim}, nil
	}
	return nil, fmt.Errorf("codec: unknown encoding %q", name)
}

var defaults = func() map[Name]Codec {
	m := map[Name]Codec{}
	for _, n := range Names {
		c, err := New(n, DefaultLimits())
		if err != nil {
			panic(err)
		}
		m[n] = c
	}
	return m
}()

// Default returns the codec for an encoding with DefaultLimits, or nil for
// an unknown encoding.
func Default(name Name) Codec { return defaults[name] }
