"""The engine knows no screen: headless modules never load textual, and ``import crewpoint`` stays cheap."""

from __future__ import annotations

import subprocess
import sys

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


def test_every_public_name_resolves() -> None:
    import crewpoint

    for name in crewpoint.__all__:
        assert getattr(crewpoint, name) is not None
    with pytest.raises(AttributeError):
        crewpoint.NoSuchThing  # noqa: B018
