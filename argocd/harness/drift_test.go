package harness

import (
	"bytes"
	"encoding/json"
	"reflect"
	"slices"
	"testing"

	jsonpatch "github.com/evanphx/json-patch/v5"
)

const (
	applicationPath    = "../application.yaml"
	desiredRoutePath   = "../testdata/httproute_desired.yaml"
	liveRoutePath      = "../testdata/httproute_live.yaml"
	respectIgnoreDiffs = "RespectIgnoreDifferences=true"
)

// application is the part of argocd/application.yaml these tests use.
type application struct {
	ignoreDifferences []IgnoreDifference
	syncOptions       []string
}

func readApplication(t *testing.T) application {
	t.Helper()
	obj, err := ReadObject(applicationPath)
	if err != nil {
		t.Fatal(err)
	}
	spec, _ := obj["spec"].(map[string]any)
	var app application
	decodeStrict(t, spec["ignoreDifferences"], &app.ignoreDifferences)
	if policy, ok := spec["syncPolicy"].(map[string]any); ok {
		decodeStrict(t, policy["syncOptions"], &app.syncOptions)
	}
	return app
}

// decodeStrict fails on unknown fields, so a misspelt key (jqPathExpression) is not silently ignored.
func decodeStrict(t *testing.T, value, into any) {
	t.Helper()
	data, err := json.Marshal(value)
	if err != nil {
		t.Fatal(err)
	}
	decoder := json.NewDecoder(bytes.NewReader(data))
	decoder.DisallowUnknownFields()
	if err := decoder.Decode(into); err != nil {
		t.Fatalf("%s: %v", applicationPath, err)
	}
}

func applicationNormalizer(t *testing.T) *IgnoreNormalizer {
	t.Helper()
	normalizer, err := NewIgnoreNormalizer(readApplication(t).ignoreDifferences)
	if err != nil {
		t.Fatal(err)
	}
	return normalizer
}

func readRoute(t *testing.T, path string) map[string]any {
	t.Helper()
	obj, err := ReadObject(path)
	if err != nil {
		t.Fatal(err)
	}
	return obj
}

// normalizedSpec is obj's spec as Argo CD compares it: without the ignored fields. A skipped
// expression fails the test: in Argo CD it would leave the weights showing as drift.
func normalizedSpec(t *testing.T, normalizer *IgnoreNormalizer, obj map[string]any) any {
	t.Helper()
	normalized, skipped, err := normalizer.Normalize(obj)
	if err != nil {
		t.Fatal(err)
	}
	for _, failure := range skipped {
		t.Errorf("Argo CD would skip %v", failure)
	}
	return normalized["spec"]
}

// patched applies an RFC 6902 JSON patch to a copy of obj.
func patched(t *testing.T, obj map[string]any, operations string) map[string]any {
	t.Helper()
	patch, err := jsonpatch.DecodePatch([]byte(operations))
	if err != nil {
		t.Fatal(err)
	}
	doc, err := json.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	if doc, err = patch.Apply(doc); err != nil {
		t.Fatalf("patch %s: %v", operations, err)
	}
	result, err := ParseObject(doc)
	if err != nil {
		t.Fatal(err)
	}
	return result
}

func asJSON(value any) string {
	data, _ := json.MarshalIndent(value, "", "  ")
	return string(data)
}

// Git says 100/0, modelgate wrote 70/30: Argo CD must see no difference.
func TestWeightsModelgateWroteAreNotDrift(t *testing.T) {
	normalizer := applicationNormalizer(t)
	desired := normalizedSpec(t, normalizer, readRoute(t, desiredRoutePath))
	live := normalizedSpec(t, normalizer, readRoute(t, liveRoutePath))
	if !reflect.DeepEqual(desired, live) {
		t.Errorf("normalized specs differ\ndesired: %s\nlive: %s", asJSON(desired), asJSON(live))
	}
}

// Everything but the weights still shows as drift when the live route departs from Git.
func TestOtherChangesToTheRouteAreStillDrift(t *testing.T) {
	normalizer := applicationNormalizer(t)
	desired := normalizedSpec(t, normalizer, readRoute(t, desiredRoutePath))
	live := readRoute(t, liveRoutePath)
	for _, change := range []struct {
		what, op, path string
		value          any
	}{
		{"path match", "replace", "/spec/rules/0/matches/0/path/value", "/v2/chat"},
		{"header match", "remove", "/spec/rules/0/matches/0/headers", nil},
		{"filter", "replace", "/spec/rules/0/filters/0/requestHeaderModifier/set/0/value", "x"},
		{"backend name", "replace", "/spec/rules/0/backendRefs/1/name", "chat-v3"},
		{"backend port", "replace", "/spec/rules/0/backendRefs/0/port", 8080},
		{"backend added", "add", "/spec/rules/0/backendRefs/-", map[string]any{"name": "chat-v3", "port": 8000}},
		{"backend removed", "remove", "/spec/rules/0/backendRefs/1", nil},
		{"other rule's backend", "replace", "/spec/rules/1/backendRefs/0/name", "embed-v2"},
		{"redirect", "replace", "/spec/rules/2/filters/0/requestRedirect/statusCode", 301},
		{"rule removed", "remove", "/spec/rules/1", nil},
		{"hostname", "replace", "/spec/hostnames/0", "other.example.com"},
		{"parent", "replace", "/spec/parentRefs/0/name", "other-gateway"},
	} {
		t.Run(change.what, func(t *testing.T) {
			operation := map[string]any{"op": change.op, "path": change.path}
			if change.op != "remove" {
				operation["value"] = change.value
			}
			changed := normalizedSpec(t, normalizer, patched(t, live, asJSON([]any{operation})))
			if reflect.DeepEqual(desired, changed) {
				t.Errorf("a change to the %s is hidden by the ignoreDifferences", change.what)
			}
		})
	}
}

// The entry names the route: another HTTPRoute of the Application keeps its weights compared.
func TestOtherRoutesKeepTheirWeightsCompared(t *testing.T) {
	normalizer := applicationNormalizer(t)
	rename := `[{"op": "replace", "path": "/metadata/name", "value": "search"}]`
	desired := normalizedSpec(t, normalizer, patched(t, readRoute(t, desiredRoutePath), rename))
	live := normalizedSpec(t, normalizer, patched(t, readRoute(t, liveRoutePath), rename))
	if reflect.DeepEqual(desired, live) {
		t.Error("the weights of an HTTPRoute the entry does not name are ignored")
	}
}

// Why `[]?`: with `[]`, jq fails on the redirect rule (no backendRefs) and Argo CD skips the
// expression, so the weights would show as drift after all.
func TestPlainIteratorFailsOnARuleWithoutBackends(t *testing.T) {
	normalizer, err := NewIgnoreNormalizer([]IgnoreDifference{{
		Group:             "gateway.networking.k8s.io",
		Kind:              "HTTPRoute",
		JQPathExpressions: []string{".spec.rules[].backendRefs[].weight"},
	}})
	if err != nil {
		t.Fatal(err)
	}
	_, skipped, err := normalizer.Normalize(readRoute(t, liveRoutePath))
	if err != nil {
		t.Fatal(err)
	}
	if len(skipped) != 1 {
		t.Fatalf("want the expression skipped on the redirect rule, got %v", skipped)
	}
}

func TestApplicationSyncsWithIgnoredDifferencesRespected(t *testing.T) {
	if options := readApplication(t).syncOptions; !slices.Contains(options, respectIgnoreDiffs) {
		t.Errorf("syncOptions %v lack %s: a sync would put Git's weights back", options, respectIgnoreDiffs)
	}
}

func backendWeights(t *testing.T, route map[string]any, rule int) []any {
	t.Helper()
	rules := route["spec"].(map[string]any)["rules"].([]any)
	var weights []any
	for _, ref := range rules[rule].(map[string]any)["backendRefs"].([]any) {
		weights = append(weights, ref.(map[string]any)["weight"])
	}
	return weights
}

// A sync mid-rollout applies the live weights, not Git's 100/0, so it moves no traffic.
func TestSyncKeepsTheLiveWeights(t *testing.T) {
	normalizer := applicationNormalizer(t)
	desired := patched(t, readRoute(t, desiredRoutePath),
		`[{"op": "add", "path": "/metadata/labels/team", "value": "chat"}]`)
	target, err := TargetForSync(normalizer, desired, readRoute(t, liveRoutePath))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := backendWeights(t, target, 0), []any{int64(70), int64(30)}; !reflect.DeepEqual(got, want) {
		t.Errorf("the sync applies weights %v, want the live %v", got, want)
	}
	labels := target["metadata"].(map[string]any)["labels"].(map[string]any)
	if labels["team"] != "chat" {
		t.Errorf("the sync drops Git's change outside spec.rules: labels %v", labels)
	}
}

// The price of RespectIgnoreDifferences on an HTTPRoute: spec.rules is an atomic list, so the
// live value of the ignored weights is the whole live rules list, and a sync applies it instead
// of Git's. A change to the rules in Git is not applied (the route stays OutOfSync) until it is
// synced once without the option; argocd/README.md says how.
func TestSyncAppliesTheLiveRulesWhole(t *testing.T) {
	normalizer := applicationNormalizer(t)
	desired := patched(t, readRoute(t, desiredRoutePath),
		`[{"op": "replace", "path": "/spec/rules/0/matches/0/path/value", "value": "/v2/chat"}]`)
	live := readRoute(t, liveRoutePath)
	target, err := TargetForSync(normalizer, desired, live)
	if err != nil {
		t.Fatal(err)
	}
	got := target["spec"].(map[string]any)["rules"]
	if want := live["spec"].(map[string]any)["rules"]; !reflect.DeepEqual(got, want) {
		t.Errorf("the sync applies rules %s, want the live rules whole", asJSON(got))
	}
}
