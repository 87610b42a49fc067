"""--allow-loopback: the one switch that lets a command's URLs reach loopback addresses.

--allow-loopback: the one switch, on every command whose URLs the egress policy holds (run,
report, replay, eval, evaluations), that lets them reach loopback addresses: a local bed, a
port-forwarded Prometheus, a MinIO on this machine. It sets $MODELGATE_ALLOW_LOOPBACK for the
process, so that every client the command makes builds its policy from the same setting
(modelgate.egress.policy_from_environment), and the operator passes it on to its evaluator Jobs.
Link-local and metadata addresses stay refused."""

from __future__ import annotations

import argparse
import os

from modelgate.api.addresses import (
    ALLOW_LOOPBACK_ENV,
    ALLOW_LOOPBACK_FLAG,
    AddressRefused,
    EgressPolicy,
    Refusal,
)


def add_loopback_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        ALLOW_LOOPBACK_FLAG,
        action="store_true",
        help=f"let URLs reach loopback addresses (127.0.0.0/8, ::1, localhost): a local bed or a "
        f"port-forward; the same as ${ALLOW_LOOPBACK_ENV}=true. Link-local and cloud metadata "
        "addresses stay refused",
    )


def allow_loopback_if_asked(args: argparse.Namespace) -> None:
    """Called once the command line is parsed, before the command runs."""
    if getattr(args, "allow_loopback", False):
        os.environ[ALLOW_LOOPBACK_ENV] = "true"


def names_loopback(url: str | None) -> bool:
    """Whether `url` names a loopback address by itself (an IP in any form, or localhost), so that
    a command printed for it needs the switch to work."""
    try:
        target = EgressPolicy().check_url(url or "")
    except AddressRefused as refused:
        return refused.refusal is Refusal.LOOPBACK
    return target.host == "localhost" or target.host.endswith(".localhost")
