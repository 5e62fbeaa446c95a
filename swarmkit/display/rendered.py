"""The one shape of every static view: ``text()`` for terminals, ``html()`` for notebooks.

The run's tables, the history listing, the run diff and the magics' small tables all
render from their rows to both forms; this base gives each the same reprs and bundle.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any

__all__ = ["Bundle", "Rendered"]

# A display's MIME data and its output metadata.
Bundle = tuple[dict[str, str], dict[str, Any]]


class Rendered(ABC):
    """A view shown as text (terminals, nbval's text/plain) and as HTML (notebooks)."""

    @abstractmethod
    def text(self) -> str:
        """The plain-text form."""

    @abstractmethod
    def html(self) -> str:
        """The HTML form."""

    def mime_bundle(self) -> Bundle:
        """``(data, metadata)`` for ``IPython.display.display(data, metadata=..., raw=True)``."""
        return {"text/html": self.html(), "text/plain": self.text()}, {}

    def _repr_html_(self) -> str:
        return self.html()

    def __str__(self) -> str:
        return self.text()

    def __repr__(self) -> str:
        return self.text()
