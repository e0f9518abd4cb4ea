"""Handing a CrewAI checkpoint to the user's CrewAI, with endpoints from the user's environment.

CrewAI rebuilds every LLM of a checkpoint from the fields saved in it, ``base_url`` and ``api_base`` included, and
imports the tools, callbacks and classes a checkpoint names; resuming a crafted checkpoint as it is would send the
user's key to the checkpoint's server, or run the checkpoint's choice of code. crewpoint hands CrewAI a copy
instead, written in a private temporary store (folder 0700, file 0600) that is removed when the run ends, rebuilt
by the allow-list of :mod:`crewpoint.formats.crewai.allowlist`:

- every mapping CrewAI would build an LLM from keeps only the model and its sampling settings; its base URL, API
  base, key, headers, query, client parameters, timeouts and retries are left out, so CrewAI takes them from the
  user's environment (``OPENAI_BASE_URL``, ``OPENAI_API_KEY``, …) or its own defaults;
- every embedder keeps only its provider and model;
- tools, callbacks, classes, hooks, files, servers a checkpoint names are left out, and said;
- every checkpoint setting names the store the checkpoint came from, so CrewAI writes its new checkpoints there
  (CrewAI writes where the restored entity's setting says), and asks for no pruning.

With ``CREWPOINT_DESERIALIZE_CALLBACKS=1`` the checkpoint is trusted and the copy is the checkpoint as saved.
Before the run, :attr:`Handoff.endpoints` says which endpoint each model will be asked at, and
:attr:`Handoff.left_out` what the copy left out.
"""

from __future__ import annotations

import contextlib
import copy
import json
import os
import shutil
import tempfile
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from crewpoint.formats.crewai.rebuild import models_of, rebuild
from crewpoint.providers.crewai.common import mask_text
from crewpoint.providers.crewai.json_store import read_dump as read_file
from crewpoint.providers.crewai.sqlite_store import read_dump as read_row
from crewpoint.providers.refs import split_ref

TRUST_ENV = "CREWPOINT_DESERIALIZE_CALLBACKS"

# Where each provider's client looks in the environment for its endpoint, and where it goes without one.
_PROVIDER_ENDPOINTS: dict[str, tuple[tuple[str, ...], str]] = {
    "openai": (("OPENAI_BASE_URL", "OPENAI_API_BASE"), "https://api.openai.com/v1"),
    "anthropic": (("ANTHROPIC_BASE_URL",), "https://api.anthropic.com"),
    "gemini": (("GEMINI_API_BASE",), "https://generativelanguage.googleapis.com"),
    "ollama": (("OLLAMA_HOST", "OLLAMA_API_BASE"), "http://localhost:11434"),
    "azure": (("AZURE_API_BASE", "AZURE_OPENAI_ENDPOINT"), "(the Azure endpoint in your environment)"),
}


def trusted(environ: Mapping[str, str] | None = None) -> bool:
    """Does the user trust checkpoints (``CREWPOINT_DESERIALIZE_CALLBACKS=1``)?"""
    return (os.environ if environ is None else environ).get(TRUST_ENV) == "1"


def _provider(llm: Any) -> str:
    if isinstance(llm, str):
        llm = {"model": llm}
    provider = llm.get("provider") or llm.get("llm_type") or ""
    model = str(next((llm[k] for k in ("model", "model_name", "deployment_name") if llm.get(k)), ""))
    if (not provider or provider == "litellm") and "/" in model:
        provider = model.split("/", 1)[0]
    return str(provider or "openai").lower()


def _model(llm: Any) -> str:
    if isinstance(llm, str):
        return llm
    return str(next((llm[k] for k in ("model", "model_name", "deployment_name") if llm.get(k)), ""))


def _endpoint(llm: Any, environ: Mapping[str, str], saved: bool) -> str:
    """Where CrewAI will send this LLM's requests: the saved URL for a trusted copy, else the environment's."""
    if saved and isinstance(llm, Mapping):
        for name in ("base_url", "api_base", "endpoint"):
            value = llm.get(name)
            if isinstance(value, str) and value:
                return value
    names, default = _PROVIDER_ENDPOINTS.get(_provider(llm), ((), ""))
    for name in names:
        value = environ.get(name, "").strip()
        if value:
            return f"{value} (from {name})"
    return f"{default} (the provider's default)" if default else "(the provider's endpoint from your environment)"


def rebuilt_copy(
    dump: Mapping[str, Any], store: str, kind: str, *, trust: bool = False
) -> tuple[dict[str, Any], list[str]]:
    """The copy of the CrewAI checkpoint ``dump`` for CrewAI to resume (see the module's docstring), and what it
    left out (paths in the checkpoint).

    ``store`` is the store the checkpoint came from and ``kind`` its CrewAI provider type (``json`` or
    ``sqlite``): new checkpoints go there. Trusted, the copy is the dump as saved.
    """
    if trust:
        return copy.deepcopy(dict(dump)), []
    built = rebuild(dump, store, kind)
    return built.dump, built.left_out


def endpoints(dump: Mapping[str, Any], environ: Mapping[str, str] | None = None, *, trust: bool = False) -> list[str]:
    """One line per model and endpoint the run of ``dump`` (as handed to CrewAI) will contact, without repeats:
    every model named where CrewAI builds an LLM."""
    env = os.environ if environ is None else environ
    lines: list[str] = []
    for llm in models_of(dump):
        line = f"{_model(llm)} ({_provider(llm)}) at {_endpoint(llm, env, trust)}"
        if line not in lines:
            lines.append(line)
    return lines


LEFT_OUT_SHOWN = 6
"""How many left-out places the line before a run names; the rest are counted."""


def left_out_line(left_out: list[str]) -> str | None:
    """One line saying what the copy handed to CrewAI left out, and how to keep it; None when nothing was."""
    if not left_out:
        return None
    shown = mask_text(", ".join(left_out[:LEFT_OUT_SHOWN]))  # a field's name is the checkpoint's: never a key
    more = f" and {len(left_out) - LEFT_OUT_SHOWN} more" if len(left_out) > LEFT_OUT_SHOWN else ""
    return (
        f"left out of the copy CrewAI resumes (code, files or servers the checkpoint names): {shown}{more}; "
        f"if you trust this checkpoint, {TRUST_ENV}=1 keeps them"
    )


@dataclass
class Handoff:
    """A checkpoint ready for CrewAI: the copy's file, the endpoints the run will contact, what was left out."""

    ref: str
    endpoints: list[str] = field(default_factory=list)
    trusted: bool = False
    left_out: list[str] = field(default_factory=list)

    def describe(self) -> str:
        """One line saying where the run's model requests go."""
        where = "; ".join(self.endpoints) if self.endpoints else "no model named in the checkpoint"
        source = "as saved in the trusted checkpoint" if self.trusted else "from your environment"
        return f"CrewAI will contact (endpoints {source}): {where}"


def read_raw(location: str) -> dict[str, Any]:
    """The CrewAI checkpoint at ``location`` (a JSON file or ``db#id``) as saved, keys included."""
    path, checkpoint_id = split_ref(location)
    if checkpoint_id is not None:
        return read_row(path, checkpoint_id, masked=False)

    return read_file(path, masked=False)


def copy_name(location: str, dump: Mapping[str, Any]) -> str:
    """The file name CrewAI gives the checkpoint: the JSON file's own, or one made from the row's id."""
    path, checkpoint_id = split_ref(location)
    if checkpoint_id is None:
        return os.path.basename(path)
    parent = dump.get("parent_id")
    return f"{checkpoint_id}_p-{parent if isinstance(parent, str) and parent else 'none'}.json"


@contextlib.contextmanager
def handoff(location: str, store: str, *, environ: Mapping[str, str] | None = None) -> Iterator[Handoff]:
    """Write the rebuilt copy of the CrewAI checkpoint at ``location`` (in ``store``) to a private
    temporary store laid out as CrewAI's (``<tmp>/<branch>/<file>.json``), and remove it when the block ends."""
    env = os.environ if environ is None else environ
    trust = trusted(env)
    dump = read_raw(location)
    kind = "sqlite" if split_ref(location)[1] is not None else "json"
    safe, left_out = rebuilt_copy(dump, os.path.abspath(split_ref(store)[0]), kind, trust=trust)
    branch = dump.get("branch") if isinstance(dump.get("branch"), str) and dump.get("branch") else "main"
    folder = tempfile.mkdtemp(prefix="crewpoint-crewai-")
    try:
        target = os.path.join(folder, *str(branch).split("/"))
        target = (
            os.path.join(folder, "main") if os.path.commonpath([folder, os.path.abspath(target)]) != folder else target
        )
        os.makedirs(target, mode=0o700, exist_ok=True)
        path = os.path.join(target, copy_name(location, dump))
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            json.dump(safe, handle, ensure_ascii=False)
        yield Handoff(ref=path, endpoints=endpoints(safe, env, trust=trust), trusted=trust, left_out=left_out)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
