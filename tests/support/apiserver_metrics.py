"""The API server's own metrics (its /metrics, read with the bed's admin credentials)."""

from __future__ import annotations

from collections.abc import Mapping

from kubernetes import client
from prometheus_client.parser import text_string_to_metric_families


def apiserver_sum(api_client: client.ApiClient, sample: str, labels: Mapping[str, str]) -> float:
    """The sum of the samples named `sample` whose labels include `labels`."""
    method, url, headers, _, _ = api_client.param_serialize("GET", "/metrics", auth_settings=["BearerToken"])
    response = api_client.call_api(method, url, headers)
    response.read()
    text = response.data.decode()
    return sum(
        found.value
        for family in text_string_to_metric_families(text)
        for found in family.samples
        if found.name == sample and labels.items() <= found.labels.items()
    )
