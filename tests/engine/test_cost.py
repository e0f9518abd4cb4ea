"""What usage costs (crewpoint.cost): genai-prices' own figures, overrides from pyproject.toml and CREWPOINT_PRICES,
"price unknown" for a model no table knows, and rows from a checkpoint read as data."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from support.prices import genai_usd

from crewpoint.cost import (
    PRICE_UNKNOWN,
    PricesError,
    format_usd,
    load_prices,
    price_row,
    price_rows,
    table_version,
    usage_rows,
)


def row(model: str, provider: str = "openai", **counts: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "unit": "t1",
        "label": "research",
        "agent": "researcher",
        "model": model,
        "provider": provider,
        "input_tokens": 1200,
        "output_tokens": 300,
        "cache_read_tokens": 200,
        "cache_write_tokens": 0,
        "reasoning_tokens": 40,
        "requests": 1,
        "duration_s": 2.5,
        "estimated": False,
    }
    return {**base, **counts}


@pytest.mark.parametrize(
    ("model", "provider", "counts"),
    [
        ("gpt-4o", "openai", {}),
        ("gpt-4o-mini", "openai", {"cache_read_tokens": 0, "reasoning_tokens": 0}),
        ("claude-sonnet-4-5", "anthropic", {"cache_write_tokens": 100}),
    ],
)
def test_a_rows_cost_is_genai_prices_own_figure(model: str, provider: str, counts: dict[str, int]) -> None:
    r = row(model, provider, **counts)
    cost = price_row(r, load_prices())
    assert cost.usd == genai_usd(r) and cost.usd > 0
    assert cost.source == "genai-prices"


def test_rows_sum_tokens_by_kind_and_cost() -> None:
    rows = [row("gpt-4o"), row("gpt-4o-mini", unit="t2", estimated=True, requests=2)]
    summary = price_rows(rows, load_prices())
    assert summary.usd == genai_usd(rows[0]) + genai_usd(rows[1])
    assert summary.tokens == {
        "input_tokens": 2400,
        "output_tokens": 600,
        "cache_read_tokens": 400,
        "cache_write_tokens": 0,
        "reasoning_tokens": 80,
        "requests": 3,
    }
    assert summary.estimated and summary.complete
    data = summary.to_json()
    assert data["cost_usd"] == float(round(summary.usd, 6)) and data["cost_estimated"] is True
    assert data["usage"]["input_tokens"] == 2400


def test_an_unknown_model_says_price_unknown_and_keeps_its_tokens() -> None:
    unknown = row("my-local-model")
    cost = price_row(unknown, load_prices())
    assert cost.usd is None and cost.note == PRICE_UNKNOWN
    alone = price_rows([unknown], load_prices())
    assert alone.cost_usd is None and alone.shown() == PRICE_UNKNOWN
    assert alone.tokens["input_tokens"] == 1200 and alone.unknown_models == ["my-local-model"]
    mixed = price_rows([unknown, row("gpt-4o")], load_prices())
    assert mixed.usd == genai_usd(row("gpt-4o")) and not mixed.complete
    assert mixed.shown().endswith(f"+ {PRICE_UNKNOWN}") and mixed.to_json()["price_unknown"] == ["my-local-model"]


def test_the_offline_model_costs_nothing() -> None:
    cost = price_row(row("offline", "offline"), load_prices())
    assert cost.usd == 0 and cost.source == "offline"


def test_a_pyproject_override_wins_over_the_table(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text(
        '[tool.crewpoint.prices]\n"gpt-4o" = { input_mtok = 1.0, output_mtok = 2.0, cache_read_mtok = 0.5 }\n'
        '"my-local-model" = { input_mtok = 0.1, output_mtok = 0.2 }\n',
        encoding="utf-8",
    )
    nested = tmp_path / "src" / "pkg"
    nested.mkdir(parents=True)
    prices = load_prices(nested)  # found from a folder below, as [tool.crewpoint] app is
    cost = price_row(row("gpt-4o"), prices)
    # 1000 uncached input at $1, 200 cached at $0.5, 300 output at $2 (per million tokens)
    assert cost.usd == Decimal("0.001") + Decimal("0.0001") + Decimal("0.0006")
    assert cost.usd != genai_usd(row("gpt-4o"))
    assert cost.source == f"override: {tmp_path / 'pyproject.toml'}"
    local = price_row(row("my-local-model", cache_read_tokens=0), prices)
    assert local.usd == Decimal("0.00012") + Decimal("0.00006")


def test_the_environment_file_wins_over_pyproject(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text(
        '[tool.crewpoint.prices]\n"gpt-4o" = { input_mtok = 1.0, output_mtok = 2.0 }\n', encoding="utf-8"
    )
    override = tmp_path / "rates.toml"
    override.write_text('"gpt-4o" = { input_mtok = 3, output_mtok = 4 }\n', encoding="utf-8")
    prices = load_prices(tmp_path, {"CREWPOINT_PRICES": str(override)})
    cost = price_row(row("gpt-4o", cache_read_tokens=0), prices)
    assert cost.usd == Decimal("0.0036") + Decimal("0.0012")
    assert cost.source == f"override: {override}"


def test_requests_beyond_the_first_pay_the_per_request_price(tmp_path: Path) -> None:
    override = tmp_path / "rates.toml"
    override.write_text('"gateway" = { input_mtok = 0, requests_kcount = 5 }\n', encoding="utf-8")
    prices = load_prices(tmp_path, {"CREWPOINT_PRICES": str(override)})
    assert price_row(row("gateway", requests=1), prices).usd == Decimal("0.005")
    assert price_row(row("gateway", requests=4), prices).usd == Decimal("0.020")


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ('"gpt-4o" = { input_mtok = ', "not valid TOML"),
        ('"gpt-4o" = { input_dollars = 1.0 }\n', "unknown price field 'input_dollars'"),
        ('"gpt-4o" = { input_mtok = -1 }\n', "0 or more"),
        ('"gpt-4o" = { input_mtok = "cheap" }\n', "expected a number"),
        ('"gpt-4o" = 3\n', "must be a table"),
        ('"gpt-4o" = { cache_read_mtok = 0.5 }\n', "Missing ancestor price"),
    ],
)
def test_a_bad_override_file_is_one_line(tmp_path: Path, text: str, fragment: str) -> None:
    override = tmp_path / "rates.toml"
    override.write_text(text, encoding="utf-8")
    with pytest.raises(PricesError) as caught:
        load_prices(tmp_path, {"CREWPOINT_PRICES": str(override)})
    message = str(caught.value)
    assert fragment in message and str(override) in message and "\n" not in message


def test_a_missing_override_file_is_named(tmp_path: Path) -> None:
    with pytest.raises(PricesError, match="no such price file"):
        load_prices(tmp_path, {"CREWPOINT_PRICES": str(tmp_path / "nope.toml")})


def test_usage_rows_keep_only_well_formed_rows() -> None:
    good = row("gpt-4o")
    body = {
        "usage": {
            "rows": [
                good,
                {**good, "input_tokens": -5},
                {**good, "input_tokens": "12"},
                {**good, "model": None},
                {**good, "duration_s": float("nan")},
                {**good, "label": "x" * 10_000},
                "not a row",
            ],
            "before": "not a list",
        }
    }
    rows = usage_rows(body)
    assert [r.input_tokens for r in rows] == [1200, 1200]
    assert len(rows[1].label) == 200
    assert usage_rows(body, "before") == [] and usage_rows({"no": "usage"}) == [] and usage_rows(None) == []


def test_the_table_version_names_genai_prices_and_amounts_read_for_people() -> None:
    from importlib.metadata import version

    assert table_version() == f"genai-prices {version('genai-prices')} (bundled data)"
    assert format_usd(Decimal("0.00325")) == "$0.0033"
    assert format_usd(Decimal("12.345")) == "$12.35"
    assert format_usd(None) == PRICE_UNKNOWN and format_usd(Decimal("0.00001")) == "<$0.0001"
