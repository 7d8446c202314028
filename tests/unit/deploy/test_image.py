"""The container image: the Dockerfile passes hadolint and keeps the rules an SRE checks
(pinned base, two stages, non-root, one entrypoint), and its install steps, run here as the
build stage runs them, give a working ``policy-indexer``.

No Docker engine exists on the CI machine, so the second test is the image's build stage
without the container: the build context that ``.dockerignore`` leaves, copied to a
temporary folder, and ``deploy/image/install.sh`` into a fresh virtualenv. It then runs the
embedded pipeline from that virtualenv on the sample library until every document is
indexed, as ``docker run IMAGE run`` with a volume would.
"""

from __future__ import annotations

import fnmatch
import json
import os
import re
import shutil
import signal
import subprocess
import urllib.request
from pathlib import Path

import pytest
from support.deploy_tools import tool
from support.monitoring import free_port
from support.waiting import wait_until

REPO_ROOT = Path(__file__).resolve().parents[3]
DOCKERFILE = REPO_ROOT / "Dockerfile"


def test_hadolint_accepts_the_dockerfile() -> None:
    result = subprocess.run([str(tool("hadolint")), "--failure-threshold", "info",
                             str(DOCKERFILE)], capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_dockerfile_keeps_the_rules_of_a_production_image() -> None:
    text = DOCKERFILE.read_text(encoding="utf-8")
    bases = re.findall(r"^FROM\s+(\S+)", text, flags=re.MULTILINE)
    assert len(bases) == 2, "a build stage and a final stage"
    for base in bases:
        # an exact patch release and Debian suite (or a digest), never a moving tag
        assert re.fullmatch(r"python:3\.\d+\.\d+-slim-[a-z]+(@sha256:[0-9a-f]{64})?", base), base
    final = text[text.rindex("\nFROM "):]
    assert re.search(r"^USER 10001:10001$", final, flags=re.MULTILINE), "non-root"
    assert 'ENTRYPOINT ["policy-indexer"]' in final
    assert "COPY --from=build /opt/policy-indexer /opt/policy-indexer" in final
    for build_tool in ("gcc", "build-essential", "pip install"):
        assert build_tool not in final, f"{build_tool} in the final stage"
    # the lock's hashes decide what is installed, pip's cache lives in a BuildKit mount
    assert re.search(r"^RUN --mount=type=cache,target=/root/\.cache/pip \\\n\s+"
                     r"sh deploy/image/install\.sh /src /opt/policy-indexer$", text,
                     flags=re.MULTILINE), "the install step with the pip cache mount"
    assert "PIP_NO_CACHE_DIR" not in text, "the cache mount is the cache"
    assert text.startswith("# syntax=docker/dockerfile:1\n")


def docker_context(root: Path) -> list[str]:
    """The files `docker build` would send: the repository's files less .dockerignore's
    patterns (later patterns win, `!` re-includes; a pattern matches a path or a parent)."""
    rules = []
    for raw in (root / ".dockerignore").read_text(encoding="utf-8").splitlines():
        line = raw.strip()
        if line and not line.startswith("#"):
            rules.append((line.startswith("!"), line.lstrip("!").rstrip("/").removeprefix("**/")))
    listed = subprocess.run(["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=root,
                            capture_output=True, text=True, check=True).stdout.split("\0")
    kept = []
    for path in filter(None, listed):
        parts = path.split("/")
        prefixes = ["/".join(parts[:i]) for i in range(1, len(parts) + 1)]
        ignored = False
        for negated, pattern in rules:
            # "**/x" and a bare name match at any depth; a path pattern from the root
            if any(fnmatch.fnmatchcase(p, pattern)
                   or ("/" not in pattern and fnmatch.fnmatchcase(p.split("/")[-1], pattern))
                   for p in prefixes):
                ignored = not negated
        if not ignored and (root / path).is_file():
            kept.append(path)
    return kept


def test_the_build_context_leaves_out_secrets_tests_and_local_state() -> None:
    context = docker_context(REPO_ROOT)
    assert "pyproject.toml" in context and "README.md" in context
    assert "deploy/image/install.sh" in context
    assert any(p.startswith("policy_indexer/") for p in context)
    for path in context:
        assert not path.startswith((".venv/", ".local/", "tests/", ".git/", "deploy/helm/")), path
        assert not path.endswith(".env"), path


@pytest.mark.slow
def test_the_image_install_steps_give_a_working_policy_indexer(tmp_path: Path) -> None:
    context = tmp_path / "src"
    for path in docker_context(REPO_ROOT):
        (context / path).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(REPO_ROOT / path, context / path)
    venv = tmp_path / "opt" / "policy-indexer"
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH")}
    env["PATH"] = os.pathsep.join(p for p in env["PATH"].split(os.pathsep)
                                  if not p.startswith(str(REPO_ROOT)))
    install = subprocess.run(["sh", str(context / "deploy/image/install.sh"), str(context),
                              str(venv)], env=env, capture_output=True, text=True,
                             timeout=900, check=False)
    assert install.returncode == 0, install.stdout + install.stderr
    assert "policy-indexer, version" in install.stdout
    cli = venv / "bin" / "policy-indexer"
    # the install is a copy, not a link back to the sources
    shutil.rmtree(context)
    found = subprocess.run([str(venv / "bin" / "python"), "-c",
                            "import policy_indexer, store; print(policy_indexer.__file__)"],
                           capture_output=True, text=True, check=True, env=env,
                           cwd=tmp_path).stdout
    assert found.startswith(str(venv)), found

    # `docker run -v data:/var/lib/policy-indexer IMAGE run`, the image's ENV as settings
    library = tmp_path / "library"
    shutil.copytree(REPO_ROOT / "examples" / "library", library)
    port = free_port()
    run_env = {**env, "POLICY_INDEXER_SOURCE_KIND": "folder",
               "POLICY_INDEXER_SOURCE_PATH": str(library),
               "POLICY_INDEXER_EMBEDDED_DIR": str(tmp_path / "data"),
               "POLICY_INDEXER_METRICS_PORT": str(port),
               "POLICY_INDEXER_SEARCH_ENCODER": "hashing",
               "POLICY_INDEXER_LOG_FORMAT": "json"}
    log = (tmp_path / "run.log").open("wb")
    proc = subprocess.Popen([str(cli), "run"], env=run_env, cwd=tmp_path, stdout=log,
                            stderr=subprocess.STDOUT)
    try:
        def indexed() -> float | None:
            if proc.poll() is not None:
                raise AssertionError(f"run exited {proc.returncode}: "
                                     f"{(tmp_path / 'run.log').read_text()[-3000:]}")
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics",
                                            timeout=2) as resp:
                    text = resp.read().decode()
            except OSError:
                return None
            match = re.search(r'^policy_indexer_events_total\{outcome="indexed"\} (\S+)$',
                              text, flags=re.MULTILINE)
            return float(match.group(1)) if match and float(match.group(1)) >= 8 else None

        wait_until(indexed, 120, "the installed policy-indexer to index the sample library",
                   every_s=0.5)
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=5) as resp:
            assert json.loads(resp.read())["status"] == "ok"
    finally:
        proc.send_signal(signal.SIGTERM)
        code = proc.wait(timeout=60)
        log.close()
    assert code == 0, (tmp_path / "run.log").read_text()[-3000:]
