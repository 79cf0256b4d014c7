package meshup

import (
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
