"""``python -m swarmkit`` is the ``jswarm`` command."""

from __future__ import annotations

import sys

from .cli.launch import main

__all__: list[str] = []

sys.exit(main())
