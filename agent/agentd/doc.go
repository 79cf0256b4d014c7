// Package agentd is the agent process, assembled: data-directory lock, bus
// connection, runtime, outbox, metrics and artifact store servers. `mesh
// agent` parses its flags into a Config and calls Run; nothing of the
// assembly is left in cmd/mesh.
//
// # The data directory
//
// An agent's data directory (Config.Data) holds:
//
//   - OutboxDir: the reports not yet delivered and the agent's State
//     (agent.OpenOutbox; the format is documented there), so a restarted
//     agent delivers them, late and counted, and remembers what it made;
//   - LockFile: held (flock) while an agent runs on the directory, so two
//     agents never share one outbox (Run fails with ErrDataHeld);
//   - ArtifactsDir: the blobs and manifests of the artifact store the agent
//     serves with Config.ArtifactStore (format in package artifacts);
//   - SimStateFile: on the simulated runtime, the node itself (its
//     containers, directories and files: simruntime.Open), so a restarted
//     agent finds what it had (a damaged one is moved aside to
//     SimStateFile.damaged and the node starts empty).
//
// # Start and stop
//
// Run loads the credentials, takes the lock, makes the runtime, starts the
// artifact store (listening before it goes on: an address taken is an
// error at start), opens the outbox, dials the bus (waiting while none
// answers), serves the metrics, and runs agent.Run until ctx ends. It
// stops them in the reverse order. Nothing here imports the CLI: package
// agent (the pure diff and its loop) does not import agentd.
package agentd
