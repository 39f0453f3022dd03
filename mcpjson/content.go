package mcpjson

// Block is one element of a result's top-level content array (MCP
// CallToolResult.content; spec §5.2 for the ref/stream block).
type Block struct {
	// Start and End are the block's span in the result.
	Start, End int
	// Members are the block's members when it is an object (read as
	// ReadObject reads them), else nil.
	Members []Member
}

// ReadContent reads result and calls visit with each block of its
// top-level "content" array, in order; descend is as ReadObject's, for the
// members of each block. A result that is no object, or has no content
// array, visits nothing. The result is read once, and nothing in it is
// unmarshalled or copied. An error of visit ends the walk and is returned.
func ReadContent(result []byte, descend func(name string) bool, visit func(b Block) error) error {
	d := newDecoder(result)
	if d.PeekKind() != '{' {
		if _, err := d.ReadValue(); err != nil {
			return err
		}
		return atEnd(d)
	}
	if _, err := d.ReadToken(); err != nil {
		return err
	}
	for d.PeekKind() != '}' {
		tok, err := d.ReadToken()
		if err != nil {
			return err
		}
		if tok.String() != "content" || d.PeekKind() != '[' {
			if err := d.SkipValue(); err != nil {
				return err
			}
			continue
		}
		if _, err := d.ReadToken(); err != nil {
			return err
		}
		for d.PeekKind() != ']' {
			var b Block
			if d.PeekKind() == '{' {
				b.Members, b.Start, b.End, err = readObject(d, result, descend)
			} else {
				var v []byte
				v, err = d.ReadValue()
				b.End = int(d.InputOffset())
				b.Start = b.End - len(v)
			}
			if err != nil {
				return err
			}
			if err := visit(b); err != nil {
				return err
			}
		}
		if _, err := d.ReadToken(); err != nil {
			return err
		}
	}
	if _, err := d.ReadToken(); err != nil {
		return err
	}
	return atEnd(d)
}
