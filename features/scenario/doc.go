// Package scenario is the runner of `mesh scenario run`: it checks feature
// files for what the Gherkin parser would panic on, opens the store each
// scenario starts empty on, and runs the scenarios with the step library
// of package features, counting those that ran.
//
// The stores (Store): memory and bolt, which the step library opens; a
// throwaway PostgreSQL cluster for the run, or a server given by URL, with
// a new database per scenario, dropped after it; a KurrentDB server, with a
// stream prefix per scenario. The servers' clients (pgx, pgscratch, the
// KurrentDB client through events/storeurl) live here, not in features.
package scenario
