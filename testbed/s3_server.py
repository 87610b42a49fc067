"""The bed's S3-compatible server: moto in server mode on 127.0.0.1, from a venv of its own
(hack/moto-venv.sh builds it once into the cache: moto cannot share the project's venv), started and
stopped by pid as one of the bed's processes.

moto checks no credentials by default. It is started to take only its bootstrap's requests
unauthenticated (hack/moto/bootstrap.py: an IAM user, its access key, the buckets); every later
request is checked, so wrong credentials are refused as a real store refuses them.
"""

from __future__ import annotations

import json
import subprocess
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

from testbed.components import LOOPBACK
from testbed.ports import free_port
from testbed.processes import ProcessRegistry, StartedProcess
from testbed.versions import REPO_ROOT
from testbed.waiting import wait_for

MOTO_VENV_SCRIPT = REPO_ROOT / "hack" / "moto-venv.sh"
BOOTSTRAP = REPO_ROOT / "hack" / "moto" / "bootstrap.py"
BOOTSTRAP_ACTIONS = 3  # hack/moto/bootstrap.py's ACTIONS, before one request per bucket
REGION = "us-east-1"
STARTUP_TIMEOUT = 30.0


def moto_venv() -> Path:
    """moto's venv, installed from its hashed lock when missing (the script prints its timing)."""
    done = subprocess.run(["bash", str(MOTO_VENV_SCRIPT)], check=True, capture_output=True, text=True)
    return Path(done.stdout.strip().splitlines()[-1])


@dataclass(frozen=True)
class S3Server:
    registry: ProcessRegistry
    process: StartedProcess
    port: int
    buckets: tuple[str, ...]
    access_key_id: str
    secret_access_key: str = field(repr=False)

    @classmethod
    def start(cls, registry: ProcessRegistry, buckets: tuple[str, ...]) -> S3Server:
        venv, port = moto_venv(), free_port()
        python = str(venv / "bin" / "python")
        process = registry.start(
            "s3",
            [python, "-m", "moto.server", "-H", LOOPBACK, "-p", str(port)],
            env={"INITIAL_NO_AUTH_ACTION_COUNT": str(BOOTSTRAP_ACTIONS + len(buckets))},
        )
        endpoint = f"http://{LOOPBACK}:{port}"
        try:
            wait_for(lambda: _answers(endpoint), timeout=STARTUP_TIMEOUT, what=f"moto ({process.log_file})")
            booted = subprocess.run(
                [python, str(BOOTSTRAP), endpoint, *buckets], check=True, capture_output=True, text=True
            )
        except BaseException:
            registry.stop(process)
            raise
        key = json.loads(booted.stdout)
        return cls(registry, process, port, buckets, key["accessKeyId"], key["secretAccessKey"])

    @property
    def endpoint(self) -> str:
        return f"http://{LOOPBACK}:{self.port}"

    def secret_data(self) -> dict[str, str]:
        """A storage Secret's keys (docs/object-storage.md) for this server."""
        return {
            "endpoint": self.endpoint,
            "region": REGION,
            "accessKeyId": self.access_key_id,
            "secretAccessKey": self.secret_access_key,
        }

    def stop(self) -> None:
        self.registry.stop(self.process)


def _answers(endpoint: str) -> bool:
    # moto's own status page, outside S3's API: it counts as none of the unauthenticated requests.
    with urllib.request.urlopen(f"{endpoint}/moto-api/", timeout=2) as response:
        return bool(response.status == 200)
