package esdbstore_test

import (
	"testing"

	"meshplane/events/esdbstore/esdbdouble"
	"meshplane/events/storetest"
)

func TestReadByIDAgainstDouble(t *testing.T) {
	storetest.RunByID(t, factory(func(t testing.TB) string { return startDouble(t, esdbdouble.Config{}).URL() }))
}
