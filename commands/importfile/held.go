package importfile

import (
	"context"

	"meshplane/commands"
	"meshplane/events"
)

// settleHeld checks, in the store, the public apply reports of the file
// whose held_since names a report the file does not hold
// (commands.Import.SettleHeld): a store that does not exist yet holds
// none, and is not opened.
func (c *Checked) settleHeld(ctx context.Context, reg *events.Registry) error {
	if err := c.settleRoster(ctx, reg); err != nil {
		return err
	}
	if err := c.settleResources(ctx, reg); err != nil {
		return err
	}
	if c.im.HeldPending() == 0 {
		return nil
	}
	var lookup func(stream, apply string) ([]events.Held, error)
	if !c.target.None {
		st, err := c.open()
		if err != nil {
			return err
		}
		lookup = commands.HeldLookup(ctx, st, reg)
	}
	refused, err := c.im.SettleHeld(lookup)
	if err != nil {
		c.Close()
		return err
	}
	c.Accepted -= len(refused)
	c.Bad = mergeLines(c.Bad, refused)
	return nil
}

// settleRoster looks up, in the store, the roster revisions that public
// composed declarations of the file name and the file does not hold
// (commands.Import.SettleRoster).
func (c *Checked) settleRoster(ctx context.Context, reg *events.Registry) error {
	if c.im.RosterPending() == 0 {
		return nil
	}
	var lookup func(rev uint64) (events.Roster, error)
	if !c.target.None {
		st, err := c.open()
		if err != nil {
			return err
		}
		lookup = commands.RosterLookup(ctx, st, reg)
	}
	refused, err := c.im.SettleRoster(lookup)
	if err != nil {
		c.Close()
		return err
	}
	c.Accepted -= len(refused)
	c.Bad = mergeLines(c.Bad, refused)
	return nil
}

// settleResources looks up, in the store, the declarations that public
// composed declarations of the file name by reference and the file does
// not hold (commands.Import.SettleResources).
func (c *Checked) settleResources(ctx context.Context, reg *events.Registry) error {
	if c.im.ResourcesPending() == 0 {
		return nil
	}
	var lookup func(stream, id string) ([]events.ResourceRef, error)
	if !c.target.None {
		st, err := c.open()
		if err != nil {
			return err
		}
		lookup = commands.ResourcesLookup(ctx, st, reg)
	}
	refused, err := c.im.SettleResources(lookup)
	if err != nil {
		c.Close()
		return err
	}
	c.Accepted -= len(refused)
	c.Bad = mergeLines(c.Bad, refused)
	return nil
}
