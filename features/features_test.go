package features_test

import (
	"bytes"
	"os"
	"testing"

	"github.com/cucumber/godog"
	"github.com/cucumber/godog/colors"

	"meshplane/features"
)

// TestFeatures runs every feature file, each scenario a subtest, on the
// in-memory store and on the bolt store.
func TestFeatures(t *testing.T) {
	for _, store := range []string{features.StoreMemory, features.StoreBolt} {
		t.Run(store, func(t *testing.T) {
			opts := features.Options{Store: store, TempDir: func() (string, error) { return os.MkdirTemp(t.TempDir(), "s") }}
			var out bytes.Buffer
			suite := godog.TestSuite{
				Name:                "meshplane-" + store,
				ScenarioInitializer: func(sc *godog.ScenarioContext) { features.Initialize(sc, opts) },
				Options: &godog.Options{
					Format:    "pretty",
					Output:    colors.Uncolored(&out),
					Paths:     []string{"."},
					Strict:    true,
					Randomize: -1,
					TestingT:  t,
				},
			}
			if suite.Run() != 0 {
				t.Fatalf("scenarios failed:\n%s", out.String())
			}
			if testing.Verbose() {
				t.Log(out.String())
			}
		})
	}
}
