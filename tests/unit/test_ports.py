"""The bed's ports: below the ephemeral range, never handed out twice while claimed, never one that is
already bound."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from testbed import ports


@pytest.fixture(autouse=True)
def own_claims(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ports, "CLAIMS", tmp_path / "claims")


def test_ports_come_from_below_the_ephemeral_range_and_are_never_repeated() -> None:
    handed = [ports.free_port() for _ in range(50)]
    assert len(set(handed)) == 50
    assert all(ports.FIRST_PORT <= port < ports.END_PORT for port in handed)


def test_a_bound_port_is_skipped(monkeypatch: pytest.MonkeyPatch) -> None:
    draw = ports.random.randrange
    with socket.socket() as taken:
        taken.bind((ports.LOOPBACK, 0))
        busy = taken.getsockname()[1]
        # The bound port is drawn first; then random ones (a fixed second port could be bound by
        # another process on a busy machine).
        draws = iter([busy])
        monkeypatch.setattr(
            ports.random, "randrange", lambda start, stop: next(draws, None) or draw(start, stop)
        )
        handed = ports.free_port()
        assert handed != busy


def test_a_claimed_port_is_not_handed_out_again(monkeypatch: pytest.MonkeyPatch) -> None:
    handed = ports.free_port()  # claimed, and still bindable: nothing listens on it
    # The claimed port is drawn first; then random ones (a fixed port could be bound by another
    # process on a busy machine: a bed of the same suite once held the one this test named).
    draw = ports.random.randrange
    draws: Iterator[int] = iter([handed])
    monkeypatch.setattr(ports.random, "randrange", lambda start, stop: next(draws, None) or draw(start, stop))
    assert ports.free_port() != handed
