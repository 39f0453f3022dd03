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
}

// DefaultLimits returns the default limits.
func DefaultLimits() Limits {
	return Limits{MaxDepth: 64, MaxElements: 1 << 20, MaxPayload: 64 << 20}
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
