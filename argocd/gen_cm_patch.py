"""Writes argocd/argocd-cm-patch.yaml from argocd/health.lua, so that the Lua lives in one place.

    python3 argocd/gen_cm_patch.py          # rewrite the patch
    python3 argocd/gen_cm_patch.py --check  # exit 1 if the patch is not what health.lua gives

Standard library only: it runs before the project's virtualenv exists.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
HEALTH_LUA = HERE / "health.lua"
CM_PATCH = HERE / "argocd-cm-patch.yaml"
HEALTH_KEY = "resource.customizations.health.modelgate.io_ModelRollout"
INDENT = "    "

HEADER = f"""\
# Generated from argocd/health.lua by `python3 argocd/gen_cm_patch.py`: edit health.lua, not this.
# Adds the ModelRollout health check to Argo CD's argocd-cm ConfigMap (see argocd/README.md):
#   kubectl -n argocd patch configmap argocd-cm --type merge --patch-file argocd/argocd-cm-patch.yaml
# or list it as a patch of argocd-cm in the kustomization that installs Argo CD.
apiVersion: v1
kind: ConfigMap
metadata:
  name: argocd-cm
  namespace: argocd
  labels:
    app.kubernetes.io/name: argocd-cm
    app.kubernetes.io/part-of: argocd
data:
  {HEALTH_KEY}: """


def literal_block(text: str) -> str:
    """`text` as a YAML literal block scalar (the part after `key: `) that parses back to exactly
    `text`: the chomping indicator keeps its trailing newlines as they are, an explicit indentation
    indicator covers a first line that starts with a space, and empty lines carry no indentation."""
    body = text.rstrip("\n")
    trailing = len(text) - len(body)
    chomping = {0: "-", 1: ""}.get(trailing, "+")
    indentation = str(len(INDENT)) if body.lstrip("\n").startswith(" ") else ""
    lines = body.split("\n") + [""] * (trailing - 1 if trailing > 1 else 0)
    indented = "\n".join(INDENT + line if line else "" for line in lines)
    return f"|{indentation}{chomping}\n{indented}\n"


def render(lua: str) -> str:
    if not lua.strip() or "\r" in lua:
        raise ValueError(
            f"{HEALTH_LUA.name} must be non-empty, with LF line endings (YAML turns CRLF into LF)"
        )
    return HEADER + literal_block(lua)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Write argocd/argocd-cm-patch.yaml from argocd/health.lua.")
    parser.add_argument("--check", action="store_true", help="only check that the patch is up to date")
    args = parser.parse_args(argv)
    wanted = render(HEALTH_LUA.read_text(encoding="utf-8"))
    if args.check:
        current = CM_PATCH.read_text(encoding="utf-8") if CM_PATCH.exists() else ""
        if current != wanted:
            print(f"{CM_PATCH} is out of date: run python3 {Path(__file__).name}", file=sys.stderr)
            return 1
        return 0
    CM_PATCH.write_text(wanted, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
