"""A kubeconform JSON schema from a CustomResourceDefinition, as the schemas here are made.

    python deploy/helm/crd-schemas/from_crd.py CRD.yaml OUT_DIR

Writes ``OUT_DIR/<kind>_<version>.json`` (kind lowercased) for each served version:
the version's ``openAPIV3Schema``, with ``additionalProperties: false`` on every
object below the root that lists its properties (what ``kubeconform -strict`` and
kubectl's validation expect; the root keeps ``status`` and the rest open) and
``x-kubernetes-int-or-string`` written as a JSON-schema choice of string or integer.
This is the conversion of kubeconform's ``openapi2jsonschema.py`` and of the
datreeio/CRDs-catalog files beside it, redone here so a schema comes straight from
the CRD a project publishes (README.md names each source).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import yaml


def strict(node: Any, *, root: bool = False) -> Any:
    if isinstance(node, dict):
        out = {key: strict(value) for key, value in node.items()}
        if out.pop("x-kubernetes-int-or-string", False):
            out.pop("type", None)
            out["oneOf"] = [{"type": "string"}, {"type": "integer"}]
        if "properties" in out and not root:
            out.setdefault("additionalProperties", False)
        return out
    if isinstance(node, list):
        return [strict(item) for item in node]
    return node


def main(crd_path: str, out_dir: str) -> None:
    crd = yaml.safe_load(Path(crd_path).read_text(encoding="utf-8"))
    kind = crd["spec"]["names"]["kind"].lower()
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    for version in crd["spec"]["versions"]:
        if not version.get("served", True):
            continue
        schema = strict(version["schema"]["openAPIV3Schema"], root=True)
        target = out / f"{kind}_{version['name']}.json"
        target.write_text(json.dumps(schema, indent=2, sort_keys=True) + "\n", encoding="utf-8")
        print(target)


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2])
