"""A GGUF from the Hugging Face Hub: ``local:hf:OWNER/REPO/FILE.gguf``, downloaded once.

The file goes into the Hub's own cache (``HF_HUB_CACHE``, by default
``~/.cache/huggingface/hub``), shared with every other tool that uses it, through
``huggingface_hub`` (the ``local`` extra) and its progress bar (``tqdm.auto``: a widget in
a notebook, a line in a terminal). A file already in the cache is used without asking
the Hub anything (``local_files_only`` first), so a second run needs no network.
``HF_ENDPOINT`` (a mirror, or a test's loopback server) and ``HF_HUB_CACHE`` are read
when the file is asked for, not when swarmkit is imported. A missing file, an
unreachable Hub and a missing ``huggingface_hub`` are each one line naming the file.
"""

from __future__ import annotations

import os
from pathlib import Path

from ..errors import LocalModelError

__all__ = ["HUB_PREFIX", "hub_file", "split_hub_name"]

HUB_PREFIX = "hf:"
_INSTALL = 'pip install "jupyter-swarmkit[local]" (or pip install huggingface_hub)'


def split_hub_name(name: str) -> tuple[str, str]:
    """``OWNER/REPO/FILE.gguf`` (after ``hf:``) as (repo id, file path in the repo)."""
    parts = [part for part in name.split("/") if part]
    if len(parts) < 3 or not parts[-1].endswith(".gguf"):
        raise LocalModelError(
            f"local:hf:{name}: name a GGUF file on the Hub as local:hf:OWNER/REPO/FILE.gguf "
            "(e.g. local:hf:Qwen/Qwen2.5-0.5B-Instruct-GGUF/qwen2.5-0.5b-instruct-q4_k_m.gguf)"
        )
    return "/".join(parts[:2]), "/".join(parts[2:])


def hub_file(name: str) -> Path:
    """The path of the Hub file ``OWNER/REPO/FILE.gguf`` in the Hub's cache, downloaded
    first if it is not there. Raises LocalModelError, one line naming the file."""
    repo, filename = split_hub_name(name)
    where = f"local:hf:{name}"
    try:
        import huggingface_hub
        from huggingface_hub.errors import (
            EntryNotFoundError,
            HfHubHTTPError,
            LocalEntryNotFoundError,
            RepositoryNotFoundError,
            RevisionNotFoundError,
        )
    except ImportError:
        raise LocalModelError(f"{where} needs huggingface_hub: {_INSTALL}") from None
    endpoint = os.environ.get("HF_ENDPOINT") or None
    cache = os.environ.get("HF_HUB_CACHE") or None
    try:
        return Path(huggingface_hub.hf_hub_download(repo, filename, cache_dir=cache,
                                                    endpoint=endpoint, local_files_only=True))
    except LocalEntryNotFoundError:
        pass  # not in the cache yet: download it below
    hub = endpoint or "https://huggingface.co"
    try:
        return Path(huggingface_hub.hf_hub_download(repo, filename, cache_dir=cache,
                                                    endpoint=endpoint))
    except (RepositoryNotFoundError, RevisionNotFoundError):
        raise LocalModelError(f"{where}: the Hub ({hub}) has no repository {repo} that "
                              "this machine may read (a private or gated one needs "
                              "HF_TOKEN)") from None
    except (EntryNotFoundError, LocalEntryNotFoundError) as exc:
        if isinstance(exc, LocalEntryNotFoundError):  # the Hub did not answer
            raise LocalModelError(f"{where}: cannot reach the Hub at {hub} to download it, "
                                  "and it is not in the Hub's cache yet") from None
        raise LocalModelError(f"{where}: the Hub repository {repo} has no file "
                              f"{filename}") from None
    except (HfHubHTTPError, OSError) as exc:
        reason = " ".join(str(exc).split())[:160]
        raise LocalModelError(f"{where}: the download from {hub} failed ({reason})") from None
