package flow_test

import (
	"context"
	"errors"
	"net"
	"os"
	"testing"
	"time"

	"github.com/mcp-flow/mcp-flow/flow"
	"github.com/mcp-flow/mcp-flow/internal/flowtest"
	"github.com/mcp-flow/mcp-flow/internal/lossrelay"
)

// migrationPlan is how many transfers of how many bytes each migration
// test makes: one of 8 MiB in make test; MCP_FLOW_MIGRATION=1 (make
// migration) makes ten of 64 MiB, issue 40's bar.
func migrationPlan() (runs int, size int64) {
	if os.Getenv("MCP_FLOW_MIGRATION") == "1" {
		return 10, 64 << 20
	}
	return 1, 8 << 20
}

// TestNATRebinding: a NAT rebinding in the middle of a transfer (the relay
// gives the client a new port towards the server, spec §2.1): the server
// sees the client's packets from a new address, validates it and follows
// it (RFC 9000 §9.3), and the stream arrives byte-exact.
func TestNATRebinding(t *testing.T) {
	runTransfers(t, "a NAT rebinding", func(s *flow.Session, r *lossrelay.Relay) {
		before := r.Mappings()
		after, err := r.Rebind()
		if err != nil {
			t.Fatal(err)
		}
		if len(before) != 1 || after[before[0].Client.String()].Port == before[0].Outward.Port {
			t.Fatalf("Rebind kept %+v", before)
		}
	})
}

// runTransfers makes migrationPlan's transfers, each across a move, and
// logs how long each took.
func runTransfers(t *testing.T, what string, move func(*flow.Session, *lossrelay.Relay)) {
	runs, size := migrationPlan()
	srv := startServer(t, nil)
	for i := range runs {
		// Hang guard: an 8 MiB transfer with its move takes 0.2 s here,
		// 0.6 s under -race; 64 MiB 1.5 s.
		cfg := flow.ClientConfig{TLSConfig: clientTLS(t), Logger: testLogger(t)}
		moved, took := flowtest.TransferAcross(t, srv.Addr().(*net.UDPAddr), cfg, size, 60*time.Second, move)
		t.Logf("run %d: %d MiB across %s in %v (%.0f MiB/s); the move took %v",
			i+1, size>>20, what, took.Round(time.Millisecond), float64(size)/(1<<20)/took.Seconds(), moved.Round(time.Microsecond))
	}
}

// TestActiveMigration: the client moves its connection to a new local
// socket in the middle of a transfer (Session.Migrate, spec §2.1): the
// relay sees a new client and the server a new address, and the stream
// arrives byte-exact.
func TestActiveMigration(t *testing.T) {
	runTransfers(t, "an active migration", func(s *flow.Session, r *lossrelay.Relay) {
		from := s.LocalAddr()
		if err := s.Migrate(t.Context()); err != nil {
			t.Fatalf("Migrate: %v", err)
		}
		to := s.LocalAddr()
		if to.String() == from.String() {
			t.Fatalf("still on %v after Migrate", from)
		}
		if n := len(r.Mappings()); n != 2 {
			t.Fatalf("the relay has seen %d clients, want the first socket and the new one", n)
		}
	})
}

// TestMigrateWithoutSockets: a session whose connection Dial did not make
// cannot migrate, and says why; nor can a closed one.
func TestMigrateWithoutSockets(t *testing.T) {
	srv := startServer(t, nil)
	s := dial(t, srv, nil)
	s.Close()
	if err := s.Migrate(t.Context()); err == nil {
		t.Error("Migrate on a closed session succeeded")
	}
	var served *flow.Session
	got := make(chan *flow.Session, 1)
	srv2 := startServer(t, func(c *flow.ServerConfig) { c.OnSession = func(s *flow.Session) { got <- s } })
	_ = dial(t, srv2, nil)
	served = <-got
	if err := served.Migrate(t.Context()); !errors.Is(err, flow.ErrNoMigration) {
		t.Errorf("Migrate on a server session: %v, want ErrNoMigration", err)
	}
	if a := served.LocalAddr(); a != nil {
		t.Errorf("a server session's LocalAddr is %v, want nil", a)
	}
}

// TestMover: Move migrates every open session dialled with the Mover, and
// forgets a session once it ended.
func TestMover(t *testing.T) {
	srv := startServer(t, nil)
	var m flow.Mover
	a := dial(t, srv, func(c *flow.ClientConfig) { c.Mover = &m })
	b := dial(t, srv, func(c *flow.ClientConfig) { c.Mover = &m })
	before := []string{a.LocalAddr().String(), b.LocalAddr().String()}
	if n, err := m.Move(t.Context()); n != 2 || err != nil {
		t.Fatalf("Move moved %d sessions (%v), want 2", n, err)
	}
	for i, s := range []*flow.Session{a, b} {
		if s.LocalAddr().String() == before[i] {
			t.Errorf("session %d still on %v", i, before[i])
		}
		if err := s.Ping(t.Context()); err != nil {
			t.Errorf("session %d after Move: %v", i, err)
		}
	}
	b.Close()
	if n, err := m.Move(t.Context()); n != 1 || err != nil {
		t.Fatalf("Move after a session closed moved %d (%v), want 1", n, err)
	}
}

// TestThirdMigration: a connection migrates twice; a third move (quic-go
// v0.64's limit, spec §2.1, quic-go#5814) finds none of the server's spare
// connection IDs left unless the server has issued new ones meanwhile, and
// then fails when its context ends and leaves the session on its path,
// answering. Either way the session answers, on the path Migrate's result
// names. (The third move failed in every run alone; it succeeded once in a
// run of two suites side by side, so the test does not insist on the limit.)
func TestThirdMigration(t *testing.T) {
	srv := startServer(t, nil)
	s := dial(t, srv, nil)
	for i := range 2 {
		if err := s.Migrate(t.Context()); err != nil {
			t.Fatalf("move %d: %v", i+1, err)
		}
	}
	on := s.LocalAddr().String()
	// A probe on loopback is answered in about a millisecond: 300 ms is
	// long past the answer a move that could happen would get.
	ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
	defer cancel()
	switch err := s.Migrate(ctx); {
	case err == nil:
		t.Logf("the third move happened: the server had issued new connection IDs")
		if s.LocalAddr().String() == on {
			t.Errorf("the third move succeeded, yet the session is still on %v", on)
		}
	case errors.Is(err, context.DeadlineExceeded):
		t.Logf("the third move failed at its context's deadline (quic-go#5814)")
		if s.LocalAddr().String() != on {
			t.Errorf("the failed move left the session on %v, not %v", s.LocalAddr(), on)
		}
	default:
		t.Fatalf("the third move: %v, want success or its context's deadline", err)
	}
	if err := s.Ping(t.Context()); err != nil {
		t.Fatalf("ping after the third move: %v", err)
	}
}
