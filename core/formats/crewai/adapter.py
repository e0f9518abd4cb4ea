"""The CrewAI format as the rest of crewpoint sees it: its ids, its stores, its forks and its runs.

Registered as the format ``crewai`` by :mod:`crewpoint.formats`; the engine, the command line, the app and CrewAI's
read-only stores ask :mod:`crewpoint.providers.formats`, never this module by name. Importing it is cheap (a
listing asks it about every id): the translation, the fork planner, the stores and the runner load when asked for.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from crewpoint.providers import CheckpointError, provider_kind, provider_named
from crewpoint.providers.formats import ForeignFork, ForeignRun, ForeignRunRequest
from crewpoint.providers.refs import match_prefix, split_ref

if TYPE_CHECKING:
    from crewpoint.providers.base import BaseProvider, CheckpointMeta

REF_ID_RE = re.compile(r"\d{8}T\d{6}_[0-9a-f]{1,8}")
"""CrewAI's ids (``<YYYYmmddTHHMMSS>_<uuid8>``, or a prefix) in ``db#id`` references to its stores."""
STAMPED_ID_RE = re.compile(r"\d{8}T\d{6}[_-][0-9a-f]{8}")
"""A time-stamped id: CrewAI's, or crewpoint's copy of one (``-`` for ``_``)."""
_STAMP_LENGTH = 16
"""``<YYYYmmddTHHMMSS>_``: the start of a CrewAI id, shared by every checkpoint of that second."""
FORK_TRIGGER = "crewpoint_fork"
"""The trigger of a fork crewpoint writes in CrewAI's format: written, not run (CrewAI runs it later)."""
_KINDS = ("crewai-sqlite", "crewai-json")
"""The read-only providers of CrewAI's stores (registered in :mod:`crewpoint.providers`)."""


class CrewAIFormat:
    """CrewAI's checkpoints: read by crewpoint, forked in CrewAI's own format, run by the user's CrewAI."""

    name = "crewai"
    title = "CrewAI"
    foreign = True
    written_not_run = frozenset({FORK_TRIGGER})

    def owns_id(self, checkpoint_id: str) -> bool:
        return STAMPED_ID_RE.fullmatch(checkpoint_id) is not None

    def short_id(self, checkpoint_id: str, width: int, typeable: bool) -> str:
        # its start is only the time, shared by every checkpoint of that second: shown by its random part
        return checkpoint_id if typeable else checkpoint_id[_STAMP_LENGTH:]

    def takes_ref_id(self, fragment: str) -> bool:
        return REF_ID_RE.fullmatch(fragment) is not None

    def written_by(self, version: str) -> str | None:
        if version.startswith("crewai "):
            return f"{version} (a CrewAI store, read-only)"
        if version.startswith("copy of crewai "):
            return f"crewpoint, a {version} checkpoint"
        return None

    def owns_store(self, location: str) -> bool:
        return self.provider_for(location) is not None

    def provider_for(self, location: str) -> BaseProvider | None:

        try:
            kind = provider_kind(location)
        except CheckpointError:
            return None
        return provider_named(kind) if kind in _KINDS else None

    def to_body(self, dump: Any, meta: CheckpointMeta) -> dict[str, Any]:
        # lazy: the translation loads the schema, which a listing never needs
        from crewpoint.formats.crewai.body import to_body

        return to_body(dump, meta)

    def plan_fork(self, body: Mapping[str, Any], inputs: dict[str, Any], outputs: dict[int, str]) -> ForeignFork:
        # lazy: crewpoint.formats.crewai.fork imports this module back (cycle)
        from crewpoint.formats.crewai.fork import plan_body

        return ForeignFork(*plan_body(dict(body), inputs, outputs))

    def run(self, request: ForeignRunRequest) -> ForeignRun:
        """A fork is written in CrewAI's format; the user's CrewAI runs it. CrewAI gets a copy rebuilt by
        allow-list, whose endpoints come from the user's environment (:mod:`crewpoint.formats.crewai.runner`);
        the endpoints, and what the copy left out, are said first."""
        # lazy: crewpoint.formats.crewai.fork imports this module back (cycle)
        from crewpoint.formats.crewai.fork import crewai_environment, fork_checkpoint, resume_command

        # lazy: `checkpoint list` never loads formats.crewai.runner
        from crewpoint.formats.crewai.runner import handoff, left_out_line

        store, ref, say = request.store, request.ref, request.say
        path, ref_id = split_ref(store)
        is_file = os.path.isfile(path) and path.endswith(".json")
        provider = self.provider_for(store)
        if provider is None:
            raise CheckpointError(f"{store}: not a CrewAI checkpoint store")
        if request.fork:
            done = fork_checkpoint(
                store,
                None if (is_file or ref == store) else ref,
                branch=request.branch,
                inputs=request.inputs,
                outputs=request.outputs,
            )
            store, target = done.store, done.checkpoint_id
            names = done.task_names
            left_out = done.left_out
            said = f"forked {done.source.id} to {done.checkpoint_id} on branch {done.branch} (CrewAI format)"
            if done.edited:
                said += "; edited " + ", ".join(f"{i + 1}. {names[i]}" for i in done.edited)
            if done.reset:
                said += "; reset " + ", ".join(f"{i + 1}. {names[i]}" for i in done.reset)
            if done.will_run != done.reset:
                said += "; CrewAI runs " + (", ".join(str(i + 1) for i in done.will_run) or "nothing")
            request.forked({"checkpoint_id": target, "branch": done.branch, "ref": done.ref})
            say(said)
        else:
            left_out = []
            metas = provider.list(path)
            wanted = ref_id or (None if ref == store else ref)
            if is_file:
                wanted = metas[0].id if metas else None
            if wanted is None:
                raise ValueError(f"name the checkpoint to resume in {path}")
            target = match_prefix([m.id for m in metas], wanted, path)
            if is_file:
                # lazy: `checkpoint list` never loads providers.crewai.json_store
                from crewpoint.providers.crewai.json_store import store_root

                store = store_root(path)
        meta = next(m for m in provider.list(split_ref(store)[0]) if m.id == target)
        command = resume_command(meta.location, meta.entity_kind)
        if command is None:
            return ForeignRun(
                problem="this is a CrewAI checkpoint, which CrewAI runs, and CrewAI is not installed here "
                f"(no `crewai` command; CREWPOINT_CREWAI_PYTHON names a Python that has it): resume {meta.location}"
            )
        with handoff(meta.location, store) as safe:
            say(f"CrewAI resumes {meta.location} ({command[0]})")
            say(safe.describe())
            left = left_out_line(left_out + [p for p in safe.left_out if p not in left_out])
            if left:
                say(left)
            sys.stdout.flush()
            import subprocess

            code = subprocess.call(resume_command(safe.ref, meta.entity_kind) or command, env=crewai_environment())
        return ForeignRun(exit_code=code)


CREWAI = CrewAIFormat()
"""The adapter :mod:`crewpoint.formats` registers for the format ``crewai``."""
