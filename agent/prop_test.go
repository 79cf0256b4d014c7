package agent_test

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"meshplane/agent"
	"meshplane/declaration"
	"meshplane/events"
)

// randomDecl makes a random declaration of up to 4 modules, each with
// directories, files and containers that mount some of the directories.
func randomDecl(r *rand.Rand, id string) declaration.Declaration {
	modes := []uint32{0, 0o700, 0o750, 0o755, 0o2770}
	var rs []declaration.Resource
	var taken []string
	for m := range r.IntN(4) + 1 {
		module := fmt.Sprintf("mod%d", m)
		if r.IntN(2) == 0 {
			taken = append(taken, module)
		}
		var dirs []string
		for i := range r.IntN(3) {
			p := fmt.Sprintf("/d/%s/%d", module, i)
			dirs = append(dirs, p)
			rs = append(rs, dir(fmt.Sprintf("%s-dir%d", module, i), module, p, modes[r.IntN(len(modes))]))
		}
		for i := range r.IntN(2) {
			content := fmt.Sprintf("v=%d\n", r.IntN(3))
			rs = append(rs, file(fmt.Sprintf("%s-file%d", module, i), module, fmt.Sprintf("/f/%s/%d.conf", module, i), content, modes[r.IntN(2)]|0o600))
		}
		for i := range r.IntN(4) {
			c := declaration.Container{Image: fmt.Sprintf("img%d:%d", i, r.IntN(3))}
			for k := range r.IntN(3) {
				c.Env = append(c.Env, fmt.Sprintf("K%d=%d", k, r.IntN(3)))
			}
			for k, p := range dirs {
				if r.IntN(2) == 0 {
					c.Mounts = append(c.Mounts, declaration.Mount{Source: p, Target: fmt.Sprintf("/m%d", k)})
				}
			}
			c.Mounts = append(c.Mounts, declaration.Mount{Source: declaration.HostsPath, Target: "/etc/hosts", ReadOnly: true})
			rs = append(rs, ctr(fmt.Sprintf("%s-c%d", module, i), module, c))
		}
	}
	d := decl(id, rs...)
	if r.IntN(2) == 0 {
		d = adopted(d, taken...)
	}
	d.Hosts = fmt.Sprintf("10.1.0.%d name\n", r.IntN(3))
	return d
}

// Property: whatever the node held before, applying a declaration twice
// changes nothing the second time, holds the same, and counts every
// resource exactly once.
func TestApplyTwiceIsANoOpProperty(t *testing.T) {
	for seed := range uint64(300) {
		r := rand.New(rand.NewPCG(seed, 0x6d657368))
		fx := newFixture(t)
		// Something outside the mesh left directories behind.
		for i := range r.IntN(4) {
			p := fmt.Sprintf("/d/mod%d/%d", r.IntN(4), i%3)
			_ = fx.rt.MakeDirectory(p, []uint32{0o700, 0o755}[r.IntN(2)]) // an existing path is fine
		}
		// The node applied something else before.
		if r.IntN(2) == 0 {
			fx.apply(t, randomDecl(r, "novox/0"))
		}
		d := randomDecl(r, "novox/1")
		found := foundBefore(fx, d)
		first := fx.apply(t, d)
		second := fx.apply(t, d)
		o := second.Outcome
		// Rule 3: a found directory is held on every pass, never applied, and
		// left exactly as it was.
		for name, mode := range found {
			for _, rep := range []agent.Report{first, second} {
				if !slices.ContainsFunc(rep.Outcome.Held, func(h events.Held) bool { return h.Name == name }) {
					t.Fatalf("seed %d: found directory %s not held: %+v", seed, name, rep.Outcome)
				}
			}
			if got, _ := fx.rt.Dir(dirPath(d, name)); got != mode {
				t.Fatalf("seed %d: found directory %s touched: mode %o, was %o", seed, name, got, mode)
			}
		}
		if o.Changes() != 0 || len(o.Updated) != 0 || len(o.Failed) != 0 || len(first.Outcome.Failed) != 0 {
			t.Fatalf("seed %d: second apply changed something: %s\nfirst %+v\nsecond %+v\ndisk:\n%s",
				seed, second.Summary(), first.Outcome, o, fx.rt.Paths())
		}
		if first.Summary() != second.Summary() || !slices.Equal(first.Outcome.Held, o.Held) {
			t.Fatalf("seed %d: %q then %q", seed, first.Summary(), second.Summary())
		}
		if o.Unchanged+len(o.Held) != o.Sent || o.Applied != o.Unchanged || o.Sent != len(d.Resources) {
			t.Fatalf("seed %d: counts do not add up: %+v", seed, o)
		}
	}
}

// foundBefore lists, with their modes, the directory resources of d that the
// agent will find: d is for an adopted node, their module is not taken, and
// the directory is on disk and was not made by the agent.
func foundBefore(fx *fixture, d declaration.Declaration) map[string]uint32 {
	out := map[string]uint32{}
	if !d.Adopted {
		return out
	}
	for _, r := range d.Resources {
		if r.Directory == nil || slices.Contains(d.Taken, r.Module) || slices.Contains(fx.ag.State().Made, r.Directory.Path) {
			continue
		}
		if mode, ok := fx.rt.Dir(r.Directory.Path); ok {
			out[r.Name] = mode
		}
	}
	return out
}

func dirPath(d declaration.Declaration, name string) string {
	for _, r := range d.Resources {
		if r.Name == name && r.Directory != nil {
			return r.Directory.Path
		}
	}
	return ""
}
