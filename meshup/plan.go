package meshup

import (
	"strings"

	"meshplane/api"
	"meshplane/controller"
)

// PlanRequest is mesh plan's request: the module files its --after
// "module define FILE..." lines name are read here, on the caller's side,
// and sent with it (api.PlanRequest.Files).
func PlanRequest(nodes, after []string) (api.PlanRequest, error) {
	req := api.PlanRequest{Nodes: nodes, After: after}
	var paths []string
	for _, line := range after {
		paths = append(paths, controller.AfterFiles(line)...)
	}
	if len(paths) == 0 {
		return req, nil
	}
	defs, err := ReadModuleFiles(paths)
	if err != nil {
		return api.PlanRequest{}, err
	}
	req.Files = make(map[string]api.ModuleDefinition, len(defs))
	for i, d := range defs {
		req.Files[paths[i]] = api.ModuleDefinition{Module: d.Module, Spec: d.Spec}
	}
	return req, nil
}

// DefinePlanRequest is mesh module define --plan's request: the plan of
// every node the definitions in files reach, as if they were defined.
func DefinePlanRequest(files []string) (api.PlanRequest, error) {
	req, err := PlanRequest(nil, []string{"module define " + strings.Join(files, " ")})
	req.Reached = true
	return req, err
}
