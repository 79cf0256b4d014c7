// Package nodeplan is the pure decision of a node's agent: Diff turns a
// declaration, what the node holds (Observed) and what the agent remembers
// (State) into a Plan, one Step per resource; PreviewOf words a plan as a
// dry run's answer and Outcome as the apply.reported payload; Declared is
// what a node would hold had it applied a declaration (the plan of a node
// that did not answer); DeclaredChanges and ContainerChanges say what each
// changed field was and becomes. No I/O, no clock: the agent observes and
// carries out (package agent), the controller plans with it without
// linking the agent. The rules are in package agent's comment.
package nodeplan
