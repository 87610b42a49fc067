"""A stand-in for a team's own gate check: writes the GateResult JSON it is given to the result file
(the check's termination message) and exits with the code it is given; or, with --hang, never ends,
as a check stuck on an unreachable service would.

    python -m testbed.check_script --result-file /dev/termination-log --result '{"scores": [...]}'
"""

from __future__ import annotations

import argparse
import signal
import sys
from pathlib import Path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="check_script", description=__doc__)
    parser.add_argument("--result-file", type=Path, required=True)
    parser.add_argument("--result", default="", help="what to write to the result file, as it is")
    parser.add_argument("--exit-code", type=int, default=0)
    parser.add_argument("--hang", action="store_true", help="write nothing and wait to be killed")
    args = parser.parse_args(argv)
    if args.hang:
        signal.pause()
    args.result_file.write_text(args.result)
    print(args.result)
    return int(args.exit_code)


if __name__ == "__main__":
    sys.exit(main())
