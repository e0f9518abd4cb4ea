"""resume, fork and answer take the options that say how a checkpoint runs (--app, --budget, --budget-tokens,
--progress, and what runs when the program changed: --keep, --rerun, --strict) alike: the same names, kinds,
defaults and help, in the same order in each command's --help."""

from __future__ import annotations

from click.testing import CliRunner

from crewpoint.tui.cli import main

RUN_OPTIONS = ["--app", "--budget", "--budget-tokens", "--progress", "--keep", "--rerun", "--strict"]


def _options(command: str) -> list[str]:
    said = CliRunner().invoke(main, ["checkpoint", command, "--help"], terminal_width=200)
    assert said.exit_code == 0, said.output
    return [line.strip() for line in said.output.splitlines() if line.strip().startswith("--")]


def test_resume_fork_and_answer_take_the_run_options_alike() -> None:
    shown = {command: _options(command) for command in ("resume", "fork", "answer")}
    for command, lines in shown.items():
        names = [line.split()[0] for line in lines]
        assert [n for n in names if n in RUN_OPTIONS] == RUN_OPTIONS, command
    run_lines = {c: [line for line in lines if line.split()[0] in RUN_OPTIONS] for c, lines in shown.items()}
    assert run_lines["resume"] == run_lines["fork"] == run_lines["answer"]
    assert any("[default: rich]" in line for line in run_lines["resume"])
    assert [line.split()[0] for line in shown["resume"]][-3:] == ["--dry-run", "--json", "--force"]
