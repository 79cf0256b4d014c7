package sim

import (
	"errors"
	"strings"
	"testing"

	"meshplane/internal/usage"
)

// TestOptionsCheck: each range is refused as usage.Err naming its flag;
// options in range pass.
func TestOptionsCheck(t *testing.T) {
	ok := Options{Config: Config{Nodes: 10, Modules: 2, Passes: 3, Big: 10}}
	if err := ok.Check(); err != nil {
		t.Fatalf("%+v: %v", ok, err)
	}
	for want, mod := range map[string]func(*Options){
		"--nodes 0":                   func(o *Options) { o.Nodes = 0 },
		"--modules 0":                 func(o *Options) { o.Modules = 0 },
		"--passes -1":                 func(o *Options) { o.Passes = -1 },
		"--big 11: want 0 to --nodes": func(o *Options) { o.Big = 11 },
		"--big -1":                    func(o *Options) { o.Big = -1 },
	} {
		o := ok
		mod(&o)
		if err := o.Check(); !errors.Is(err, usage.Err) || !strings.HasPrefix(err.Error(), want) {
			t.Errorf("%s: %v, want usage.Err saying so", want, err)
		}
	}
}
