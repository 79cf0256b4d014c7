// Package wire is what a node's agent sends and answers on the bus: the
// report of an apply (Report, whose Wire is the apply.reported payload as
// delivered) and the answer to a dry run (Preview, mesh plan's). Both sides
// import it, so the controller's side never links the agent: the agent
// builds these, the bus carries them, the controller reads them. It holds
// types and pure functions only.
package wire
