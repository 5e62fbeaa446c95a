"""A run's options on the ``jswarm run`` command line: its flags, and what they set.

The flags come from the option table (``swarmkit.config.options``), one per row on the
``cli`` surface; values stay text, so SwarmConfig coerces and checks them and a bad one
is a ConfigError naming the flag. Three kinds are read here, where an error can still
name what the user typed: ``--tools`` (imported), ``--schema-file`` (read and checked as
a JSON schema) and ``--price`` (checked as prices).
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import re
import sys
from pathlib import Path
from typing import Any

from ..config import options as option_table
from ..config.outputschema import canonical_schema
from ..config.wording import kind_of
from ..engine.prices import PriceTable
from ..errors import ConfigError
from ..tools import Tool

__all__ = ["PRICE_FLAG", "SCHEMA_FILE_FLAG", "add_run_options", "import_tools",
           "read_prices", "read_schema_file", "run_options", "typed_flags"]

PRICE_FLAG = next(row.flag_name for row in option_table.OPTIONS if row.kind == "prices")
PRICE_HELP = ("a model's price in USD per 1M tokens, input and output (repeatable); a "
              "budget needs one for a model the price table does not know")
SCHEMA_FILE_FLAG = "--schema-file"
SCHEMA_FILE_HELP = "a JSON schema file each worker's reply must match (typed outputs)"
TOOLS_HELP = "tools for the workers: MODULE:NAME of @swarmkit.tool functions, comma-separated"


def _plain(help_text: str) -> str:
    """Help text as a terminal shows it: no reST markup, ``%`` escaped for argparse."""
    text = re.sub(r":[a-z]+:`([^`]*)`", r"\1", help_text)
    return re.sub(r"``([^`]*)``", r"\1", text).replace("%", "%%")


def add_run_options(run: argparse.ArgumentParser) -> None:
    """Every option of a run as a flag of ``run`` (the ``jswarm run`` parser)."""
    for row in option_table.OPTIONS:
        if not row.on("cli"):
            continue
        if row.kind == "bool":
            run.add_argument(row.flag_name, dest=row.name, default=None,
                             action=argparse.BooleanOptionalAction, help=_plain(row.help))
        elif row.kind == "tools":
            run.add_argument(row.flag_name, dest=row.name, metavar="MODULE:NAME,...",
                             help=TOOLS_HELP)
        elif row.kind == "schema":
            run.add_argument(SCHEMA_FILE_FLAG, dest=row.name, metavar="PATH",
                             help=SCHEMA_FILE_HELP)
        elif row.kind == "prices":
            run.add_argument(PRICE_FLAG, dest=row.name, nargs=3, action="append",
                             metavar=("MODEL", "IN", "OUT"), help=PRICE_HELP)
        else:
            for flag, name, help_text in row.flags("cli"):
                run.add_argument(flag, dest=name, metavar=row.metavar, help=_plain(help_text))


def typed_flags(args: argparse.Namespace) -> dict[str, str]:
    """Each option name the run's flags set (public and field name) -> the flag typed."""
    flags: dict[str, str] = {}
    for row in option_table.OPTIONS:
        for flag, name, _ in row.flags("cli"):
            if getattr(args, name, None) is not None:
                flags.setdefault(name, flag)
                flags.setdefault(row.attr if name == row.name else name, flag)
    return flags


def run_options(args: argparse.Namespace) -> dict[str, Any]:
    """The options the command line set, by public name; ``tools`` imported."""
    names = [name for row in option_table.OPTIONS if row.on("cli")
             for name in (row.names() if "cli" in row.role_flags else (row.name,))]
    options = {name: getattr(args, name) for name in names if getattr(args, name) is not None}
    if "tools" in options:
        options["tools"] = import_tools(options["tools"])
    if "output_type" in options:
        options["output_type"] = read_schema_file(options["output_type"])
    if "prices" in options:
        options["prices"] = read_prices(options["prices"])
    return options


def read_schema_file(path: str) -> str:
    """The text of ``--schema-file PATH``, checked to be a JSON schema here, where an
    error can name the file."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{SCHEMA_FILE_FLAG} {path}: cannot read it ({exc})") from None
    try:
        json.loads(text)
    except ValueError as exc:
        raise ConfigError(f"{SCHEMA_FILE_FLAG} {path} is not JSON ({exc}); give a JSON "
                          "schema file") from None
    canonical_schema(text, f"{SCHEMA_FILE_FLAG} {path}")
    return text


def read_prices(rows: list[list[str]]) -> list[tuple[str, ...]]:
    """``--price MODEL IN OUT`` rows, checked (USD per 1M tokens)."""
    prices = [tuple(row) for row in rows]
    try:
        PriceTable.with_overrides(prices)
    except ConfigError as exc:
        raise ConfigError(f"{PRICE_FLAG}: {exc}") from None
    return prices


def import_tools(specs: str) -> list[Any]:
    """``"mod:lookup,mod:search"`` -> the tools those names hold; a ConfigError for a
    spec that is not ``MODULE:NAME``, cannot be imported, or is not a tool."""
    if "" not in sys.path and os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())  # like `python -m`: the current directory's modules
    chosen: list[Any] = []
    for spec in [part.strip() for part in specs.split(",") if part.strip()] or [""]:
        module_name, colon, name = spec.partition(":")
        if not colon or not module_name or not name:
            raise ConfigError(f"--tools takes MODULE:NAME, got {spec!r}")
        try:
            found = getattr(importlib.import_module(module_name), name)
        except (ImportError, AttributeError) as exc:
            raise ConfigError(f"--tools {spec}: {exc}") from None
        found = list(found) if isinstance(found, list | tuple) else [found]
        for tool in found:
            if not isinstance(tool, Tool):
                raise ConfigError(f"--tools {spec}: is {kind_of(tool)}, not a tool; "
                                  "decorate the function with @swarmkit.tool")
        chosen += found
    return chosen
