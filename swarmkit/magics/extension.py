"""``%load_ext swarmkit``: the magics declared now, imported when first used.

A user loads the extension in many notebooks and runs a swarm in few, so loading it
imports nothing of the run (the engine, the store, openai, ipywidgets): it declares
``%%swarm`` / ``%swarm`` through IPython's own lazy magics (``register_lazy``), and
IPython loads ``magics.core`` as an extension the first time either is used; its
``load_ipython_extension`` registers ``SwarmMagics``, the one session.

``swarm_magics`` is how code outside a magic call (``swarm_config``, tests) reaches that
session: it loads the declared magics first if no cell has used them yet.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    from IPython.core.interactiveshell import InteractiveShell
    from IPython.core.magic import Magics

__all__ = ["MAGICS_MODULE", "MAGIC_NAME", "load_ipython_extension", "swarm_magics"]

MAGIC_NAME: Final = "swarm"
# Loaded as an IPython extension on first use: registers SwarmMagics.
MAGICS_MODULE: Final = "swarmkit.magics.core"
_REGISTRY_NAME: Final = "SwarmMagics"


def load_ipython_extension(ipython: InteractiveShell) -> None:
    """Declare ``%%swarm`` and ``%swarm`` (IPython imports them on first use)."""
    if _REGISTRY_NAME not in ipython.magics_manager.registry:
        ipython.magics_manager.register_lazy(MAGIC_NAME, MAGICS_MODULE)


def swarm_magics(shell: InteractiveShell) -> Magics | None:
    """The session's ``SwarmMagics``, loading it if ``%load_ext swarmkit`` declared it
    and no cell has used it yet; None if the extension was never loaded."""
    manager = shell.magics_manager
    if _REGISTRY_NAME not in manager.registry and \
            manager.lazy_magics.get(MAGIC_NAME) == MAGICS_MODULE:
        shell.extension_manager.load_extension(MAGICS_MODULE)
    return manager.registry.get(_REGISTRY_NAME)
