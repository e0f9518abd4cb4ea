"""The CrewAI stores under tests/fixtures/crewai, made by scripts/make_crewai_fixtures.py with crewai 1.15.30.

CrewAI writes an LLM's API key into its dumps in plain text. The committed files hold :data:`PLACEHOLDER` where
that key was; :func:`json_store` and :func:`sqlite_store` make copies with a key-shaped value (:data:`FAKE_KEY`,
built here at run time) in its place, so the tests check masking on what CrewAI really writes while nothing
shaped like a key is kept in the repository.
"""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

FIXTURES = Path(__file__).parent / "fixtures" / "crewai"
PLACEHOLDER = "<no key>"
"""What the committed files hold where CrewAI wrote its key: plainly not a key."""
FAKE_KEY = "-".join(["sk", "fixture", hashlib.sha256(b"crewpoint crewai fixture").hexdigest()[:32]])


def json_store(target: Path) -> Path:
    """A copy of the CrewAI JSON store at ``target``, the key back in every dump."""
    shutil.copytree(FIXTURES / "json", target)
    for path in target.rglob("*.json"):
        path.write_text(path.read_text(encoding="utf-8").replace(PLACEHOLDER, FAKE_KEY), encoding="utf-8")
    return target


def sqlite_store(target: Path) -> Path:
    """A copy of the CrewAI SQLite store at ``target``, the key back in every row (JSONB rewritten by SQL)."""
    import apsw

    shutil.copy(FIXTURES / "store.db", target)
    con = apsw.Connection(str(target))
    con.execute(
        "UPDATE checkpoints SET data = jsonb(replace(json(data), ?, ?))",
        (PLACEHOLDER, FAKE_KEY),
    )
    con.close()
    return target
