"""The engine knows no screen: headless modules never load textual, and ``import crewpoint`` stays cheap."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

HEADLESS = [
    "crewpoint",
    "crewpoint.providers",
    "crewpoint.events",
    "crewpoint.runtime",
    "crewpoint.crew",
    "crewpoint.flow",
    "crewpoint.llm",
    "crewpoint.demo",
    "crewpoint.tui",
    "crewpoint.tui.cli",
]


@pytest.mark.parametrize("module", HEADLESS)
def test_headless_module_does_not_import_textual(module: str) -> None:
    code = f"import sys, {module}; print('textual' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_import_crewpoint_loads_no_pydantic_until_a_name_is_used() -> None:
    code = (
        "import sys, crewpoint; a = 'pydantic' in sys.modules; crewpoint.Crew; b = 'pydantic' in sys.modules;"
        " print(a, b)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "True"]


def test_import_crewpoint_loads_no_store_code() -> None:
    code = "import sys, crewpoint; print(*sorted(m for m in sys.modules if m.startswith('crewpoint.')))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert [m for m in out.stdout.split() if m.startswith(("crewpoint.providers", "crewpoint.formats"))] == []


def test_every_public_name_resolves() -> None:
    import crewpoint

    for name in crewpoint.__all__:
        assert getattr(crewpoint, name) is not None
    with pytest.raises(AttributeError):
        crewpoint.NoSuchThing  # noqa: B018


def test_the_app_uses_only_public_textual_modules() -> None:
    """A private module (``textual.widgets._footer``) may change in any release; the app imports none."""
    root = Path(__file__).resolve().parents[1]
    private = re.compile(r"^\s*(?:from|import)\s+textual(?:\.\w+)*\._\w+", re.MULTILINE)
    offenders = [
        str(path.relative_to(root))
        for folder in ("core", "providers", "tui", "screens")
        for path in sorted((root / folder).rglob("*.py"))
        if private.search(path.read_text(encoding="utf-8"))
    ]
    assert offenders == []
