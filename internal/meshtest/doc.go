// Package meshtest holds the helpers of the tests that run meshplane's
// controller and agents, for tests only: the mesh binary built once and run
// as controller, agent and CLI processes (BuiltBinary, StartCtl, CLI), a
// controllerd.Run in a goroutine with simulated nodes (StartDaemon,
// StartNode), a PostgreSQL database on a throwaway cluster (PgDatabase) and
// the Docker engine a test needs (NeedEngine), a node's own bus connection
// (DialAsNode). cmd/mesh's tests, controllerd's and the end-to-end tests in
// test/ share them.
package meshtest
