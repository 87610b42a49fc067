"""`make release-check`: what the release workflow (.github/workflows/release.yaml) does, but the
uploads, proving that each artifact installs: the versions agree; the wheel and sdist build offline
with the lock's build tools; the wheel installs into a fresh venv from the lock (hashed, --no-deps)
and its commands run, `kubectl modelrollout` through kubectl's plugin lookup too; the chart, stamped
as a release stamps it, packages, lints and renders the stamped image; the release notes come from
CHANGELOG.md; the image is built where a container builder exists.

    python -m tooling.release_check [--out dist] [--root DIR] [--no-image]"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import yaml

from testbed import binaries
from tooling.release_chart import stamp_chart
from tooling.release_names import CHART_NAME, DISTRIBUTION, REPO_ROOT, image_repository
from tooling.release_notes import Published, release_notes
from tooling.release_versions import project_version, version_mismatches

# Where a local check says the chart comes from: no real address (.invalid is reserved).
CHECK_OWNER = "release-check"
CHECK_REPOSITORY_URL = "https://example.invalid/release-check/modelgate"
BUILDERS = ("docker", "podman", "buildah")
COMMANDS = ("modelgate", "kubectl-modelrollout")


class ReleaseCheckError(RuntimeError):
    pass


@dataclass(frozen=True)
class Release:
    root: Path
    out: Path
    version: str


def run(command: Sequence[str | Path], cwd: Path | None = None, env: dict[str, str] | None = None) -> str:
    """The command's standard output; a failure raises with the command and what it printed."""
    words = [str(word) for word in command]
    result = subprocess.run(words, cwd=cwd, env=env, capture_output=True, text=True, check=False)
    if result.returncode != 0:
        raise ReleaseCheckError(f"`{' '.join(words)}` exited {result.returncode}:\n{result.stderr[-2000:]}")
    return result.stdout


def shown(path: Path) -> str:
    """`path` as a person at the command line reads it: relative where it is under the cwd."""
    return str(path.relative_to(Path.cwd())) if path.is_relative_to(Path.cwd()) else str(path)


def check_versions(release: Release) -> str:
    problems = version_mismatches(release.root, f"v{release.version}", allow_undated=True)
    if problems:
        raise ReleaseCheckError("\n".join(problems))
    return (
        f"v{release.version}: pyproject.toml, the chart, the Dockerfile, the package and CHANGELOG.md agree"
    )


def build_python(release: Release) -> str:
    """Wheel and sdist with the lock's `build` and hatchling: nothing is resolved or downloaded."""
    out = release.out / "python"
    shutil.rmtree(out, ignore_errors=True)
    run([sys.executable, "-m", "build", "--no-isolation", "--outdir", out, release.root])
    stem = f"{DISTRIBUTION.replace('-', '_')}-{release.version}"
    built = sorted(path.name for path in out.iterdir())
    if built != [f"{stem}-py3-none-any.whl", f"{stem}.tar.gz"]:
        raise ReleaseCheckError(f"expected {stem}'s wheel and sdist in {out}, found {built}")
    return f"{' and '.join(built)} in {shown(out)}"


def verify_install(release: Release) -> str:
    """The wheel in a fresh venv: the image lock's pins (the lock's own pip first), the wheel with
    --no-deps, `pip check`, then each command's --help and `kubectl modelrollout --help`."""
    (wheel,) = (release.out / "python").glob("*.whl")
    with tempfile.TemporaryDirectory(prefix="release-check-") as folder:
        venv = Path(folder) / "venv"
        run([sys.executable, "-m", "venv", venv])
        lock_args = [release.root / "requirements-image.lock", release.root / "requirements.lock"]
        # Not compiled: the venv is thrown away after a few commands (18 s to install, 26 s compiled).
        quick = os.environ | {"PIP_NO_COMPILE": "1"}
        run(["bash", release.root / "hack" / "install-lock.sh", venv, *lock_args], env=quick)
        pip: list[str | Path] = [venv / "bin" / "python", "-m", "pip", "--disable-pip-version-check"]
        run([*pip, "install", "-q", "--no-deps", "--no-index", wheel])
        run([*pip, "check"])
        metadata = f"import importlib.metadata as m; print(m.version({DISTRIBUTION!r}))"
        installed = run([venv / "bin" / "python", "-c", metadata]).strip()
        if installed != release.version:
            raise ReleaseCheckError(f"the venv has {DISTRIBUTION} {installed}, not {release.version}")
        for command in COMMANDS:
            run([venv / "bin" / command, "--help"])
        said = run([venv / "bin" / "modelgate", "--version"]).split()
        if said[-1:] != [release.version]:
            raise ReleaseCheckError(f"`modelgate --version` says {' '.join(said)!r}, not {release.version}")
        plugin = kubectl_plugin_lookup(venv)
    return f"{wheel.name} installs from the lock; {' and '.join(COMMANDS)} run; {plugin}"


def kubectl_plugin_lookup(venv: Path) -> str:
    """`kubectl modelrollout --help` with the venv's commands on PATH, as kubectl finds plugins."""
    try:
        kubectl = str(binaries.binary("kubectl"))
    except binaries.MissingBinary:  # only the bed's full build (make bins) makes one
        found = shutil.which("kubectl")
        if found is None:
            return "`kubectl modelrollout` not tried: no kubectl here (`make bins` builds one)"
        kubectl = found
    env = os.environ | {"PATH": f"{venv / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}"}
    run([kubectl, "modelrollout", "--help"], env=env)
    offered = run([kubectl, "__complete", "modelrollout", ""], env=env).split()
    if "status" not in offered:  # kubectl asks the wheel's kubectl_complete-modelrollout
        raise ReleaseCheckError(f"`kubectl modelrollout <TAB>` offers {offered!r}, not the commands")
    return "`kubectl modelrollout` runs it as a kubectl plugin, with completion"


def check_chart(release: Release) -> str:
    """The chart stamped as a release stamps it (no digest: none was pushed), packaged, linted, and
    rendered with its defaults: the operator runs the stamped image."""
    helm = binaries.binary("helm")
    chart_dir = stamp_chart(
        release.out / "chart-source", release.version, CHECK_OWNER, CHECK_REPOSITORY_URL, None,
        source=release.root / "charts" / CHART_NAME,
    )  # fmt: skip
    run([helm, "package", chart_dir, "--destination", release.out])
    package = release.out / f"{CHART_NAME}-{release.version}.tgz"
    run([helm, "lint", "--strict", package])
    rendered = yaml.safe_load_all(run([helm, "template", "modelgate", package, "--namespace", "modelgate"]))
    images = {
        container["image"]
        for doc in rendered
        if doc and doc["kind"] == "Deployment"
        for container in doc["spec"]["template"]["spec"]["containers"]
    }
    expected = f"{image_repository(CHECK_OWNER)}:{release.version}"
    if expected not in images:
        raise ReleaseCheckError(f"the packaged chart's Deployment runs {sorted(images)}, not {expected}")
    return f"{package.name}: helm lint --strict and helm template pass; the operator runs {expected}"


def write_notes(release: Release) -> str:
    notes = release.out / "release-notes.md"
    changelog = (release.root / "CHANGELOG.md").read_text()
    notes.write_text(release_notes(changelog, Published(release.version, CHECK_OWNER)))
    return f"{shown(notes)} ({len(notes.read_text().splitlines())} lines)"


def unusable_builder(builder: str) -> str | None:
    """Why `builder` cannot build the image here, or None when it can."""
    if shutil.which(builder) is None:
        return f"{builder} is not on PATH"
    if builder != "docker":
        return None
    # The Dockerfile's RUN --mount needs BuildKit (buildx); the legacy builder refuses it.
    for probe, missing in ((["buildx", "version"], "no buildx"), (["info"], "no daemon that answers")):
        if subprocess.run(["docker", *probe], capture_output=True, check=False).returncode != 0:
            return f"docker is on PATH but has {missing} (`docker {' '.join(probe)}` failed)"
    return None


def build_image(release: Release) -> str:
    reasons = {builder: unusable_builder(builder) for builder in BUILDERS}
    builder = next((name for name, reason in reasons.items() if reason is None), None)
    if builder is None:
        return (
            f"skipped, no container builder here: {'; '.join(str(r) for r in reasons.values())}. "
            "The release workflow builds it with docker buildx for linux/amd64 and linux/arm64"
        )
    tag = f"modelgate:{release.version}"
    build = ["buildx", "build", "--load"] if builder == "docker" else ["build"]
    run([builder, *build, "--build-arg", f"VERSION={release.version}", "-t", tag, release.root])
    return f"{tag} built with {builder} (this machine's architecture only)"


STEPS: tuple[tuple[str, Callable[[Release], str]], ...] = (
    ("versions", check_versions),
    ("python", build_python),
    ("install", verify_install),
    ("chart", check_chart),
    ("notes", write_notes),
    ("image", build_image),
)


def parser() -> argparse.ArgumentParser:
    """The command line of `make release-check`."""
    cli = argparse.ArgumentParser(prog="python -m tooling.release_check", description=__doc__)
    cli.add_argument("--out", type=Path, default=Path("dist"))
    cli.add_argument("--root", type=Path, default=REPO_ROOT)
    cli.add_argument("--no-image", action="store_true", help="leave the image out (it says so)")
    return cli


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    release = Release(args.root.resolve(), args.out.resolve(), project_version(args.root))
    started = time.monotonic()
    for name, step in STEPS:
        step_started = time.monotonic()
        try:
            said = "skipped: --no-image" if step is build_image and args.no_image else step(release)
        except (ReleaseCheckError, binaries.MissingBinary, binaries.UnverifiedBinary) as error:
            print(f"release-check: {name} FAILED: {error}", file=sys.stderr)
            return 1
        print(f"release-check: {name} ({time.monotonic() - step_started:.1f}s)")
        print(textwrap.fill(said, 80, initial_indent="  ", subsequent_indent="  "), flush=True)
    print(f"release-check: all but the uploads checked in {time.monotonic() - started:.0f}s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
