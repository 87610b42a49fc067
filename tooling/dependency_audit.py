"""`make test`'s audit of the locked dependencies (requirements.lock, written by `make lock`) with
pip-audit, against PyPI's vulnerability data, then OSV's.

    python -m tooling.dependency_audit requirements.lock

Exits 1 when a locked dependency has a known vulnerability, or no hash. Where no vulnerability
service can be asked (a machine that reaches only a package mirror), it prints one line saying why
and exits 0, unless MODELGATE_AUDIT=required, when that is a failure too. A run in which the
service skipped every dependency audited nothing and counts as a service that could not be asked,
not as a pass.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from tooling.requirements_lock import read_pins, unhashed

SERVICES = ("pypi", "osv")
REQUIRED = "MODELGATE_AUDIT"


@dataclass(frozen=True)
class Audit:
    """What one pip-audit run found: vulnerable dependencies (one line each), how many it audited,
    or why it could not audit (None when it could)."""

    vulnerable: tuple[str, ...] = ()
    audited: int = 0
    unavailable: str | None = None


def pip_audit_command(lock: Path, service: str) -> list[str]:
    # --require-hashes: the lock pins every dependency with its hashes, so pip-audit reads the pins
    # as they are, resolving (and installing) nothing.
    return [
        *(sys.executable, "-m", "pip_audit"),
        *("-r", str(lock), "--require-hashes", "--disable-pip"),
        *("--vulnerability-service", service, "--format", "json", "--progress-spinner", "off"),
    ]


def read_report(stdout: str, stderr: str) -> Audit:
    """pip-audit's JSON report, or why there is none (the last line of its error output)."""
    try:
        report = json.loads(stdout)
    except ValueError:
        lines = stderr.strip().splitlines() or ["no output"]
        return Audit(unavailable=lines[-1])
    vulnerable, audited, skipped = [], 0, []
    for dependency in report["dependencies"]:
        if "skip_reason" in dependency:
            skipped.append(dependency["skip_reason"])
            continue
        audited += 1
        ids = [vuln["id"] for vuln in dependency["vulns"]]
        if ids:
            vulnerable.append(f"{dependency['name']} {dependency['version']}: {', '.join(ids)}")
    if audited == 0 and skipped:
        return Audit(unavailable=f"every dependency skipped, e.g. {skipped[0]}")
    return Audit(tuple(vulnerable), audited)


def audit(lock: Path, service: str) -> Audit:
    command = pip_audit_command(lock, service)
    done = subprocess.run(command, capture_output=True, text=True, timeout=300, check=False)
    return read_report(done.stdout, done.stderr)


def main(argv: list[str]) -> int:
    lock = Path(argv[0] if argv else "requirements.lock")
    missing = unhashed(read_pins(lock.read_text()))
    if missing:
        print(f"{lock}: pins without hashes, refused by pip's --require-hashes:", *missing, sep="\n  ")
        print("run `make lock`")
        return 1
    reasons = []
    for service in SERVICES:
        found = audit(lock, service)
        if found.unavailable is not None:
            reasons.append(f"{service}: {found.unavailable}")
            continue
        if found.vulnerable:
            print(f"pip-audit ({service}): known vulnerabilities in {lock}:", *found.vulnerable, sep="\n  ")
            return 1
        print(f"pip-audit ({service}): {found.audited} locked dependencies, no known vulnerabilities")
        return 0
    required = os.environ.get(REQUIRED) == "required"
    verdict = "failed" if required else f"skipped (set {REQUIRED}=required to fail instead)"
    print(f"pip-audit {verdict}: no vulnerability service could be asked: {'; '.join(reasons)}")
    return 1 if required else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
