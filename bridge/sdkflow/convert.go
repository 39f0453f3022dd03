package sdkflow

import (
	"encoding/json"
	"errors"

	"github.com/mcp-flow/mcp-flow/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// One message from the go-sdk's model to MCP-Flow's and back, field by
// field: params, results and error data pass as the same raw JSON, never
// encoded or parsed again (no NDJSON, no pipe).

// toFlow returns the go-sdk's message m as a message of package jsonrpc.
func toFlow(m sdk.Message) (jsonrpc.Message, error) {
	switch m := m.(type) {
	case *sdk.Request:
		id, err := idToFlow(m.ID)
		if err != nil {
			return nil, err
		}
		return &jsonrpc.Request{ID: id, Method: m.Method, Params: m.Params}, nil
	case *sdk.Response:
		id, err := idToFlow(m.ID)
		if err != nil {
			return nil, err
		}
		if !m.ID.IsValid() {
			id = jsonrpc.NullID
		}
		if m.Error != nil {
			return jsonrpc.NewErrorResponse(id, errorToFlow(m.Error)), nil
		}
		res := m.Result
		if len(res) == 0 {
			res = json.RawMessage("null")
		}
		return &jsonrpc.Response{ID: id, Result: res}, nil
	}
	return nil, errors.New("sdkflow: unknown go-sdk message type")
}

// toSDK returns m as a message of the go-sdk.
func toSDK(m jsonrpc.Message) sdk.Message {
	switch m := m.(type) {
	case *jsonrpc.Request:
		return &sdk.Request{ID: idToSDK(m.ID), Method: m.Method, Params: m.Params}
	case *jsonrpc.Response:
		r := &sdk.Response{ID: idToSDK(m.ID), Result: m.Result}
		if m.Error != nil {
			r.Result = nil
			r.Error = &sdk.Error{Code: int64(m.Error.Code), Message: m.Error.Message, Data: m.Error.Data}
		}
		return r
	}
	return nil
}

// idToFlow converts a go-sdk id (absent, an integer or a string).
func idToFlow(id sdk.ID) (jsonrpc.ID, error) {
	switch v := id.Raw().(type) {
	case nil:
		return jsonrpc.ID{}, nil
	case int64:
		return jsonrpc.Int64ID(v), nil
	case string:
		return jsonrpc.StringID(v), nil
	}
	return jsonrpc.ID{}, errors.New("sdkflow: a go-sdk id that is neither an integer nor a string")
}

// idToSDK converts an id for the go-sdk, whose ids are integers or strings
// and which makes them from their JSON values (MakeID takes a float64): an
// integer past 2^53, which no go-sdk peer sends, keeps its digits as a
// string.
func idToSDK(id jsonrpc.ID) sdk.ID {
	var v any
	if n, ok := id.Int64(); ok && n > -1<<53 && n < 1<<53 {
		v = float64(n)
	} else if s, ok := id.Str(); ok {
		v = s
	} else if id.IsValid() && !id.IsNull() {
		v = id.Raw()
	}
	out, _ := sdk.MakeID(v) // nil, a float64 or a string: never fails
	return out
}

// errorToFlow returns the error of a go-sdk response as a JSON-RPC error
// object: the go-sdk's own (*jsonrpc.Error) as it is, any other as -32603
// with its text.
func errorToFlow(err error) *jsonrpc.Error {
	var we *sdk.Error
	if errors.As(err, &we) {
		return &jsonrpc.Error{Code: jsonrpc.Code(we.Code), Message: we.Message, Data: we.Data}
	}
	return jsonrpc.NewError(jsonrpc.CodeInternalError, err.Error())
}
