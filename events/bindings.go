package events

// Kinds of service a module provides (ModuleSpec.Provides).
const (
	ProvideTCP      = "tcp"      // an address only: no login
	ProvideFile     = "file"     // logins listed in a file of the provider (name and salted hash)
	ProvidePostgres = "postgres" // logins are roles of the provider's server
	ProvideNATS     = "nats"     // logins are users of the provider's account
)

// ProvideKinds are the kinds a provided service may be, in the order the
// module format lists them.
var ProvideKinds = []string{ProvideTCP, ProvideFile, ProvidePostgres, ProvideNATS}

// Provide is a service a module provides: reached on Port, a setting of
// the node running the module ("port.<Port>"), read where it is used (at
// the consumer's compose), of Kind (one of ProvideKinds).
type Provide struct {
	Port string `json:"port"`
	Kind string `json:"kind"`
}

// Binding is what a container consumes of another module's provided
// service: with ContainerSpec.Reaches, its address (ADDRESS:PORT of the
// node running the provider); with ContainerSpec.Grants, a login to it.
// The value goes into the environment variable Env or the file File
// (mode 0400), exactly one of them. Node names the provider's node when
// the provider module is assigned to more than one.
type Binding struct {
	Module  string `json:"module"`
	Service string `json:"service"`
	Env     string `json:"env,omitempty"`
	File    string `json:"file,omitempty"`
	Node    string `json:"node,omitempty"`
}

// Bound is one value a composed declaration gave a container through a
// binding (DeclarationComposed.Bindings), so that why can name it: the
// container, where the value went (Field: "env.STORE_ADDR", or
// "file./run/mesh/store.addr"), the provider's module and service, the
// node it was read from and that node's setting read ("port.store").
type Bound struct {
	Container string `json:"container"`
	Field     string `json:"field"`
	Module    string `json:"module"`
	Service   string `json:"service"`
	Node      string `json:"node"`
	Setting   string `json:"setting"`
}
