// Package lbtest runs mcp-flow-server the way a deployment does: three
// processes sharing a fleet key behind a real load balancer (nginx's stream
// module with njs, quiclb.js routing QUIC by the server ID in connection
// IDs; TCP for Streamable HTTP hashed; docs/deploy.md), restarted one at a
// time with SIGTERM and then one killed with SIGKILL while clients of every
// kind that reconnects keep calling, counting what each call became
// (TestRollingRestart; TestHardKillWithoutFleetKey the same kill without
// the key); clients' address changes routed to their server
// (TestRouteByConnectionID); and 64 MiB streams across a NAT rebinding and
// an active migration through the balancer (TestMigrateThroughBalancer);
// and a browser page's time to notice its server was killed
// (TestBrowserTimeToNotice, headless Chromium).
// The package holds tests only; `make lb` runs them (MCP_FLOW_LB=1).
package lbtest
