package meshup

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"

	"meshplane/commands"
	"meshplane/events"
)

// SetUp is the set-up a mesh file asks for, as operator commands in order:
// define the modules, record the builds (the mesh file's artifacts:, then
// builds, the images up built for its builds:), then each node: register,
// adopt, settings, assign, take.
func SetUp(defs []commands.DefineModule, mf File, builds []commands.RecordArtifact) []commands.Command {
	var cs []commands.Command
	for _, d := range defs {
		cs = append(cs, d)
	}
	for _, a := range mf.Artifacts {
		cs = append(cs, commands.RecordArtifact{Module: a.Module, Name: a.Name, Digest: a.Digest})
	}
	for _, b := range builds {
		cs = append(cs, b)
	}
	for _, n := range mf.Nodes {
		cs = append(cs, commands.RegisterNode{Node: n.Name})
		if n.Adopted {
			cs = append(cs, commands.AdoptNode{Node: n.Name})
		}
		settings := map[string]string{}
		if n.PrivateAddress != "" {
			settings[events.SettingPrivateAddress] = n.PrivateAddress
		}
		if n.ArtifactStore != 0 {
			settings[events.SettingArtifactStore] = strconv.Itoa(n.ArtifactStore)
		}
		for p, v := range n.Ports {
			settings[events.SettingPortPrefix+p] = strconv.Itoa(v)
		}
		for _, k := range slices.Sorted(maps.Keys(settings)) {
			cs = append(cs, commands.SetNodeSetting{Node: n.Name, Key: k, Value: settings[k]})
		}
		for _, mod := range n.Modules {
			cs = append(cs, commands.AssignModule{Module: mod, Node: n.Name})
		}
		for _, mod := range n.Take {
			cs = append(cs, commands.TakeModule{Module: mod, Node: n.Name})
		}
	}
	return cs
}

// Execute runs the set-up cs on h as actor, checked all together before
// any is written: one ExecuteAll, so a refused command writes none, and a
// command whose work is already done appends nothing (up can run again
// over the same store). It returns how many found their work done. A
// refusal before anything was written is Refused's; a failure after is
// "set-up: ...".
func Execute(ctx context.Context, h *commands.Handler, actor string, cs []commands.Command) (done int, err error) {
	results, err := h.ExecuteAll(ctx, actor, cs)
	if err != nil && len(results) == 0 {
		return 0, Refused(err)
	} else if err != nil {
		return 0, fmt.Errorf("set-up: %w", err)
	}
	for _, evs := range results {
		if len(evs) == 0 {
			done++
		}
	}
	return done, nil
}

// Refused says of a set-up refused that nothing was written: a
// *commands.Rejection keeps its code, its message saying so; any other
// error is wrapped as the set-up's.
func Refused(err error) error {
	var rej *commands.Rejection
	if errors.As(err, &rej) {
		return &commands.Rejection{Code: rej.Code, Msg: fmt.Sprintf("set-up: %s (nothing was written)", rej.Msg)}
	}
	return fmt.Errorf("set-up: %w", err)
}
