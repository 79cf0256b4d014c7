// The timeline's records: every entry as JSON, and the records a
// TimelineDB takes out of memory.

package projections

import (
	"meshplane/events"
)

// MarshalJSON writes every entry, in position order.
func (t *Timeline) MarshalJSON() ([]byte, error) {
	t.mu.RLock()
	defer t.mu.RUnlock()
	out := make([]Entry, t.n)
	for i := range out {
		out[i] = t.show(t.at(i))
	}
	return marshal(out)
}

// EntryRecord is an entry as a timeline kept outside memory stores it (see
// TakeRecords): the entry, without its churn mark.
type EntryRecord struct {
	Entry Entry `json:"entry"`
}

// Restore is the entry the record stands for.
func (r EntryRecord) Restore() Entry { return r.Entry }

// TakeRecords renders every entry the timeline holds, without churn marks
// (Marked adds them when read), and forgets them, keeping what it needs to
// fold on (declarations, the report resolver, the count and time order): a
// TimelineDB writes them out. Queries of the timeline itself then see only
// the entries folded since.
func (t *Timeline) TakeRecords() []EntryRecord {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make([]EntryRecord, t.n)
	for i := range out {
		en := t.show(t.at(i))
		out[i] = EntryRecord{Entry: en}
	}
	t.flushed += t.n
	t.chunks, t.n = nil, 0
	t.composed, t.applies = slab[events.DeclarationComposed]{}, slab[tlApply]{}
	t.byNode = map[string][]int32{}
	t.byType = map[string][]int32{}
	t.byModule = map[string][]int32{}
	t.byResource = map[string][]int32{}
	t.heads = map[tlHead]*tlHead{}
	return out
}
