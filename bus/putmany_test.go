package bus_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"meshplane/bus/natstest"
	"meshplane/declaration"
)

// TestPutDeclarations: a batch of puts, more than the window of puts
// awaiting acknowledgement, makes each declaration its node's latest, and
// an invalid one fails alone; with the bus gone, every put fails.
func TestPutDeclarations(t *testing.T) {
	s := natstest.Start(t)
	ctl := natstest.Controller(t, s)
	ctx := ctxT(t)

	ds := make([]declaration.Declaration, 1100)
	for i := range ds {
		ds[i] = decl(fmt.Sprintf("n%04d", i), 1)
	}
	ds[7].Node = "not a node"
	errs := ctl.PutDeclarations(ctx, ds)
	if len(errs) != len(ds) {
		t.Fatalf("%d errors, want one per declaration (%d)", len(errs), len(ds))
	}
	for i, err := range errs {
		if (err != nil) != (i == 7) {
			t.Errorf("put %d (%s): %v", i, ds[i].Node, err)
		}
	}
	if err := errs[7]; err == nil || !strings.Contains(err.Error(), ds[7].ID) {
		t.Errorf("the invalid node's error %v, want it naming its declaration", err)
	}
	for _, i := range []int{0, 1023, 1024, 1099} {
		got, _, err := natstest.Node(t, s, ds[i].Node).Latest(ctx)
		if err != nil || got.ID != ds[i].ID || got.Correlation != ds[i].Correlation {
			t.Errorf("%s: latest %s (%v), want %s", ds[i].Node, got.ID, err, ds[i].ID)
		}
	}

	ok := []declaration.Declaration{decl("n0000", 2), decl("n0001", 2), decl("n0002", 2)}
	if errs := ctl.PutDeclarations(ctx, ok); errs != nil {
		t.Errorf("every put acknowledged: %v, want nil", errs)
	}

	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	for i, err := range ctl.PutDeclarations(cancelled, ok) {
		if err == nil {
			t.Errorf("put %d with its ctx ended: no error", i)
		}
	}

	natstest.Stop(t, s)
	start := time.Now()
	for i, err := range ctl.PutDeclarations(ctx, ok) {
		if err == nil {
			t.Errorf("put %d with the bus gone: no error", i)
		}
	}
	t.Logf("with the bus gone, the batch failed after %v", time.Since(start))
}
