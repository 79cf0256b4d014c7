package boltstore

import (
	"testing"

	"meshplane/events/storetest"
)

func TestReadByID(t *testing.T) { storetest.RunByID(t, factory) }
