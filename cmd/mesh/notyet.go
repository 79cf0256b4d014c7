package main

import (
	"errors"

	"github.com/spf13/cobra"
)

// The daemon's parts: mesh up as the controller, mesh agent, and the bus
// credentials of node register --creds. Their flags are declared and
// checked by the verbs; these are where the daemon's functions
// (runController, runAgent, registerCreds) are called once they are part
// of the build.

// errNotBuilt: a daemon part this build does not have yet.
var errNotBuilt = errors.New("this build of mesh has no daemon yet (the controller, the agent and bus credentials arrive with it)")

// upDaemon runs mesh up as the controller, in the foreground.
func upDaemon(_ *cobra.Command, _ upOptions) error { return errNotBuilt }

// runAgentCmd runs mesh agent.
func runAgentCmd(_ *cobra.Command, _ agentOptions) error { return errNotBuilt }

// writeCreds writes node's bus credential file.
func writeCreds(_ *cobra.Command, _, _ string) error { return errNotBuilt }
