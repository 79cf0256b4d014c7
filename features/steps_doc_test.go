package features_test

import (
	"bytes"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/cucumber/godog"
	"github.com/cucumber/godog/colors"

	"meshplane/features"
)

// registeredSteps is every step pattern Initialize registers, as godog
// lists them (its --definitions), in the order registered.
func registeredSteps(t *testing.T) []string {
	t.Helper()
	var out bytes.Buffer
	suite := godog.TestSuite{
		Name:                "meshplane-steps",
		ScenarioInitializer: func(sc *godog.ScenarioContext) { features.Initialize(sc, features.Options{}) },
		Options:             &godog.Options{Format: "progress", ShowStepDefinitions: true, NoColors: true, Output: colors.Uncolored(&out)},
	}
	suite.Run()
	ansi := regexp.MustCompile("\x1b\\[[0-9;]*m")
	var steps []string
	for _, line := range strings.Split(ansi.ReplaceAllString(out.String(), ""), "\n") {
		// "^pattern$   # file:line -> function"
		if i := strings.Index(line, "$"); strings.HasPrefix(line, "^") && i > 0 {
			steps = append(steps, line[:i+1])
		}
	}
	if len(steps) < 40 {
		t.Fatalf("read %d step patterns from godog's list, want every one:\n%s", len(steps), out.String())
	}
	return steps
}

// documentedSteps is every step pattern docs/scenario-steps.md lists: a
// line "- `^pattern$`".
func documentedSteps(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile("../docs/scenario-steps.md")
	if err != nil {
		t.Fatal(err)
	}
	var steps []string
	for _, m := range regexp.MustCompile("(?m)^- `(\\^[^`]*\\$)`").FindAllStringSubmatch(string(b), -1) {
		steps = append(steps, m[1])
	}
	return steps
}

// TestStepsDocumented: docs/scenario-steps.md lists every step pattern the
// library registers, word for word, and no other.
func TestStepsDocumented(t *testing.T) {
	registered, documented := registeredSteps(t), documentedSteps(t)
	for _, s := range registered {
		if !slices.Contains(documented, s) {
			t.Errorf("step %s is registered and not in docs/scenario-steps.md", s)
		}
	}
	for _, s := range documented {
		if !slices.Contains(registered, s) {
			t.Errorf("docs/scenario-steps.md lists step %s, which no code registers", s)
		}
	}
}
