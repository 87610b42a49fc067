"""Where a gate check's JSONL inputs come from: a ConfigMap, a URL, a volume, an S3 object.

Where a gate check's JSONL inputs come from (spec.gate.checks[].evaluator.testSet and .replay): a
ConfigMap key, an http(s) URL, a file on a PersistentVolumeClaim, an S3 object, or (a replay) the
requests a refusal proxy recorded."""

from typing import Annotated, Self

from pydantic import AfterValidator, ConfigDict, Field, StringConstraints, model_validator

from modelgate.api.fields import RELATIVE_PATH_PATTERN, HttpUrl, Integer, ObjectName, SecretKey
from modelgate.api.markers import CelRule, cel_rules
from modelgate.api.object_storage import S3Object
from modelgate.api.recorded_requests import ONE_REPLAY_SOURCE, RECORDED_NOT_SAMPLED, RecordedRequests
from modelgate.api.specmodel import SpecModel

# A check's samples: the test set's items or the recorded requests replayed.
MAX_SAMPLES = 100_000


class ConfigMapKey(SpecModel):
    name: ObjectName = Field(description="Name of a ConfigMap in the ModelRollout's namespace.")
    key: SecretKey = Field(description="Key within the ConfigMap's data that holds the JSONL.")


PARENT_SEGMENT = "must stay within the volume: no '..' segment"


def _no_parent_segment(path: str) -> str:
    if ".." in path.split("/"):
        raise ValueError(PARENT_SEGMENT)
    return path


VolumePath = Annotated[
    str,
    StringConstraints(min_length=1, max_length=1024, pattern=RELATIVE_PATH_PATTERN),
    AfterValidator(_no_parent_segment),
    Field(json_schema_extra=cel_rules(CelRule("!self.matches('(^|/)[.][.](/|$)')", message=PARENT_SEGMENT))),
]


class PersistentVolumeFile(SpecModel):
    claim_name: ObjectName = Field(
        description="Name of a PersistentVolumeClaim in the ModelRollout's namespace."
    )
    path: VolumePath = Field(
        description="Path of the JSONL file within the volume, relative to its root; no '..' segment."
    )


ONE_SOURCE = "set exactly one of configMap, url, persistentVolumeClaim or s3"


class JsonlSource(SpecModel):
    """Where a JSONL file comes from; set exactly one of configMap, url, persistentVolumeClaim or s3."""

    model_config = ConfigDict(
        json_schema_extra=cel_rules(
            CelRule(
                "[has(self.configMap), has(self.url), has(self.persistentVolumeClaim), has(self.s3)]"
                ".exists_one(s, s)",
                message=ONE_SOURCE,
            )
        )
    )

    config_map: ConfigMapKey | None = Field(
        None, description="A ConfigMap key, mounted into the evaluator's Pod as a file."
    )
    url: HttpUrl | None = Field(None, description="An http(s) URL the evaluator downloads the file from.")
    persistent_volume_claim: PersistentVolumeFile | None = Field(
        None, description="A file on a PersistentVolumeClaim, mounted read-only into the evaluator's Pod."
    )
    s3: S3Object | None = Field(
        None,
        description="An object in S3-compatible storage, read by the evaluator with the Secret's "
        "credentials.",
    )

    @model_validator(mode="after")
    def _exactly_one_source(self) -> Self:
        if [self.config_map, self.url, self.persistent_volume_claim, self.s3].count(None) != 3:
            raise ValueError(ONE_SOURCE)
        return self


class ReplaySource(JsonlSource):
    """Recorded requests: a JSONL file, or the newest requests a refusal proxy recorded."""

    model_config = ConfigDict(
        json_schema_extra=cel_rules(
            CelRule(
                "[has(self.configMap), has(self.url), has(self.persistentVolumeClaim), has(self.s3),"
                " has(self.recorded)].exists_one(s, s)",
                message=ONE_REPLAY_SOURCE,
            ),
            CelRule("!has(self.recorded) || !has(self.sample)", message=RECORDED_NOT_SAMPLED),
        )
    )

    sample: Annotated[Integer, Field(ge=1, le=MAX_SAMPLES)] | None = Field(
        None, description="How many recorded requests to replay, sampled with a fixed seed; default all."
    )
    recorded: RecordedRequests | None = Field(
        None, description="The newest requests a refusal proxy recorded (e.g. the incumbent's)."
    )

    @model_validator(mode="after")
    def _exactly_one_source(self) -> Self:
        sources = [self.config_map, self.url, self.persistent_volume_claim, self.s3, self.recorded]
        if sources.count(None) != len(sources) - 1:
            raise ValueError(ONE_REPLAY_SOURCE)
        if self.recorded is not None and self.sample is not None:
            raise ValueError(RECORDED_NOT_SAMPLED)
        return self
