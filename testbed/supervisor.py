"""`python -m testbed.supervisor -- ARGV...`: runs ARGV and starts it again whenever it exits, as the
kubelet does for a control plane's static pods (or systemd for one run as a unit).
kube-controller-manager and kube-scheduler exit when they lose their leader lease, as they do when
the API server is away for longer than the lease's renew deadline (and again at once while it is still
away); a node brings them back with fresh watches, and so does the bed.

The restart delay doubles from RESTART_DELAY up to MAX_RESTART_DELAY (the kubelet's CrashLoopBackOff,
capped far lower: a component must be back within seconds of the API server, or the tests wait on
it), and starts over once the component ran STEADY seconds. SIGTERM stops the component, then the
supervisor (exit status 0); were the supervisor SIGKILLed, the kernel SIGKILLs the component with it
(PR_SET_PDEATHSIG).
"""

from __future__ import annotations

import ctypes
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from types import FrameType

RESTART_DELAY = 1.0
MAX_RESTART_DELAY = 5.0
STEADY = 30.0
PR_SET_PDEATHSIG = 1


def _die_with_parent() -> None:
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)


def next_delay(previous: float | None, ran_seconds: float) -> float:
    """The wait before the next start, after a run of `ran_seconds` that followed a wait of `previous`
    (None: the first start)."""
    if previous is None or ran_seconds >= STEADY:
        return RESTART_DELAY
    return min(previous * 2, MAX_RESTART_DELAY)


class Supervisor:
    def __init__(self, argv: Sequence[str]) -> None:
        self.argv = list(argv)
        self.child: subprocess.Popen[bytes] | None = None
        self.stopping = False

    def stop(self, _signum: int, _frame: FrameType | None) -> None:
        self.stopping = True
        if self.child is not None and self.child.poll() is None:
            self.child.terminate()

    def run(self) -> int:
        delay: float | None = None
        while True:
            started = time.monotonic()
            self.child = subprocess.Popen(self.argv, preexec_fn=_die_with_parent)
            if self.stopping:  # SIGTERM came while it was being started
                self.child.terminate()
            code = self.child.wait()
            if self.stopping:
                return 0
            ran = time.monotonic() - started
            delay = next_delay(delay, ran)
            print(
                f"supervisor: {self.argv[0]} exited with {code} after {ran:.1f}s; starting it again in"
                f" {delay:g}s",
                flush=True,
            )
            deadline = time.monotonic() + delay
            while not self.stopping and time.monotonic() < deadline:
                time.sleep(0.1)
            if self.stopping:
                return 0


def main(argv: Sequence[str]) -> int:
    if not argv or argv[0] != "--" or len(argv) < 2:
        print("usage: python -m testbed.supervisor -- PROGRAM [ARG...]", file=sys.stderr)
        return 2
    supervisor = Supervisor(argv[1:])
    signal.signal(signal.SIGTERM, supervisor.stop)
    signal.signal(signal.SIGINT, supervisor.stop)
    return supervisor.run()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
