"""`python -m testbed up|down|status [--root DIR]`: the local control plane for humans."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from testbed.localcluster import LocalCluster


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m testbed", description=__doc__)
    parser.add_argument("command", choices=["up", "down", "status"])
    parser.add_argument(
        "--root", type=Path, default=Path(".localcluster"), help="state folder (default .localcluster)"
    )
    args = parser.parse_args(argv)
    cluster = LocalCluster(args.root)
    if args.command == "up":
        cluster.up()
        print(f"kubeconfig: {cluster.kubeconfig}\nprometheus: {cluster.prometheus_url}")
    elif args.command == "down":
        cluster.down()
    else:
        for process in cluster.processes.load():
            state = "running" if cluster.processes.is_running(process) else "gone"
            print(f"{process.name:<24} pid {process.pid:<8} {state}")
        return 0 if cluster.is_up() else 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
