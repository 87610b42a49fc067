"""`modelgate run` reads its environment once, into an OperatorConfig, and the operator's parts
share what it built: one egress policy for the metric providers, the gate's Jobs and the notifier."""

from __future__ import annotations

import ipaddress

from kubernetes import client

from modelgate.api import AnalysisSpec
from modelgate.api.addresses import ALLOW_LOOPBACK_ENV, Refusal
from modelgate.cli.run import operator_config
from modelgate.kube import Kube
from modelgate.kube.gate_jobs import EVALUATOR_IMAGE_ENV
from modelgate.metrics import PrometheusProvider
from modelgate.reconciler import Reconciler

API_SERVER = "https://10.0.0.1:6443"


def analysis() -> AnalysisSpec:
    return AnalysisSpec.model_validate(
        {
            "prometheus": {"address": "http://prometheus:9090"},
            "metrics": [{"name": "m", "query": "q", "max": 1}],
        }
    )


def test_the_environment_read_once_reaches_every_part_through_one_policy() -> None:
    environ = {ALLOW_LOOPBACK_ENV: "true", EVALUATOR_IMAGE_ENV: "modelgate:9"}
    config = operator_config(API_SERVER, environ)
    reconciler = Reconciler(Kube(client.ApiClient()), config=config)
    provider = reconciler.providers.for_analysis(analysis())
    assert isinstance(provider, PrometheusProvider)
    assert provider.egress is config.egress
    assert reconciler.gate_jobs.egress is config.egress
    assert reconciler.notifier._egress is config.egress
    assert config.egress.refusal(ipaddress.ip_address("127.0.0.1"), 9090) is None
    assert reconciler.gate_jobs.evaluator_image == "modelgate:9"
    assert reconciler.gate_jobs.evaluator_env[ALLOW_LOOPBACK_ENV] == "true"


def test_an_empty_environment_refuses_loopback() -> None:
    config = operator_config(API_SERVER, {})
    assert config.egress.refusal(ipaddress.ip_address("127.0.0.1"), 9090) is Refusal.LOOPBACK
    assert config.evaluator_image is None
