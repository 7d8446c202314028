#!/bin/sh
# The image's install steps, in one place: the Dockerfile's build stage runs this script, and
# tests/unit/deploy/test_image.py runs it on this machine into a fresh virtualenv (no Docker
# engine there), so what the test proves is what the image gets.
#
#   deploy/image/install.sh SOURCE_DIR VENV_DIR
#
# SOURCE_DIR is the build context (.dockerignore applied); VENV_DIR is made with the
# interpreter on PATH (python3) and gets the project as a regular, non-editable install:
# the final stage copies VENV_DIR alone, without the sources. pip's options come from the
# environment; its cache is welcome (the Dockerfile mounts a BuildKit cache for it, which
# stays out of the image).
set -eu
if [ $# -ne 2 ]; then
    echo "usage: $0 SOURCE_DIR VENV_DIR" >&2
    exit 2
fi
src=$1
venv=$2
[ -f "$src/pyproject.toml" ] || { echo "$0: no pyproject.toml in SOURCE_DIR $src" >&2; exit 2; }
[ ! -e "$venv" ] || { echo "$0: VENV_DIR $venv exists; give a fresh path" >&2; exit 2; }

python3 -m venv "$venv"
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check --upgrade pip
# Every runtime dependency from the lock (deploy/image/lock.py makes it from pyproject.toml),
# each file checked against its hash; nothing is resolved here, so two builds of one commit
# install the same files.
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check --require-hashes \
    --no-deps -r "$src/deploy/image/requirements.lock"
# A wheel first, then the wheel, alone (--no-deps: its dependencies are the lock's): the
# venv holds no reference to SOURCE_DIR.
wheels=$(mktemp -d)
"$venv/bin/python" -m pip wheel --quiet --disable-pip-version-check --no-deps \
    --wheel-dir "$wheels" "$src"
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check --no-deps \
    "$wheels"/policy_indexer-*.whl
# The lock holds every dependency: pip says so if one is missing or conflicts.
"$venv/bin/python" -m pip check
rm -rf "$wheels"
# The console script is the image's one entrypoint: it must start.
"$venv/bin/policy-indexer" --version
