"""Kubernetes extensions of the CRD's schema, declared on the models like kubebuilder's markers.

Each helper returns a `json_schema_extra` for a pydantic `Field` or `ConfigDict`; tooling/crd_gen.py
copies these keys into the CRD as they are. The CEL rules are enforced by the API server; the models'
validators repeat them beside them, so a spec that never passed through it gets the same answers.
"""

from dataclasses import dataclass

from pydantic import JsonValue

JsonDict = dict[str, JsonValue]


@dataclass(frozen=True)
class CelRule:
    """One `x-kubernetes-validations` entry. `field_path` is relative to the guarded object."""

    rule: str
    message: str | None = None
    message_expression: str | None = None
    field_path: str | None = None

    def __post_init__(self) -> None:
        # Without one, the API server answers "failed rule: <rule>", which names no field.
        if (self.message is None) == (self.message_expression is None):
            raise ValueError(f"CEL rule {self.rule!r}: set exactly one of message or message_expression")

    def to_schema(self) -> JsonDict:
        entry: JsonDict = {"rule": self.rule}
        if self.message is not None:
            entry["message"] = self.message
        if self.message_expression is not None:
            entry["messageExpression"] = self.message_expression
        if self.field_path is not None:
            entry["fieldPath"] = self.field_path
        return entry


def cel_rules(*rules: CelRule) -> JsonDict:
    """The rules, in order, as the `x-kubernetes-validations` of the field or model they guard."""
    validations: list[JsonValue] = [rule.to_schema() for rule in rules]
    return {"x-kubernetes-validations": validations}


def list_map(*keys: str) -> JsonDict:
    """A list whose items are unique by `keys`, merged item by item by server-side apply."""
    map_keys: list[JsonValue] = list(keys)
    return {"x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": map_keys}


# For an optional field whose null the API server should keep. Other fields allow no null, and the
# API server drops the nulls of the operator's status patches (ModelRolloutStatus.to_patch).
NULLABLE: JsonDict = {"nullable": True}


# For an object one writer replaces as a whole (the status): server-side apply tracks it as one value,
# so its managed fields name the object rather than each field, and every write of it compares one
# value. Lists under it keep their list-type: the API server still checks their keys are unique.
ATOMIC: JsonDict = {"x-kubernetes-map-type": "atomic"}
