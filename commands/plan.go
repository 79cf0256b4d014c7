package commands

import (
	"context"
)

// Hypothetical returns a Reader over the mesh as it would be after cs, for
// a plan (mesh plan --after): each command is decided in order against the
// state the ones before it leave, as ExecuteAll's check does, and folded in
// memory; nothing is appended. A command refused, or a read that fails, is
// the error. The Reader reads the store for whatever cs do not change, so
// composing through it is composing the next push as if cs had run.
func (h *Handler) Hypothetical(ctx context.Context, cs []Command) (Reader, error) {
	o := &overlay{base: h, nodes: map[string]Node{}, modules: map[string]Module{}}
	for _, c := range cs {
		if err := checkNames(c); err != nil {
			return nil, err
		}
		s, _, err := stateOf(ctx, o, c)
		if err != nil {
			return nil, err
		}
		ps, err := Decide(s, c)
		if err != nil {
			return nil, err
		}
		o.fold(c, s, ps)
	}
	return o, nil
}
