"""The validators of the deployment artifacts, as scripts/install-deploy-tools installs them.

``tool("helm")`` is the path of a validator under ``<tools>/bin``, where ``<tools>`` is
``DEPLOY_TOOLS_DIR``, or ``/var/cache/policy-indexer/deploy-tools`` as root, else
``.local/deploy-tools``. A missing one is installed by running the script once (it is
idempotent and takes a second when everything is there); a validator that still cannot be
had skips the test with the installer's own error as the reason, never silently. Debian's
tools (``amtool``, ``systemd-analyze``) are looked up on PATH the same way.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
# The folder scripts/install-deploy-tools fills, by the same rule.
TOOLS_DIR = Path(os.environ.get("DEPLOY_TOOLS_DIR") or (
    "/var/cache/policy-indexer/deploy-tools" if os.geteuid() == 0
    else REPO_ROOT / ".local" / "deploy-tools"))
DEBIAN_TOOLS = {"amtool": "prometheus-alertmanager", "systemd-analyze": "systemd"}


@functools.cache
def _install() -> str:
    """Run the installer once per session; its error output, or '' on success."""
    try:
        result = subprocess.run([str(REPO_ROOT / "scripts" / "install-deploy-tools")],
                                cwd=REPO_ROOT, capture_output=True, text=True, timeout=1800,
                                check=False)
    except subprocess.TimeoutExpired:
        return "scripts/install-deploy-tools took more than 30 minutes"
    return "" if result.returncode == 0 else (result.stderr or result.stdout)[-2000:]


def tool(name: str) -> Path:
    def find() -> Path | None:
        if name in DEBIAN_TOOLS:
            found = shutil.which(name)
            return Path(found) if found else None
        path = TOOLS_DIR / "bin" / name
        return path if path.exists() else None

    path = find()
    if path is None:
        error = _install()
        path = find()
        if path is None:
            pytest.skip(f"{name} cannot be installed here (scripts/install-deploy-tools: "
                        f"{error.strip() or 'no error, but the tool is still missing'})")
    return path


def kubernetes_schemas() -> Path:
    """The built-in kinds' JSON schemas of the PyPI package kubernetes-validate."""
    tool("kubeconform")  # installs the folder with the rest
    path = TOOLS_DIR / "kubernetes-json-schema"
    if not path.is_dir():
        pytest.skip(f"{path} is missing after scripts/install-deploy-tools: {_install()}")
    return path
