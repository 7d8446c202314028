"""A pydantic error is put into words in ``foundation/validation.py``, and the packages use it.

The few places that still read ``exc.errors()`` themselves say something else: the
first error in a message of their own (a label rule; a front-matter key and a meta
tag go through ``first_error``), the
settings (the environment variable, secrets masked), or the value sent back to
the caller who sent it. A new place that formats errors again fails here.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from pydantic import BaseModel, Field, ValidationError
from support.import_boundaries import LAYER

from foundation.validation import field_errors, one_line

ROOT = Path(__file__).resolve().parents[3]
ELSEWHERE = {
    "sources/label_defaults.py": 1,  # the first error, in context
    "sources/cms.py": 1,  # the first three errors of a CMS answer, for the log
    "watcher/folder_sync.py": 1,  # the first error's message, as the skip reason
    "policy_indexer/cli.py": 1,  # settings: the variable's name, secrets masked
    "retrieval/eval.py": 1,  # with the value the caller sent
}


class Inner(BaseModel):
    name: str


class Outer(BaseModel):
    k: int = Field(ge=1)
    inner: Inner


def test_one_line_and_field_errors() -> None:
    with pytest.raises(ValidationError) as caught:
        Outer.model_validate({"k": 0, "inner": {}})
    assert one_line(caught.value) == ("k: Input should be greater than or equal to 1; "
                                      "inner.name: Field required")
    assert field_errors(caught.value)[1] == {"loc": ["inner", "name"], "msg": "Field required",
                                             "type": "missing"}
    with pytest.raises(ValidationError) as whole:
        Outer.model_validate([])
    assert one_line(whole.value, root="<root>").startswith("<root>: ")


def test_no_package_formats_validation_errors_again() -> None:
    found: dict[str, int] = {}
    for package in LAYER:
        for path in sorted((ROOT / package).rglob("*.py")):
            count = len(re.findall(r"\.errors\(", path.read_text(encoding="utf-8")))
            name = str(path.relative_to(ROOT))
            if count and name != "foundation/validation.py":
                found[name] = count
    assert found == ELSEWHERE
