"""What every `modelgate` sub-command shares: the target rollout and the cluster it lives in."""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import Any

import yaml

from modelgate import API_GROUP, API_VERSION, PLURAL
from modelgate.cli.cluster_errors import file_problem
from modelgate.kube import Kube, default_namespace
from modelgate.policy_plans import as_resolved

OUTPUT_HELP = "table: for people; json: for scripts"
# A command parser's default `completes`: what its positional NAME is, for the shell's completion.
COMPLETES, ROLLOUTS = "completes", "rollouts"
LOG_FORMAT_HELP = "json: one object a line, for a log collector; console: for people (colour on a terminal)"


def add_target_arguments(parser: argparse.ArgumentParser, *, name: str = "required") -> None:
    if name == "required":
        parser.add_argument("name", help="the ModelRollout")
    elif name == "optional":
        parser.add_argument("name", nargs="?", help="the ModelRollout (default: every one in the namespace)")
    if name in ("required", "optional"):
        parser.set_defaults(**{COMPLETES: ROLLOUTS})
    parser.add_argument("-n", "--namespace", help="default: the kubeconfig context's namespace")
    parser.add_argument("--kubeconfig", type=Path, help="default: $KUBECONFIG or ~/.kube/config")


def connect(args: argparse.Namespace) -> tuple[Kube, str]:
    namespace = args.namespace or default_namespace(args.kubeconfig)
    return Kube.from_kubeconfig(args.kubeconfig, default_kubeconfig=os.environ.get("KUBECONFIG")), namespace


def read_rollout(kube: Kube, namespace: str, name: str) -> dict[str, Any]:
    """The rollout, its spec resolved with the policy pinned in its status (policy_plans.py)."""
    return as_resolved(kube.get_custom(API_GROUP, API_VERSION, namespace, PLURAL, name))


def list_rollouts(kube: Kube, namespace: str | None) -> list[dict[str, Any]]:
    return [as_resolved(body) for body in kube.list_custom(API_GROUP, API_VERSION, namespace, PLURAL)]


def read_manifest(path: Path) -> dict[str, Any]:
    """The first ModelRollout of a YAML file (as `kubectl apply -f` would take it); a ValueError in
    one sentence for a file that cannot be read."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as error:
        raise ValueError(file_problem(error)) from None
    try:
        documents = list(yaml.safe_load_all(text))
    except yaml.YAMLError as error:
        raise ValueError(f"{path} is not YAML: {error}") from None
    for document in documents:
        if isinstance(document, dict) and document.get("kind") == "ModelRollout":
            return document
    raise ValueError(f"{path}: no ModelRollout in it")
