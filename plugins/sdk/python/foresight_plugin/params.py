"""Parameters: JSON merged over a plugin's defaults (mirrors plugins/sdk/params.go).

A plugin declares its defaults as a dict (``parameters = {"weight": 1.0, ...}``). The host sends a
JSON object; :func:`decode_params` merges it over the defaults with the Go SDK's rules: empty
parameters or ``null`` give the defaults, an unknown name, a value of the wrong JSON type, a
non-object or trailing data is an error, and a ``null`` value keeps that parameter's default. The
type a parameter takes is its default's: bool, int (an integral number), float (any number), str,
dict (an object), list (an array); a default of None accepts any JSON value. Range checks are the
plugin's (its ``configure``), with :func:`check_range` and friends for the Go SDK's messages.
"""

from __future__ import annotations

import copy
import json
import math
import os
from typing import Any, Mapping

__all__ = ["decode_params", "check_range", "check_range_open_low", "check_one_of",
           "resolve_path", "CONFIG_DIR_ENV"]

_decoder = json.JSONDecoder(parse_constant=lambda c: _raise(f"{c} is not JSON"))


def _raise(msg: str):
    raise ValueError(msg)


def _json_kind(v: Any) -> str:
    """The JSON type of a decoded value, worded like Go's encoding/json errors."""
    if isinstance(v, bool):
        return "bool"
    if isinstance(v, (int, float)):
        return f"number {json.dumps(v)}"
    if isinstance(v, str):
        return "string"
    if isinstance(v, list):
        return "array"
    if isinstance(v, dict):
        return "object"
    return "null"


def _coerce(name: str, value: Any, default: Any) -> Any:
    """value, checked against (and converted to) the type of default."""
    def wrong(want: str):
        return ValueError(f'decoding parameters: parameter "{name}": got JSON {_json_kind(value)}, want {want}')
    if default is None:
        return value
    if isinstance(default, bool):
        if not isinstance(value, bool):
            raise wrong("bool")
        return value
    if isinstance(default, int):
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise wrong("int")
        if isinstance(value, float):
            if not value.is_integer():
                raise wrong("int")
            value = int(value)
        return value
    if isinstance(default, float):
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise wrong("float64")
        return float(value)
    if isinstance(default, str):
        if not isinstance(value, str):
            raise wrong("string")
        return value
    if isinstance(default, dict):
        if not isinstance(value, dict):
            raise wrong("object")
        return value
    if isinstance(default, list):
        if not isinstance(value, list):
            raise wrong("array")
        return value
    return value


def decode_params(params: bytes | str | None, defaults: Mapping[str, Any]) -> dict:
    """Merges params, a JSON object, over a copy of defaults and returns the result.

    Raises ValueError naming the problem (the host's Configure then fails with INVALID_ARGUMENT
    and the parameters in force stay). Names match exactly, or else case-insensitively, as Go's
    encoding/json matches them.
    """
    out = copy.deepcopy(dict(defaults))
    if isinstance(params, (bytes, bytearray)):
        params = params.decode("utf-8")
    text = (params or "").strip()
    if text == "" or text == "null":
        return out
    try:
        obj, end = _decoder.raw_decode(text)
    except json.JSONDecodeError as e:
        raise ValueError(f"decoding parameters: {e.msg} (at offset {e.pos})") from None
    except ValueError as e:  # NaN or Infinity, which JSON does not have
        raise ValueError(f"decoding parameters: {e}") from None
    if text[end:].strip():
        raise ValueError("decoding parameters: trailing data after the JSON object")
    if obj is None:
        return out
    if not isinstance(obj, dict):
        raise ValueError(f"decoding parameters: want a JSON object, got {_json_kind(obj)}")
    folded = {k.lower(): k for k in out}
    for key, value in obj.items():
        name = key if key in out else folded.get(key.lower())
        if name is None:
            raise ValueError(f'decoding parameters: json: unknown field "{key}"')
        if value is None:  # like encoding/json: null leaves the field as it is
            continue
        out[name] = _coerce(name, value, out[name])
    return out


def _g(v) -> str:
    """v as Go's %g formats it."""
    if not isinstance(v, (int, float)):
        return repr(v)
    if math.isnan(v):
        return "NaN"
    if math.isinf(v):
        return "+Inf" if v > 0 else "-Inf"
    return "%g" % v


def check_range(name: str, v: float, lo: float, hi: float) -> None:
    """Raises ValueError unless lo <= v <= hi (and v is a number), naming the parameter."""
    if not isinstance(v, (int, float)) or math.isnan(v) or v < lo or v > hi:
        raise ValueError(f'parameter "{name}" must be in [{_g(lo)}, {_g(hi)}], got {_g(v)}')


def check_range_open_low(name: str, v: float, lo: float, hi: float) -> None:
    """Raises ValueError unless lo < v <= hi, naming the parameter."""
    if not isinstance(v, (int, float)) or math.isnan(v) or v <= lo or v > hi:
        raise ValueError(f'parameter "{name}" must be in ({_g(lo)}, {_g(hi)}], got {_g(v)}')


def check_one_of(name: str, v: str, *allowed: str) -> None:
    """Raises ValueError unless v is one of allowed, naming the parameter."""
    if v not in allowed:
        quoted = " ".join(json.dumps(a) for a in allowed)
        raise ValueError(f'parameter "{name}" must be one of [{quoted}], got {json.dumps(v)}')


#: The environment variable in which the host tells a plugin the directory of its config file.
CONFIG_DIR_ENV = "FORESIGHT_CONFIG_DIR"


def resolve_path(p: str) -> str:
    """A path parameter as the plugin should use it: "" and absolute paths as they are, relative
    ones against the config file's directory (as the host resolves plugin paths)."""
    d = os.environ.get(CONFIG_DIR_ENV, "")
    if p == "" or d == "" or os.path.isabs(p):
        return p
    return os.path.join(d, p)
