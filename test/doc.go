// Package test holds meshplane's end-to-end tests, as nats-server keeps
// its own in a top-level test package: the mesh binary built and run as a
// controller, agents and the CLI (process, liveness, leader); controllers
// sharing one PostgreSQL store (cluster); an external NATS cluster of
// Debian's nats-server (natscluster); and meshes on hosts made of network
// namespaces (hosts, failover, Docker, the README's add-a-host). The tests
// of controllerd run in process are controllerd's own. Their helpers are
// internal/meshtest's, shared with cmd/mesh's and controllerd's tests.
package test
