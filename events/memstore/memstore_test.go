package memstore_test

import (
	"testing"

	"meshplane/events"
	"meshplane/events/memstore"
	"meshplane/events/storetest"
)

func open(testing.TB) events.Store { return memstore.New() }

func TestConformance(t *testing.T) {
	storetest.Run(t, storetest.Factory{Open: open})
}

func BenchmarkMemstore(b *testing.B) {
	storetest.Bench(b, storetest.Factory{Open: open})
}
