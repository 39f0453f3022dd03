package wtconn

import (
	"context"
	"errors"
	"io"
	"testing"
	"time"

	"github.com/mcp-flow/mcp-flow/internal/wtpair"
	"github.com/quic-go/webtransport-go"
)

var _ Session = WebTransport{}

// pair returns the two ends of one webtransport-go session on 127.0.0.1,
// each through Wrap.
func pair(t *testing.T) (client, server Session) {
	c, s := wtpair.Loopback(t)
	return Wrap(c), Wrap(s)
}

// TestWrapCarriesStreams: a bidirectional and a unidirectional stream opened
// through Wrap arrive through Wrap on the other side, with their bytes and
// their FIN.
func TestWrapCarriesStreams(t *testing.T) {
	c, s := pair(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	bi, err := c.OpenStreamSync(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := bi.Write([]byte("control")); err != nil {
		t.Fatal(err)
	}
	_ = bi.Close()
	got, err := s.AcceptStream(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if b, err := io.ReadAll(got); err != nil || string(b) != "control" {
		t.Fatalf("bidirectional stream: %q, %v", b, err)
	}

	uni, err := s.OpenUniStreamSync(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := uni.Write([]byte("execution")); err != nil {
		t.Fatal(err)
	}
	_ = uni.Close()
	rs, err := c.AcceptUniStream(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if b, err := io.ReadAll(rs); err != nil || string(b) != "execution" {
		t.Fatalf("unidirectional stream: %q, %v", b, err)
	}
}

// TestWrapGivesNilInterfaces: once the session is closed, every stream
// method fails with a nil interface, not a nil pointer in one (which a
// caller's `st != nil` would take for a stream), and the error is
// webtransport-go's.
func TestWrapGivesNilInterfaces(t *testing.T) {
	c, _ := pair(t)
	if err := c.CloseWithError(5, "done"); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var se *webtransport.SessionError
	if st, err := c.OpenStreamSync(ctx); st != nil || !errors.As(err, &se) {
		t.Errorf("OpenStreamSync: %#v, %v", st, err)
	}
	if st, err := c.AcceptStream(ctx); st != nil || err == nil {
		t.Errorf("AcceptStream: %#v, %v", st, err)
	}
	if st, err := c.OpenUniStreamSync(ctx); st != nil || err == nil {
		t.Errorf("OpenUniStreamSync: %#v, %v", st, err)
	}
	if st, err := c.AcceptUniStream(ctx); st != nil || err == nil {
		t.Errorf("AcceptUniStream: %#v, %v", st, err)
	}
}
