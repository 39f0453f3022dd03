package codec

// The protobuf code in pb/ is generated with protoc (Debian: protobuf-compiler)
// and protoc-gen-go at the version of google.golang.org/protobuf in go.mod;
// `make generate` runs this.
//go:generate sh -c "go build -o ../bin/protoc-gen-go google.golang.org/protobuf/cmd/protoc-gen-go && protoc --plugin=protoc-gen-go=../bin/protoc-gen-go --go_out=. --go_opt=paths=source_relative pb/value.proto"
