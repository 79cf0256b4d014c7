package sim

import (
	"encoding/json"
	"sync/atomic"

	"meshplane/internal/gz"
)

// BusCount is what the simulated bus carried while counting (CountBus):
// every value put, and its bytes as the bus puts them (its JSON, gzipped).
type BusCount struct {
	Puts  int64 `json:"puts"`
	Bytes int64 `json:"bytes"`
}

// busCounter counts the simulated bus's puts once CountBus turned it on.
type busCounter struct {
	on          atomic.Bool
	puts, bytes atomic.Int64
}

// CountBus starts counting what the simulated bus carries, from zero (off
// by default: encoding every put costs what the bus would).
func (m *Mesh) CountBus() {
	m.bus.puts.Store(0)
	m.bus.bytes.Store(0)
	m.bus.on.Store(true)
}

// BusCounted returns what the bus carried since CountBus.
func (m *Mesh) BusCounted() BusCount {
	return BusCount{Puts: m.bus.puts.Load(), Bytes: m.bus.bytes.Load()}
}

// countPut counts v, a value the simulated bus carried (a declaration, or
// any shared value a put of the Publisher hands to every node, such as a
// roster), when counting: its bytes as the real bus puts them to a node
// that holds a roster, as every simulated node does (the JSON gzipped:
// bus.EncodeRoster, bus.ControllerConn's encodeFor).
func (m *Mesh) countPut(v any) {
	if !m.bus.on.Load() {
		return
	}
	b, err := json.Marshal(v)
	if err != nil {
		panic("sim: a put value does not encode: " + err.Error()) // the wire's types: cannot happen
	}
	m.bus.puts.Add(1)
	m.bus.bytes.Add(int64(len(gz.Compress(b))))
}
