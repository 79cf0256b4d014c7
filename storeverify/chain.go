package storeverify

import (
	"context"
	"errors"
	"fmt"

	"meshplane/events"
	"meshplane/events/storeurl"
)

// page is how many events Chain reads at a time.
const page = 4096

// Chain reads every event of store, from position 1 to its head, through
// the events.Store contract (so it checks any store: bolt, PostgreSQL,
// KurrentDB), and checks the hash chain with events.ChainVerifier, against
// anchor if it is not nil: a record changed, removed or moved since it was
// written, and, with the anchor, a history rewritten at or before it or cut
// short of it. A read refused as damage (ErrDamaged: a hole in the
// positions, a record failing its checksum) is a break at the first
// position not read. The error is for what stopped Chain from looking.
func Chain(ctx context.Context, store events.Store, anchor *events.ChainHead) (events.ChainReport, error) {
	v := events.NewChainVerifier(anchor)
	head, err := store.Head(ctx)
	if err != nil {
		return events.ChainReport{}, fmt.Errorf("verify the chain: %w", err)
	}
	var pos uint64
	for pos < head {
		evs, err := store.ReadAll(ctx, pos, page)
		if errors.Is(err, events.ErrDamaged) {
			r := v.Report()
			r.Break = &events.ChainBreak{Position: pos + 1, Reason: fmt.Sprintf("the store cannot read it: %v", err)}
			return r, nil
		}
		if err != nil {
			return events.ChainReport{}, fmt.Errorf("verify the chain: read after %d: %w", pos, err)
		}
		if len(evs) == 0 {
			break
		}
		for _, e := range evs {
			if !v.Add(e) {
				return v.Report(), nil
			}
		}
		pos = evs[len(evs)-1].Position
	}
	return v.Report(), nil
}

// Head opens the store at url (a bolt store in the data directory data
// when url names one) read-only and returns its chain head: mesh store
// head.
func Head(ctx context.Context, url, data string) (events.ChainHead, error) {
	store, err := openRead(ctx, url, data)
	if err != nil {
		return events.ChainHead{}, err
	}
	defer store.Close()
	return store.ChainHead(ctx)
}

// Anchored opens the store at url read-only and checks its chain against
// the head line anchor (events.ParseChainHead): mesh store verify
// --anchor. A line that does not parse is an error wrapping
// events.ErrInvalid; the report's Err says whether the history is intact.
func Anchored(ctx context.Context, url, data, anchor string) (events.ChainReport, error) {
	a, err := events.ParseChainHead(anchor)
	if err != nil {
		return events.ChainReport{}, err
	}
	store, err := openRead(ctx, url, data)
	if err != nil {
		return events.ChainReport{}, err
	}
	defer store.Close()
	return Chain(ctx, store, &a)
}

// openRead opens the store at url read-only: the bolt file of data when
// url is empty.
func openRead(ctx context.Context, url, data string) (events.Store, error) {
	if url == "" {
		url = string(storeurl.Bolt)
	}
	return storeurl.Open(ctx, url, storeurl.Options{Data: data, ReadOnly: true})
}
