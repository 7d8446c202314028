"""``foundation.validation.first_error``: the key and message the front matter, metadata
and ``<meta>`` errors name (bad inputs: a wrong type, a validator's own refusal, an
error of the whole object)."""

from __future__ import annotations

import pytest
from pydantic import BaseModel, ValidationError, field_validator, model_validator

from foundation.validation import first_error


class Meta(BaseModel):
    version: int = 0
    labels: list[str] = []

    @field_validator("labels")
    @classmethod
    def no_blank(cls, value: list[str]) -> list[str]:
        if any(not label.strip() for label in value):
            raise ValueError("a label is blank")
        return value

    @model_validator(mode="after")
    def not_both(self) -> Meta:
        if self.version < 0:
            raise ValueError("version is negative")
        return self


def error_of(data: dict[str, object]) -> ValidationError:
    with pytest.raises(ValidationError) as caught:
        Meta.model_validate(data)
    return caught.value


def test_a_bad_type_names_its_key() -> None:
    key, why = first_error(error_of({"version": "three"}))
    assert key == "version"
    assert "integer" in why


def test_a_validators_refusal_keeps_its_own_words() -> None:
    assert first_error(error_of({"labels": ["staff", " "]})) == ("labels", "a label is blank")


def test_an_error_of_the_whole_object_has_no_key() -> None:
    assert first_error(error_of({"version": -1})) == ("?", "version is negative")
