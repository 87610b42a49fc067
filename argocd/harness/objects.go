package harness

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"

	"sigs.k8s.io/yaml"
)

// ReadObject reads one Kubernetes object from a YAML file, with numbers typed as in the
// unstructured objects Argo CD's controller holds: int64 for integers, float64 otherwise.
func ReadObject(path string) (map[string]any, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return ParseObject(data)
}

// ParseObject parses one Kubernetes object from YAML (or JSON); see ReadObject.
func ParseObject(data []byte) (map[string]any, error) {
	asJSON, err := yaml.YAMLToJSON(data)
	if err != nil {
		return nil, err
	}
	decoder := json.NewDecoder(bytes.NewReader(asJSON))
	decoder.UseNumber()
	var object map[string]any
	if err := decoder.Decode(&object); err != nil {
		return nil, err
	}
	if object == nil {
		return nil, fmt.Errorf("no object in %q", data)
	}
	converted, err := typeNumbers(object)
	if err != nil {
		return nil, err
	}
	return converted.(map[string]any), nil
}

func typeNumbers(value any) (any, error) {
	switch v := value.(type) {
	case json.Number:
		if i, err := v.Int64(); err == nil {
			return i, nil
		}
		return v.Float64()
	case []any:
		for i, item := range v {
			converted, err := typeNumbers(item)
			if err != nil {
				return nil, err
			}
			v[i] = converted
		}
	case map[string]any:
		for key, item := range v {
			converted, err := typeNumbers(item)
			if err != nil {
				return nil, err
			}
			v[key] = converted
		}
	}
	return value, nil
}

// ReadYAML reads a YAML file into a value whose fields carry json tags.
func ReadYAML(path string, into any) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	return yaml.UnmarshalStrict(data, into)
}
