// Package codec holds the message encodings of MCP-Flow (spec §4): json, cbor
// (RFC 8949) and protobuf. Each carries any JSON-RPC message losslessly: a
// message that goes JSON → X → JSON comes back as the same JSON value, with
// integers of any size exact, object member order kept, and MCP's base64
// fields (the data of image and audio content, the blob of resource contents)
// carried as raw bytes where the encoding has them.
//
// The package knows nothing of QUIC or sessions; package wire frames its
// output, package flow picks a codec by negotiation.
package codec

import (
	"encoding/json"

	"github.com/mcp-flow/mcp-flow/jsonrpc"
	"github.com/mcp-flow/mcp-flow/protocol"
)

// Name is an encoding's name as it appears in the transport object of
// initialize (spec §4.1).
type Name string

// The encodings of MCP-Flow 0.1.
const (
	JSON     Name = protocol.EncodingJSON
	CBOR     Name = protocol.EncodingCBOR
	Protobuf Name = protocol.EncodingProtobuf
)

// Names lists every encoding this package implements, in the server's order
// of preference.
var Names = []Name{CBOR, Protobuf, JSON}

// Codec encodes and decodes JSON-RPC payloads in one encoding.
//
// A Codec is immutable and safe for concurrent use by any number of
// goroutines.
type Codec interface {
	// Name returns the encoding's name.
	Name() Name

	// Append appends the encoding of one message to dst.
	Append(dst []byte, m jsonrpc.Message) ([]byte, error)

	// AppendBatch appends the encoding of a JSON-RPC batch to dst.
	AppendBatch(dst []byte, batch []jsonrpc.Message) ([]byte, error)

	// Decode decodes the payload of one control-stream frame: a single
	// message or a batch. Malformed input, or input past the codec's limits,
	// is a *DecodeError (answered with -32700). Decode does not validate
	// JSON-RPC rules; jsonrpc.Validate does. The envelopes may alias data.
	Decode(data []byte) (jsonrpc.Payload, error)

	// AppendValue appends the encoding of one JSON value (a datagram payload,
	// for instance) to dst. v must be valid JSON.
	AppendValue(dst []byte, v json.RawMessage) ([]byte, error)

	// DecodeValue decodes one value encoded by AppendValue back to compact
	// JSON text. Errors are *DecodeError.
	DecodeValue(data []byte) (json.RawMessage, error)
}
