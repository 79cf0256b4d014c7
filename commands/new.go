package commands

// Constructors of the module-on-node commands, for the CLI's verbs that
// take MODULE NODE (assign, take, release).

// NewAssignModule is AssignModule{module, node}.
func NewAssignModule(module, node string) Command { return AssignModule{Module: module, Node: node} }

// NewTakeModule is TakeModule{module, node}.
func NewTakeModule(module, node string) Command { return TakeModule{Module: module, Node: node} }

// NewReleaseModule is ReleaseModule{module, node}.
func NewReleaseModule(module, node string) Command { return ReleaseModule{Module: module, Node: node} }

// DeployHelp is mesh deploy's help.
const DeployHelp = `A build is not a deployment (seed 002): a manual module (the default) runs
the build it was last deployed with until mesh deploy says otherwise; a
roll-out module is deployed as each build is recorded. mesh deploy MODULE
deploys the module's latest recorded builds; --digest D one recorded build,
of whichever artifact it is (a roll-back too). The next push runs them.`
