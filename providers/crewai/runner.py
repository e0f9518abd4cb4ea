"""Handing a CrewAI checkpoint to the user's CrewAI, with endpoints from the user's environment.

CrewAI rebuilds every LLM of a checkpoint from the fields saved in it, ``base_url`` and ``api_base`` included, so
resuming a crafted checkpoint as it is would send the user's key to the checkpoint's server. crewpoint hands
CrewAI a copy instead, written in a private temporary store (folder 0700, file 0600) that is removed when the
run ends, in which:

- every CrewAI LLM (a mapping with CrewAI's ``llm_type`` discriminator) keeps only the fields CrewAI's LLM holds as
  the model and its sampling settings (:data:`LLM_STATE`); everything else (base URL, API base, key, headers,
  query, client parameters, timeouts, retries, interceptor) is left out, so CrewAI takes it from the user's
  environment (``OPENAI_BASE_URL``, ``OPENAI_API_KEY``, …) or its own defaults;
- every embedder keeps only its provider and model;
- every checkpoint setting names the store the checkpoint came from, so CrewAI writes its new checkpoints there
  (CrewAI writes where the restored entity's setting says), and asks for no pruning.

With ``CREWPOINT_DESERIALIZE_CALLBACKS=1`` the checkpoint is trusted and the copy is the checkpoint as saved.
Before the run, :attr:`Handoff.endpoints` says which endpoint each model will be asked at.
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

from crewpoint.providers.crewai.json_store import read_dump as read_file
from crewpoint.providers.crewai.sqlite_store import read_dump as read_row
from crewpoint.providers.refs import split_ref

TRUST_ENV = "CREWPOINT_DESERIALIZE_CALLBACKS"

LLM_STATE = frozenset(
    {
        "llm_type",
        "model",
        "provider",
        "is_litellm",
        "api",
        "temperature",
        "top_p",
        "max_tokens",
        "max_completion_tokens",
        "seed",
        "frequency_penalty",
        "presence_penalty",
        "n",
        "stop",
        "stream",
        "response_format",
        "logprobs",
        "top_logprobs",
        "reasoning_effort",
    }
)
"""The fields of a CrewAI LLM a checkpoint may set without trust: which model, and how it samples."""

EMBEDDER_STATE = frozenset({"model", "model_name"})
"""The fields of an embedder's ``config`` a checkpoint may set without trust."""

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


def is_crewai_llm(value: object) -> bool:
    """Is ``value`` a CrewAI LLM as CrewAI saves it (a mapping carrying its ``llm_type``)?"""
    return isinstance(value, dict) and isinstance(value.get("llm_type"), str) and "model" in value


def _provider(llm: Mapping[str, Any]) -> str:
    provider = llm.get("provider") or llm.get("llm_type") or ""
    model = str(llm.get("model") or "")
    if not provider and "/" in model:
        provider = model.split("/", 1)[0]
    return str(provider or "openai").lower()


def _endpoint(llm: Mapping[str, Any], environ: Mapping[str, str], saved: bool) -> str:
    """Where CrewAI will send this LLM's requests: the saved URL for a trusted copy, else the environment's."""
    if saved:
        for name in ("base_url", "api_base"):
            value = llm.get(name)
            if isinstance(value, str) and value:
                return value
    names, default = _PROVIDER_ENDPOINTS.get(_provider(llm), ((), ""))
    for name in names:
        value = environ.get(name, "").strip()
        if value:
            return f"{value} (from {name})"
    return f"{default} (the provider's default)" if default else "(the provider's endpoint from your environment)"


def _store_setting(setting: dict[str, Any], store: str, kind: str) -> dict[str, Any]:
    """A checkpoint setting that writes into ``store`` and deletes nothing (pruning is the program's to ask for)."""
    out = dict(setting)
    out["location"] = store
    out["max_checkpoints"] = None
    out["restore_from"] = None
    provider = out.get("provider")
    out["provider"] = {**provider, "provider_type": kind} if isinstance(provider, dict) else {"provider_type": kind}
    return out


def _clean(value: Any, store: str, kind: str) -> Any:
    if isinstance(value, list):
        return [_clean(v, store, kind) for v in value]
    if not isinstance(value, dict):
        return value
    if is_crewai_llm(value):
        return {k: _clean(v, store, kind) for k, v in value.items() if k in LLM_STATE}
    out: dict[str, Any] = {}
    for key, item in value.items():
        if key == "embedder" and isinstance(item, dict):
            config = item.get("config") if isinstance(item.get("config"), dict) else {}
            assert isinstance(config, dict)
            out[key] = {
                "provider": item.get("provider"),
                "config": {k: config[k] for k in config if k in EMBEDDER_STATE},
            }
        elif key == "checkpoint" and isinstance(item, dict) and "location" in item:
            out[key] = _store_setting(item, store, kind)
        else:
            out[key] = _clean(item, store, kind)
    return out


def endpoint_safe_copy(dump: Mapping[str, Any], store: str, kind: str, *, trust: bool = False) -> dict[str, Any]:
    """A copy of the CrewAI checkpoint ``dump`` for CrewAI to resume (see the module's docstring).

    ``store`` is the store the checkpoint came from and ``kind`` its CrewAI provider type (``json`` or
    ``sqlite``): new checkpoints go there. Trusted, the copy is the dump as saved.
    """
    if trust:
        return copy.deepcopy(dict(dump))
    cleaned = _clean(dict(dump), store, kind)
    assert isinstance(cleaned, dict)
    return cleaned


def _llms(value: Any) -> Iterator[dict[str, Any]]:
    if isinstance(value, list):
        for item in value:
            yield from _llms(item)
    elif isinstance(value, dict):
        if is_crewai_llm(value):
            yield value
            return
        for item in value.values():
            yield from _llms(item)


def endpoints(dump: Mapping[str, Any], environ: Mapping[str, str] | None = None, *, trust: bool = False) -> list[str]:
    """One line per model and endpoint the run of ``dump`` (as handed to CrewAI) will contact, without repeats."""
    env = os.environ if environ is None else environ
    lines: list[str] = []
    entities = dump.get("entities")
    for llm in _llms(entities if isinstance(entities, list) else []):
        line = f"{llm.get('model')} ({_provider(llm)}) at {_endpoint(llm, env, trust)}"
        if line not in lines:
            lines.append(line)
    return lines


@dataclass
class Handoff:
    """A checkpoint ready for CrewAI: the copy's file, and the endpoints the run will contact."""

    ref: str
    endpoints: list[str] = field(default_factory=list)
    trusted: bool = False

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
    """Write the endpoint-safe copy of the CrewAI checkpoint at ``location`` (in ``store``) to a private
    temporary store laid out as CrewAI's (``<tmp>/<branch>/<file>.json``), and remove it when the block ends."""
    env = os.environ if environ is None else environ
    trust = trusted(env)
    dump = read_raw(location)
    kind = "sqlite" if split_ref(location)[1] is not None else "json"
    safe = endpoint_safe_copy(dump, os.path.abspath(split_ref(store)[0]), kind, trust=trust)
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
        yield Handoff(ref=path, endpoints=endpoints(safe, env, trust=trust), trusted=trust)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
