"""hack/install-lock.sh installs a hashed lock without resolving anything, where a venv's bundled pip
would resolve and fail: pip 23.2.1 (Python 3.11.7's) reads an extra that a locked package asks for
(pip-audit's `CacheControl[filecache]>=0.13.0`) as a requirement of its own, and refuses the whole lock
as unpinned once the index holds a newer release than the pin. Reproduced offline: a find-links folder
of made-up wheels stands for the index, with the extra's package at the pin (1.0) and newer (2.0)."""

from __future__ import annotations

import base64
import ensurepip
import hashlib
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from testbed.versions import REPO_ROOT
from tooling.requirements_lock import normalized, read_pins

INSTALL_LOCK = REPO_ROOT / "hack" / "install-lock.sh"
PROJECT_LOCKS = [REPO_ROOT / "requirements.lock", REPO_ROOT / "hack" / "moto" / "requirements.lock"]
OLD_PIP = "23.2.1"


def _wheel(folder: Path, name: str, version: str, metadata: str = "") -> str:
    """A minimal pure-Python wheel; returns its sha256."""
    info = f"{name}-{version}.dist-info"
    files = {
        f"{name}/__init__.py": "",
        f"{info}/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n{metadata}",
        f"{info}/WHEEL": "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }
    record = []
    for path, text in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).rstrip(b"=").decode()
        record.append(f"{path},sha256={digest},{len(text.encode())}")
    files[f"{info}/RECORD"] = "\n".join([*record, f"{info}/RECORD,,"]) + "\n"
    wheel_path = folder / f"{name}-{version}-py3-none-any.whl"
    with zipfile.ZipFile(wheel_path, "w") as wheel:
        for member, text in files.items():
            wheel.writestr(member, text)
    return hashlib.sha256(wheel_path.read_bytes()).hexdigest()


def _pip_block(lock_text: str) -> str:
    """The lock's pip requirement with its hash lines."""
    lines = lock_text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("pip=="))
    end = next(i for i in range(start, len(lines)) if not lines[i].endswith("\\"))
    return "\n".join(lines[start : end + 1]) + "\n"


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The stand-in index: the made-up wheels and the project lock's own pip (downloaded once, by hash)."""
    folder = tmp_path_factory.mktemp("index")
    pip_pin = folder / "pip.txt"
    pip_pin.write_text(_pip_block((REPO_ROOT / "requirements.lock").read_text()))
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "download",
            "-q",
            "--no-deps",
            "--require-hashes",
            "-r",
            pip_pin,
            "--dest",
            folder,
        ],
        check=True,
    )
    auditor = _wheel(folder, "auditor", "1.0", "Requires-Dist: provider[cache]>=1.0\n")
    provider = _wheel(folder, "provider", "1.0", "Provides-Extra: cache\n")
    _wheel(folder, "provider", "2.0", "Provides-Extra: cache\n")
    (folder / "lock.txt").write_text(
        f"auditor==1.0 --hash=sha256:{auditor}\nprovider==1.0 --hash=sha256:{provider}\n"
        + pip_pin.read_text()
    )
    return folder


@pytest.fixture(scope="module")
def old_pip_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A venv whose pip is 23.2.1, from the wheel the standard library bundles: built once (3 s), copied
    for each test, which changes its copy."""
    bundled = sorted((Path(ensurepip.__file__).parent / "_bundled").glob("pip-*.whl"))
    assert [w.name.split("-")[1] for w in bundled] == [OLD_PIP], (
        f"this Python bundles {[w.name for w in bundled]}, not pip {OLD_PIP}: give the test another old pip"
    )
    path = tmp_path_factory.mktemp("old-pip") / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", path], check=True)
    subprocess.run(
        [path / "bin" / "python", bundled[0] / "pip", "install", "-q", "--no-index", bundled[0]], check=True
    )
    return path


def _old_pip_venv(template: Path, path: Path) -> Path:
    """A copy of the template (the tests run `bin/python -m pip`, never a script that names its path)."""
    shutil.copytree(template, path, symlinks=True)
    return path / "bin" / "python"


def _offline(index: Path) -> dict[str, str]:
    return {
        **os.environ,
        "PIP_NO_INDEX": "1",
        "PIP_FIND_LINKS": str(index),
        "PIP_DISABLE_PIP_VERSION_CHECK": "1",
    }


def _installed(python: Path) -> dict[str, str]:
    listed = subprocess.run(
        [python, "-m", "pip", "list", "--format=freeze"], check=True, capture_output=True, text=True
    ).stdout
    return dict(line.split("==") for line in listed.splitlines())


def test_the_bundled_pip_refuses_a_lock_whose_extra_has_a_newer_release(
    index: Path, old_pip_template: Path, tmp_path: Path
) -> None:
    """Today's failure, reproduced: the recipe the Makefile had (`pip install --require-hashes -r`)."""
    python = _old_pip_venv(old_pip_template, tmp_path / "venv")
    install = subprocess.run(
        [python, "-m", "pip", "install", "--require-hashes", "-r", index / "lock.txt"],
        env=_offline(index),
        capture_output=True,
        text=True,
    )
    assert install.returncode != 0
    assert "provider[cache]" in install.stderr  # the extra, taken for an unpinned requirement
    assert "auditor" not in _installed(python)


def test_install_lock_installs_the_pins_with_the_locks_own_pip(
    index: Path, old_pip_template: Path, tmp_path: Path
) -> None:
    python = _old_pip_venv(old_pip_template, tmp_path / "venv")
    install = subprocess.run(
        ["bash", INSTALL_LOCK, tmp_path / "venv", index / "lock.txt"],
        env=_offline(index),
        capture_output=True,
        text=True,
    )
    assert install.returncode == 0, install.stderr
    installed = _installed(python)
    lock = read_pins((index / "lock.txt").read_text())
    assert {name: installed[name] for name in ("auditor", "provider", "pip")} == {
        name: lock[name].version for name in ("auditor", "provider", "pip")
    }


def test_install_lock_refuses_a_lock_that_pins_no_pip(index: Path, tmp_path: Path) -> None:
    lock = tmp_path / "lock.txt"
    lock.write_text("\n".join(line for line in (index / "lock.txt").read_text().splitlines()[:2]) + "\n")
    install = subprocess.run(
        ["bash", INSTALL_LOCK, tmp_path / "absent-venv", lock], capture_output=True, text=True
    )
    assert install.returncode != 0
    assert "pip" in install.stderr


def test_install_lock_takes_pip_from_a_second_lock_when_the_first_pins_none(
    index: Path, old_pip_template: Path, tmp_path: Path
) -> None:
    """As release-check installs requirements-image.lock, which pins no pip, with requirements.lock's."""
    python = _old_pip_venv(old_pip_template, tmp_path / "venv")
    without_pip = tmp_path / "lock.txt"
    without_pip.write_text("\n".join((index / "lock.txt").read_text().splitlines()[:2]) + "\n")
    install = subprocess.run(
        ["bash", INSTALL_LOCK, tmp_path / "venv", without_pip, index / "lock.txt"],
        env=_offline(index),
        capture_output=True,
        text=True,
    )
    assert install.returncode == 0, install.stderr
    installed = _installed(python)
    assert installed["pip"] == read_pins((index / "lock.txt").read_text())["pip"].version != OLD_PIP
    assert installed["auditor"] == "1.0"


@pytest.mark.parametrize("lock", PROJECT_LOCKS, ids=lambda p: str(p.relative_to(REPO_ROOT)))
def test_every_lock_the_project_installs_pins_its_own_pip(lock: Path) -> None:
    assert normalized("pip") in read_pins(lock.read_text())
