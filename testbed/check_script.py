"""A stand-in for a team's own gate check: writes the GateResult JSON it is given to the result file
(the check's termination message) and exits with the code it is given; or, with --hang, never ends,
as a check stuck on an unreachable service would. With --wait-for it measures only once that file
exists, so a test decides when the check ends.

    python -m testbed.check_script --result-file /dev/termination-log --result '{"scores": [...]}'
"""

from __future__ import annotations

import argparse
import signal
import sys
import time
from pathlib import Path

POLL_SECONDS = 0.1


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="check_script", description=__doc__)
    parser.add_argument("--result-file", type=Path, required=True)
    parser.add_argument("--result", default="", help="what to write to the result file, as it is")
    parser.add_argument("--exit-code", type=int, default=0)
    parser.add_argument("--hang", action="store_true", help="write nothing and wait to be killed")
    parser.add_argument("--wait-for", type=Path, help="end only once this file exists")
    args = parser.parse_args(argv)
    if args.hang:
        signal.pause()
    while args.wait_for is not None and not args.wait_for.exists():
        time.sleep(POLL_SECONDS)
    args.result_file.write_text(args.result)
    print(args.result)
    return int(args.exit_code)


if __name__ == "__main__":
    sys.exit(main())
