// Package lbtest runs mcp-flow-server the way a deployment does: three
// processes behind a real load balancer (nginx's stream module, UDP for
// MCP-Flow and TCP for Streamable HTTP, docs/deploy.md), restarted one at a
// time with SIGTERM while clients of every kind that reconnects keep calling,
// and counts what each call became (TestRollingRestart); and three
// servers whose connection IDs name them behind nginx with njs (quiclb.js),
// which routes each client's packets to its server across address changes
// (TestRouteByConnectionID). The package holds tests only; `make lb` runs
// them (MCP_FLOW_LB=1).
package lbtest
