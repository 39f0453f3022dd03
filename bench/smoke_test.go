package bench

import (
	"context"
	"testing"
	"time"
)

// TestTargetsWork runs every transport of the benchmarks once (the
// TypeScript SDK's too, where interop/node installs), so that the
// benchmark harness is checked by the test suite and cannot rot unnoticed.
func TestTargetsWork(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and spawns the go-sdk fixture")
	}
	srv := flowServer(t)
	targets := map[string]mcpTarget{"sdk-stdio": dialSDKStdio(t), "sdk-http": dialSDKHTTP(t)}
	for _, e := range encodings {
		targets["flow-"+string(e)] = dialFlow(t, srv, e)
	}
	for _, ts := range append(tsTargets(t), denoTargets(t)...) {
		targets[ts.name] = ts.t
	}
	// A hang guard, started once the targets are up (on a fresh machine
	// the set-up above builds the fixture and installs the TypeScript SDK
	// with npm, which took the whole of a 60 s deadline started before
	// it): the calls below took 2-3 s in all with two suites side by side.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for name, tg := range targets {
		if err := tg.Ping(ctx); err != nil {
			t.Errorf("%s ping: %v", name, err)
		}
		if err := tg.Echo(ctx, "hi"); err != nil {
			t.Errorf("%s echo: %v", name, err)
		}
		if n, err := tg.Fetch(ctx, 1<<20); err != nil || n != 1<<20 {
			t.Errorf("%s fetch: %d bytes, %v", name, n, err)
		}
		tg.Close()
	}
	for _, mk := range []func(testing.TB) *rawTarget{rawWT, rawQUIC, rawTCP} {
		r := mk(t)
		if err := r.Ping(); err != nil {
			t.Errorf("%s ping: %v", r.name, err)
		}
		if n, err := r.Fetch(1 << 20); err != nil || n != 1<<20 {
			t.Errorf("%s fetch: %d bytes, %v", r.name, n, err)
		}
		r.close()
	}
}
