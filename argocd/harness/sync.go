package harness

import (
	"encoding/json"

	jsonpatch "github.com/evanphx/json-patch/v5"
)

// TargetForSync returns what a sync with RespectIgnoreDifferences=true applies for desired when
// live exists, computed as Argo CD's controller (normalizeTargetResources) does: the patch that
// turns the normalized live object back into the live one, status left out, is the live value of
// every ignored field; it is merged into the normalized desired object. Argo CD merges a custom
// resource with its CRD's schema, in which an HTTPRoute's rules and backendRefs are atomic lists;
// the JSON merge patch (RFC 7386) used here also replaces lists whole, so the result is the same.
func TargetForSync(normalizer *IgnoreNormalizer, desired, live map[string]any) (map[string]any, error) {
	normalizedDesired, _, err := normalizer.Normalize(desired)
	if err != nil {
		return nil, err
	}
	normalizedLive, _, err := normalizer.Normalize(live)
	if err != nil {
		return nil, err
	}
	liveDoc, err := withoutStatus(live)
	if err != nil {
		return nil, err
	}
	normalizedLiveDoc, err := withoutStatus(normalizedLive)
	if err != nil {
		return nil, err
	}
	livePatch, err := jsonpatch.CreateMergePatch(normalizedLiveDoc, liveDoc)
	if err != nil {
		return nil, err
	}
	target, err := json.Marshal(normalizedDesired)
	if err != nil {
		return nil, err
	}
	patched, err := jsonpatch.MergePatch(target, livePatch)
	if err != nil {
		return nil, err
	}
	return ParseObject(patched)
}

// withoutStatus is obj as JSON without its status, which Argo CD leaves out of the copy.
func withoutStatus(obj map[string]any) ([]byte, error) {
	copied := make(map[string]any, len(obj))
	for key, value := range obj {
		if key != "status" {
			copied[key] = value
		}
	}
	return json.Marshal(copied)
}
