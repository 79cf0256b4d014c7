package pgstore

import (
	"testing"

	"meshplane/events/storetest"
)

func TestReadByID(t *testing.T) { storetest.RunByID(t, factory) }
