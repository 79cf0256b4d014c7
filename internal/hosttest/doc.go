// Package hosttest makes hosts out of Linux network namespaces, for tests
// only (nothing outside a _test.go file should import it): a test that
// wants a controller and its agents on different machines, not on one
// loopback, gets a private link and hosts on it.
//
// New(t, n) makes the link: a namespace of its own (the "lan") holding a
// Linux bridge, the switch, and n hosts, each a namespace with its loopback
// up and a veth pair whose one end (eth0, inside the host) has an address
// on the link's subnet (10.213.0.1, .2, ... by default) and whose other end
// is a port of the bridge in the lan. Nothing is made in the machine's own
// namespace, and no host has a route out of the link: traffic between two
// hosts crosses the bridge, and a host cannot reach the machine (nor the
// machine a host) except through this package. Since every link is private,
// parallel tests may use the same subnet.
//
// A host runs programs (Command, Start: `ip netns exec`, the files shared
// with the test), dials and listens from the test's process (Dial, Listen,
// Do: a goroutine on an OS thread moved into the host's namespace with
// setns), lists its TCP sockets (Sockets), and loses its link (LinkDown:
// its bridge port goes down, the cable pulled, so the host sees no carrier
// and every packet is lost; LinkUp puts it back). A host's clock is the
// machine's: a namespace cannot offset CLOCK_REALTIME, so a host with a
// clock off is the program's business (an environment variable given to
// Start).
//
// Names are unique: every namespace of one New is named
// mht-<unix time in hex>-<random>-lan, -h0, -h1, ..., so that parallel
// tests, and what a crashed run left behind, never collide. t.Cleanup
// kills what Start started (SIGKILL, then waits; and a process Start
// started gets SIGKILL if the test's process dies) and deletes the
// namespaces; New also deletes namespaces of this prefix made more than an
// hour ago (Sweep), not the processes still in them.
//
// It needs root (CAP_SYS_ADMIN and CAP_NET_ADMIN) and iproute2's ip. Without
// them New skips the test, saying why loudly; under CI=true it fails it:
// in CI a missing capability is a failure.
package hosttest
