package harness

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

const (
	healthScriptPath = "../health.lua"
	healthCasesPath  = "../health_test.yaml"
)

// healthCases is Argo CD's health_test.yaml layout.
type healthCases struct {
	Tests []struct {
		HealthStatus HealthStatus `json:"healthStatus"`
		InputPath    string       `json:"inputPath"`
	} `json:"tests"`
}

func readHealthScript(t *testing.T) string {
	t.Helper()
	script, err := os.ReadFile(healthScriptPath)
	if err != nil {
		t.Fatal(err)
	}
	return string(script)
}

func readHealthCases(t *testing.T) healthCases {
	t.Helper()
	var cases healthCases
	if err := ReadYAML(healthCasesPath, &cases); err != nil {
		t.Fatalf("%s: %v", healthCasesPath, err)
	}
	if len(cases.Tests) == 0 {
		t.Fatalf("%s has no tests", healthCasesPath)
	}
	return cases
}

func TestHealthScriptGivesTheExpectedHealth(t *testing.T) {
	script := readHealthScript(t)
	for _, tc := range readHealthCases(t).Tests {
		t.Run(tc.InputPath, func(t *testing.T) {
			obj, err := ReadObject(filepath.Join("..", tc.InputPath))
			if err != nil {
				t.Fatal(err)
			}
			got, err := RunHealthScript(script, obj)
			if err != nil {
				t.Fatalf("health.lua failed: %v", err)
			}
			if got != tc.HealthStatus {
				t.Errorf("health.lua returned %+v, want %+v", got, tc.HealthStatus)
			}
		})
	}
}

// Every ModelRollout fixture is a case, so none is left untested by mistake.
func TestEveryModelRolloutFixtureIsACase(t *testing.T) {
	listed := map[string]bool{}
	for _, tc := range readHealthCases(t).Tests {
		listed[filepath.ToSlash(tc.InputPath)] = true
	}
	paths, err := filepath.Glob("../testdata/*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range paths {
		obj, err := ReadObject(path)
		if err != nil {
			t.Fatal(err)
		}
		relative := strings.TrimPrefix(filepath.ToSlash(path), "../")
		if obj["kind"] == "ModelRollout" && !listed[relative] {
			t.Errorf("%s is not an inputPath in %s", relative, healthCasesPath)
		}
	}
}

// A global Argo CD does not define (string.format, math.floor, a misspelt tonumber) in a branch
// that no fixture reaches would only fail in Argo CD, so the compiled script is checked for any.
func TestHealthScriptReadsOnlyGlobalsArgoCDDefines(t *testing.T) {
	undefined, err := UndefinedGlobals(readHealthScript(t))
	if err != nil {
		t.Fatal(err)
	}
	if len(undefined) > 0 {
		t.Errorf("health.lua reads %v, which Argo CD does not define for checks in argocd-cm", undefined)
	}
}

// The harness must reject what Argo CD rejects, or the tests above prove nothing.
func TestHarnessLoadsOnlyWhatArgoCDLoads(t *testing.T) {
	for _, library := range []string{"string", "math", "io", "os"} {
		script := "return { status = type(" + library + ") == 'nil' and 'Healthy' or 'Degraded' }"
		got, err := RunHealthScript(script, map[string]any{})
		if err != nil {
			t.Fatal(err)
		}
		if got.Status != "Healthy" {
			t.Errorf("library %s is loaded; Argo CD does not load it (os: only a safe subset)", library)
		}
	}
	if _, err := RunHealthScript(`return { status = ("x"):upper() }`, map[string]any{}); err == nil {
		t.Error("string methods work; Argo CD loads no string library, so they must fail")
	}
	got, err := RunHealthScript(`return { status = "Fine" }`, map[string]any{})
	if err != nil || got != (HealthStatus{Status: "Unknown", Message: invalidHealthStatus}) {
		t.Errorf("an invalid status gave %+v, %v; Argo CD turns it into Unknown", got, err)
	}
	if _, err := RunHealthScript(`while true do end`, map[string]any{}); err == nil {
		t.Error("an endless script was not stopped; Argo CD stops it after a second")
	}
	script := `local function f(n) return math.floor(n) end
if type(obj) == "string" then return { status = string.format("%d", f(1)) } end
return { status = tostring(obj) }`
	undefined, err := UndefinedGlobals(script)
	if err != nil || !slices.Equal(undefined, []string{"math", "string"}) {
		t.Errorf("UndefinedGlobals found %v, %v; want [math string]", undefined, err)
	}
}
