package harness

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/itchyny/gojq"
)

// IgnoreDifference is one entry of an Application's spec.ignoreDifferences.
type IgnoreDifference struct {
	Group                 string   `json:"group,omitempty"`
	Kind                  string   `json:"kind"`
	Name                  string   `json:"name,omitempty"`
	Namespace             string   `json:"namespace,omitempty"`
	JQPathExpressions     []string `json:"jqPathExpressions,omitempty"`
	JSONPointers          []string `json:"jsonPointers,omitempty"`
	ManagedFieldsManagers []string `json:"managedFieldsManagers,omitempty"`
}

// Argo CD's default limit on one jq normalization (DefaultJQExecutionTimeout).
const jqTimeout = time.Second

// IgnoreNormalizer removes ignored fields from objects before they are compared, like the
// normalizer Argo CD's util/argo/normalizers NewIgnoreNormalizer builds from jqPathExpressions.
type IgnoreNormalizer struct {
	patches []jqPatch
}

type jqPatch struct {
	match      IgnoreDifference
	expression string
	code       *gojq.Code
}

// NewIgnoreNormalizer compiles `del(<expression>)` for every jqPathExpression, as Argo CD does.
// It refuses jsonPointers and managedFieldsManagers, which this harness does not simulate.
func NewIgnoreNormalizer(ignores []IgnoreDifference) (*IgnoreNormalizer, error) {
	normalizer := &IgnoreNormalizer{}
	for _, ignore := range ignores {
		if len(ignore.JSONPointers) > 0 || len(ignore.ManagedFieldsManagers) > 0 {
			return nil, fmt.Errorf("%s/%s: only jqPathExpressions are simulated", ignore.Group, ignore.Kind)
		}
		for _, expression := range ignore.JQPathExpressions {
			query, err := gojq.Parse(fmt.Sprintf("del(%s)", expression))
			if err != nil {
				return nil, fmt.Errorf("jqPathExpression %q: %w", expression, err)
			}
			code, err := gojq.Compile(query)
			if err != nil {
				return nil, fmt.Errorf("jqPathExpression %q: %w", expression, err)
			}
			normalizer.patches = append(normalizer.patches, jqPatch{match: ignore, expression: expression, code: code})
		}
	}
	return normalizer, nil
}

// Normalize returns a copy of obj without the ignored fields. Like Argo CD, it skips an
// expression that fails on the object (Argo CD only logs it at debug level, and the field then
// shows as drift); those failures are returned as skipped so that a test can insist on none.
func (n *IgnoreNormalizer) Normalize(obj map[string]any) (normalized map[string]any, skipped []error, err error) {
	doc, err := json.Marshal(obj)
	if err != nil {
		return nil, nil, err
	}
	for _, patch := range n.patches {
		if !patch.matches(obj) {
			continue
		}
		patched, err := patch.apply(doc)
		if err != nil {
			skipped = append(skipped, fmt.Errorf("jqPathExpression %q: %w", patch.expression, err))
			continue
		}
		doc = patched
	}
	if err := json.Unmarshal(doc, &normalized); err != nil {
		return nil, nil, err
	}
	removeEmptyObjects(normalized)
	return normalized, skipped, nil
}

// matches selects objects as Argo CD does, except that group and kind are compared exactly
// (Argo CD also accepts glob patterns there).
func (p jqPatch) matches(obj map[string]any) bool {
	metadata, _ := obj["metadata"].(map[string]any)
	name, _ := metadata["name"].(string)
	namespace, _ := metadata["namespace"].(string)
	kind, _ := obj["kind"].(string)
	return p.match.Group == apiGroup(obj) && p.match.Kind == kind &&
		(p.match.Name == "" || p.match.Name == name) &&
		(p.match.Namespace == "" || p.match.Namespace == namespace)
}

func (p jqPatch) apply(doc []byte) ([]byte, error) {
	var input map[string]any
	if err := json.Unmarshal(doc, &input); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), jqTimeout)
	defer cancel()
	results := p.code.RunWithContext(ctx, input)
	first, ok := results.Next()
	if !ok {
		return nil, errors.New("JQ patch did not return any data")
	}
	if err, isErr := first.(error); isErr {
		return nil, fmt.Errorf("JQ patch returned error: %w", err)
	}
	if _, more := results.Next(); more {
		return nil, errors.New("JQ patch returned multiple objects")
	}
	return json.Marshal(first)
}

// removeEmptyObjects drops the maps, arrays and array items that the deletions left empty, as
// Argo CD's ignore normalizer does after applying its patches.
func removeEmptyObjects(obj map[string]any) {
	for key, value := range obj {
		switch v := value.(type) {
		case map[string]any:
			removeEmptyObjects(v)
			if len(v) == 0 {
				delete(obj, key)
			}
		case []any:
			kept := make([]any, 0, len(v))
			for _, item := range v {
				if m, isMap := item.(map[string]any); isMap {
					removeEmptyObjects(m)
					if len(m) == 0 {
						continue
					}
				}
				kept = append(kept, item)
			}
			if len(kept) == 0 {
				delete(obj, key)
			} else {
				obj[key] = kept
			}
		}
	}
}

// apiGroup is the group of an object's apiVersion ("" for the core group).
func apiGroup(obj map[string]any) string {
	apiVersion, _ := obj["apiVersion"].(string)
	group, _, found := strings.Cut(apiVersion, "/")
	if !found {
		return ""
	}
	return group
}
