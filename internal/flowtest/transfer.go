package flowtest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"net"
	"testing"
	"time"

	"github.com/mcp-flow/mcp-flow/demotools"
	"github.com/mcp-flow/mcp-flow/flow"
	"github.com/mcp-flow/mcp-flow/internal/lossrelay"
)

// MigrationWindow is the client's stream receive window in the migration
// transfers: the server can be at most this far ahead of what the test
// read, so that a move made after a quarter of the stream was read has most
// of the stream still to carry.
const MigrationWindow = 1 << 20

// TransferAcross dials target through a lossrelay (cfg's Limits get
// MigrationWindow), calls generate for size bytes, reads a quarter of the
// stream, calls move, and reads the rest (spec §2.1): the stream must
// arrive byte-exact (SHA-256), and the address the relay shows the target
// after the move (the mapping that moved, or the new socket's) must have
// received at least half of it: the server followed the move in the middle
// of the transfer. It returns how long move took and the whole transfer.
// bound is the hang guard of the whole transfer (the caller's comment
// gives the measured time).
func TransferAcross(t testing.TB, target *net.UDPAddr, cfg flow.ClientConfig, size int64, bound time.Duration, move func(*flow.Session, *lossrelay.Relay)) (moved, took time.Duration) {
	t.Helper()
	r, err := lossrelay.New(lossrelay.Config{Target: target})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	cfg.Limits.StreamReceiveWindow = MigrationWindow
	s, err := flow.Dial(ctx, "https://"+r.Addr().String()+flow.DefaultPath, cfg)
	if err != nil {
		t.Fatalf("Dial through the relay: %v", err)
	}
	defer s.Close()
	start := time.Now()
	res, err := s.Call(ctx, "tools/call", map[string]any{"name": "generate", "arguments": map[string]any{"bytes": size}})
	if err != nil {
		t.Fatalf("tools/call generate: %v", err)
	}
	if len(res.Refs) != 1 {
		t.Fatalf("generate answered with %d stream references, want 1: %s", len(res.Refs), res.Result)
	}
	sr, err := res.Stream(ctx, res.Refs[0].StreamTag)
	if err != nil {
		t.Fatal(err)
	}
	h := sha256.New()
	if _, err := io.CopyN(h, sr, size/4); err != nil {
		t.Fatalf("the stream's first quarter: %v", err)
	}
	t0 := time.Now()
	move(s, r)
	moved = time.Since(t0)
	got, err := io.Copy(h, sr)
	took = time.Since(start)
	if err != nil || size/4+got != size {
		t.Fatalf("%d of %d bytes, the move after %d: %v", size/4+got, size, size/4, err)
	}
	if hex.EncodeToString(h.Sum(nil)) != demotools.GenerateSHA256(size) {
		t.Fatal("SHA-256 of the stream differs from the generator's")
	}
	newest := lossrelay.Mapping{}
	for _, m := range r.Mappings() {
		if m.Client.Port == s.LocalAddr().(*net.UDPAddr).Port {
			newest = m
		}
	}
	if int64(newest.Received) < size/2 {
		t.Fatalf("the server sent %d bytes to the client's address after the move (%+v), less than half the stream (%d): it did not follow the move mid-transfer", newest.Received, newest, size)
	}
	if err := s.Ping(ctx); err != nil {
		t.Fatalf("ping after the transfer: %v", err)
	}
	return moved, took
}
