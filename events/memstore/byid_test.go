package memstore_test

import (
	"testing"

	"meshplane/events/storetest"
)

func TestReadByID(t *testing.T) { storetest.RunByID(t, storetest.Factory{Open: open}) }
