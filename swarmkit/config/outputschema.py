"""Typed worker outputs: the JSON schema a worker's reply must match, and its check.

``output_type`` (``%%swarm --schema NAME``) is a pydantic model class, a JSON schema
dict, or that schema's JSON text. It is kept in the config as canonical JSON text (so a
config stays frozen, hashable and JSON-able, and a replay or an exported notebook, which
has no namespace, validates the same way); a model class is turned into its JSON schema.
Every reply is checked with ``jsonschema`` against that schema, whatever it came from.
"""

from __future__ import annotations

import json
import re
from functools import cache
from typing import Any

from ..errors import ConfigError

__all__ = [
    "SchemaMismatch",
    "canonical_schema",
    "check_reply",
    "json_candidates",
    "schema_fields",
]

_FENCE = re.compile(r"```(?:json|JSON)?\s*(.*?)```", re.DOTALL)
_ERROR_CHARS = 200


class SchemaMismatch(ValueError):
    """A reply that is not JSON matching the schema; the message is one line."""


def canonical_schema(value: Any, option: str = "output_type") -> str:
    """``value`` (pydantic model class, schema dict or its JSON text) as canonical JSON
    text of a valid JSON schema. Raises a one-line ConfigError naming ``option``."""
    schema: Any = value
    model_json_schema = getattr(value, "model_json_schema", None)
    if isinstance(value, type) and callable(model_json_schema):
        schema = model_json_schema()
    elif isinstance(value, str):
        try:
            schema = json.loads(value)
        except ValueError as exc:
            raise ConfigError(f"{option} must be a pydantic model class or a JSON schema; "
                              f"its text is not JSON ({exc})") from None
    if not isinstance(schema, dict):
        raise ConfigError(f"{option} must be a pydantic model class or a JSON schema dict, "
                          f"got {type(value).__name__}")
    import jsonschema  # a core dependency, loaded only by runs that use a schema

    try:
        jsonschema.validators.validator_for(schema).check_schema(schema)
    except jsonschema.SchemaError as exc:
        raise ConfigError(f"{option} is not a valid JSON schema: "
                          f"{_one_line(exc.message)}") from None
    try:
        return json.dumps(schema, sort_keys=True, separators=(",", ":"), allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"{option} is not JSON-serialisable: {exc}") from None


@cache
def _validator(schema_text: str) -> Any:
    import jsonschema

    schema = json.loads(schema_text)
    return jsonschema.validators.validator_for(schema)(schema)


def schema_fields(schema_text: str | None) -> tuple[str, ...]:
    """The schema's top-level property names, in its order (none if not an object)."""
    if not schema_text:
        return ()
    properties = json.loads(schema_text).get("properties")
    return tuple(properties) if isinstance(properties, dict) else ()


def _one_line(text: str) -> str:
    line = " ".join(text.split())
    return line if len(line) <= _ERROR_CHARS else line[: _ERROR_CHARS - 1] + "…"


def json_candidates(raw: str) -> list[str]:
    """Where a model's reply may hold a JSON object, most likely first: each fenced
    block, the whole reply, then what lies between its first ``{`` and last ``}``."""
    candidates = [m.group(1) for m in _FENCE.finditer(raw)]
    candidates.append(raw)
    start, end = raw.find("{"), raw.rfind("}")
    if 0 <= start < end:
        candidates.append(raw[start : end + 1])
    return candidates


def _parse(raw: str) -> Any:
    for candidate in json_candidates(raw):
        try:
            return json.loads(candidate)
        except ValueError:
            continue
    preview = _one_line(raw)[:80]
    raise SchemaMismatch(f"the reply is not JSON (got {preview!r})" if preview
                         else "the reply is empty, not JSON")


def check_reply(schema_text: str, raw: str | None) -> Any:
    """The parsed reply if it matches the schema; SchemaMismatch (one line) if not."""
    value = _parse(raw or "")
    from jsonschema.exceptions import best_match

    error = best_match(_validator(schema_text).iter_errors(value))
    if error is not None:
        where = "/".join(str(p) for p in error.absolute_path)
        raise SchemaMismatch(_one_line(f"{where}: {error.message}" if where else error.message))
    return value
