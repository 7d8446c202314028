"""The image's lock file: every runtime dependency pinned, with hashes, from pyproject.toml.

    .venv/bin/python deploy/image/lock.py            # regenerate (needs uv and PyPI)
    .venv/bin/python deploy/image/lock.py --check    # offline: is the lock still pyproject's?

``deploy/image/requirements.lock`` is ``uv pip compile --universal --generate-hashes`` of
pyproject.toml's ``[project] dependencies`` for Python 3.11 (the image's), one lock for
every platform the image may be built on. ``deploy/image/install.sh`` installs it with
``pip --require-hashes`` and then the project's own wheel with ``--no-deps``, so two
builds of one commit get the same distributions, byte for byte.

Its header records the requirements it was compiled from, one ``#   <requirement>`` line
each, normalised. ``--check`` (and tests/unit/deploy/test_image_lock.py) fails when they
differ from pyproject.toml's, when a direct dependency is not pinned to a version its
specifier allows, or when a pin has no hash: a dependency changed without the lock.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import tomllib
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[2]
PYPROJECT = ROOT / "pyproject.toml"
LOCK = ROOT / "deploy" / "image" / "requirements.lock"
PYTHON_VERSION = "3.11"
COMPILED_FROM = "# compiled from pyproject.toml's [project] dependencies:"
COMMAND = ".venv/bin/python deploy/image/lock.py"


def requirements(pyproject: Path = PYPROJECT) -> list[str]:
    """pyproject's runtime requirements, normalised and sorted (the header's form)."""
    project = tomllib.loads(pyproject.read_text(encoding="utf-8"))["project"]
    return sorted(str(Requirement(r)) for r in project["dependencies"])


def recorded(lock_text: str) -> list[str]:
    """The requirements the header says the lock was compiled from."""
    lines = lock_text.splitlines()
    if COMPILED_FROM not in lines:
        return []
    found = []
    for line in lines[lines.index(COMPILED_FROM) + 1:]:
        if not line.startswith("#   "):
            break
        found.append(line.removeprefix("#   ").strip())
    return found


def pins(lock_text: str) -> dict[str, list[tuple[str, int]]]:
    """name -> [(pinned version, number of hashes)] of every ``name==version`` entry (a
    universal lock may pin one name twice, under exclusive markers)."""
    found: dict[str, list[tuple[str, int]]] = {}
    name = ""
    for line in lock_text.splitlines():
        if line and not line[0].isspace() and not line.startswith("#") and "==" in line:
            spec = line.split(";", 1)[0].split("\\", 1)[0].strip()
            raw_name, version = spec.split("==", 1)
            name = canonicalize_name(raw_name.split("[", 1)[0])
            found.setdefault(name, []).append((version.strip(), 0))
        elif line.strip().startswith("--hash=sha256:") and name:
            version, hashes = found[name][-1]
            found[name][-1] = (version, hashes + 1)
    return found


def problems(pyproject: Path = PYPROJECT, lock: Path = LOCK) -> list[str]:
    if not lock.is_file():
        return [f"{lock} is missing: run {COMMAND}"]
    text = lock.read_text(encoding="utf-8")
    wanted, had = requirements(pyproject), recorded(text)
    found: list[str] = []
    if wanted != had:
        for line in sorted(set(wanted) - set(had)):
            found.append(f"pyproject.toml requires {line!r}, the lock was compiled without it")
        for line in sorted(set(had) - set(wanted)):
            found.append(f"the lock was compiled from {line!r}, pyproject.toml no longer says it")
    pinned = pins(text)
    for line in wanted:
        requirement = Requirement(line)
        name = canonicalize_name(requirement.name)
        if name not in pinned:
            found.append(f"{requirement.name} is not pinned in the lock")
        found += [f"{requirement.name}=={version} in the lock is outside "
                  f"{requirement.specifier}" for version, _ in pinned.get(name, [])
                  if not requirement.specifier.contains(version, prereleases=True)]
    found += [f"{name}=={version} has no --hash" for name, versions in sorted(pinned.items())
              for version, hashes in versions if hashes == 0]
    if found:
        found.append(f"regenerate it: {COMMAND}")
    return found


def compile_lock(uv: str) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        body = Path(tmp) / "requirements.lock"
        subprocess.run(
            [uv, "pip", "compile", str(PYPROJECT), "--universal", "--python-version",
             PYTHON_VERSION, "--generate-hashes", "--no-header", "--quiet", "-o", str(body)],
            check=True, cwd=ROOT, env={**os.environ, "UV_NO_CONFIG": "1"})
        header = [
            "# Every runtime dependency of the image, pinned with hashes: two builds of one",
            "# commit install the same files. Installed by deploy/image/install.sh with",
            "# pip --require-hashes (then the project with --no-deps).",
            f"# Do not edit: regenerate with `{COMMAND}`",
            f"# (uv pip compile --universal --python-version {PYTHON_VERSION} --generate-hashes)",
            "# after changing pyproject.toml's dependencies; until then",
            "# tests/unit/deploy/test_image_lock.py fails.",
            COMPILED_FROM,
            *(f"#   {line}" for line in requirements()),
            "",
        ]
        LOCK.write_text("\n".join(header) + body.read_text(encoding="utf-8"), encoding="utf-8")


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0], allow_abbrev=False)
    parser.add_argument("--check", action="store_true",
                        help="exit 1 when the lock does not match pyproject.toml")
    parser.add_argument("--uv", default=str(ROOT / ".venv" / "bin" / "uv"))
    args = parser.parse_args(argv)
    if not args.check:
        compile_lock(args.uv)
    found = problems()
    for line in found:
        print(line, file=sys.stderr)
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
