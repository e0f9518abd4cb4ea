"""What recorded usage costs: the rows of a checkpoint body's ``usage`` section priced when shown, never stored.

Prices come from ``genai-prices``' bundled table (imported only when something is priced; crewpoint never starts its
``UpdatePrices`` fetcher, so no price is ever fetched) and from overrides in dollars per million tokens, in
genai-prices' own field names (``input_mtok``, ``output_mtok``, ``cache_read_mtok``, ``cache_write_mtok``, ...):
``[tool.crewpoint.prices]`` in the project's pyproject.toml (the nearest at or above the working folder) and the TOML
file ``CREWPOINT_PRICES`` names (its top-level table, model → prices; it wins over pyproject.toml for the models it
names). An override wins over the table. A model neither knows costs ``None``, shown as "price unknown" beside its
tokens, never a made-up figure; the offline model costs nothing. Since a cost is recomputed from the rows each time, a
newer table or an override applies to old checkpoints too.

A row (``body["usage"]["rows"|"before"|"reused"]``) is a :class:`~crewpoint.providers.usage_meta.UsageRow`, stored
as the list of its values; ``input_tokens`` counts cached tokens too (genai-prices' meaning). A checkpoint is data:
:func:`usage_rows` keeps only well-formed rows, with bounded text and counts.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from decimal import ROUND_HALF_UP, Decimal, InvalidOperation
from typing import Any

from crewpoint.providers.usage_meta import MAX_TEXT, TOO_LONG, UsageRow, decode_row, read_usage_summary, usage_summary

__all__ = [
    "PRICE_UNKNOWN",
    "TOKEN_KINDS",
    "Cost",
    "CostSummary",
    "Prices",
    "PricesError",
    "format_usd",
    "load_prices",
    "price_row",
    "price_rows",
    "table_version",
    "usage_damage",
    "usage_rows",
]

TOKEN_KINDS = ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens", "reasoning_tokens")
"""The token counts of a row, in the order they are shown."""

PRICE_UNKNOWN = "price unknown"
"""What is shown instead of a cost for a model no price table knows."""

PRICES_ENV = "CREWPOINT_PRICES"
"""The environment variable naming a TOML file of price overrides."""

OFFLINE_PROVIDER = "offline"
"""The provider the offline model records: it runs in the process and costs nothing."""

_PARTS = ("rows", "before", "reused")


class PricesError(ValueError):
    """A price override that cannot be read (one line: the file and what is wrong)."""


# -- rows ----------------------------------------------------------------------------------------------------------


def _row(stored: object) -> UsageRow | None:
    """A stored usage row read as one (its names cut to what a table shows), or None."""
    return decode_row(stored, cut=MAX_TEXT)


def usage_rows(body: object, part: str = "rows") -> list[UsageRow]:
    """The well-formed rows of ``body["usage"][part]`` (``rows``, ``before`` or ``reused``); a body without usage,
    or a part that is not a list, has none; a malformed row is left out."""
    if part not in _PARTS:
        raise ValueError(f"unknown usage part {part!r}: use one of {', '.join(_PARTS)}")
    section = body.get("usage") if isinstance(body, Mapping) else None
    raw = section.get(part) if isinstance(section, Mapping) else None
    if not isinstance(raw, list):
        return []
    return [row for row in map(_row, raw) if row is not None]


def usage_damage(body: object, summary: object = "") -> str | None:
    """Why a checkpoint's usage cannot be priced as whole, or None: a stored row of its body that is not a usage row
    (named by part and place), or its metadata's usage ``summary`` (what ``list`` and a store's ``cost`` price)
    saying other than its body's rows. A checkpoint's cost has one source, its body: the summary is only ever a
    copy of it, and a copy that differs is damage, never priced. "" (no summary: an older record) checks no copy."""
    section = body.get("usage") if isinstance(body, Mapping) else None
    if section is None:
        return None if not summary else "its metadata records usage its body does not hold"
    if not isinstance(section, Mapping):
        return "usage: not a usage section"
    parts: dict[str, list[Any]] = {}
    for part in _PARTS:
        raw = section.get(part, [])
        if not isinstance(raw, list):
            return f"usage.{part}: not a list of usage rows"
        bad = next((at for at, stored in enumerate(raw) if _row(stored) is None), None)
        if bad is not None:
            return f"usage.{part}[{bad}]: not a usage row"
        parts[part] = raw
    if not summary:
        return None
    derived = usage_summary(parts["before"] + parts["rows"], parts["rows"])
    same = (
        summary == derived
        if TOO_LONG in (summary, derived)
        else read_usage_summary(summary) == read_usage_summary(derived)
    )
    return None if same else "its metadata's usage summary does not match the usage its body records"


# -- prices --------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Prices:
    """The price overrides in force: model → {genai-prices price field: dollars}, and where each came from."""

    overrides: Mapping[str, Mapping[str, Decimal]] = field(default_factory=dict)
    sources: Mapping[str, str] = field(default_factory=dict)
    """Model → the file its override was read from."""

    def override_for(self, model: str) -> tuple[Mapping[str, Decimal], str] | None:
        found = self.overrides.get(model)
        key = model
        if found is None:
            lowered = model.lower()
            key = next((name for name in self.overrides if name.lower() == lowered), "")
            found = self.overrides.get(key)
        return (found, self.sources.get(key, "")) if found is not None else None


def _price_keys() -> frozenset[str]:
    # lazy: genai-prices loads pydantic and its whole price table, needed only when an override is checked
    from genai_prices.units import _get_registry

    registry = _get_registry()
    keys = set()
    for unit in registry.units.values():
        keys.add(unit.price_key)
    return frozenset(keys)


MAX_PRICE = Decimal(1_000_000)
"""The highest price an override may set: a million dollars per million tokens (a dollar a token), far above any
model's; a higher one is a typo, refused where it is read."""


def _dollars(value: object, where: str) -> Decimal:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise PricesError(f"{where}: expected a number of dollars per million tokens, not {value!r}")
    try:
        amount = Decimal(str(value))
    except InvalidOperation as exc:  # pragma: no cover - str() of an int or float always parses
        raise PricesError(f"{where}: {value!r} is not a number") from exc
    if not amount.is_finite() or amount < 0:
        raise PricesError(f"{where}: a price is a finite number of dollars, 0 or more, not {value!r}")
    if amount > MAX_PRICE:
        raise PricesError(f"{where}: {value!r} is above the highest price crewpoint takes ({MAX_PRICE:,} per million)")
    return amount


def check_overrides(table: object, source: str) -> dict[str, dict[str, Decimal]]:
    """A table of model → {price field: dollars per million tokens} as read from ``source``; :class:`PricesError`
    names the first thing wrong with it."""
    if not isinstance(table, Mapping):
        raise PricesError(f"{source}: prices must be a table of model = {{ input_mtok = ..., output_mtok = ... }}")
    known = _price_keys()
    out: dict[str, dict[str, Decimal]] = {}
    for model, prices in table.items():
        if not isinstance(prices, Mapping) or not prices:
            raise PricesError(f"{source}: {model!r} must be a table like {{ input_mtok = 1.0, output_mtok = 2.0 }}")
        fields: dict[str, Decimal] = {}
        for name, value in prices.items():
            if name not in known:
                raise PricesError(
                    f"{source}: {model!r} has an unknown price field {name!r} (genai-prices' names: input_mtok,"
                    " output_mtok, cache_read_mtok, cache_write_mtok, ...)"
                )
            fields[name] = _dollars(value, f"{source}: {model}.{name}")
        _check_pricing(fields, f"{source}: {model}")
        out[str(model)] = fields
    return out


def _check_pricing(fields: Mapping[str, Decimal], where: str) -> None:
    """Refuse a set of prices genai-prices cannot price with (a cache price without an input price, ...)."""
    # lazy: genai-prices loads pydantic and its price table, needed only when an override is checked
    from genai_prices import Usage
    from genai_prices.types import ModelPrice

    try:
        ModelPrice(**fields).calc_price(Usage(input_tokens=2, output_tokens=1, cache_read_tokens=1))
    except ValueError as exc:
        raise PricesError(f"{where}: {' '.join(str(exc).split())}") from exc


def _read_toml(path: str) -> dict[str, Any]:
    import tomllib

    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except FileNotFoundError as exc:
        raise PricesError(f"{path}: no such price file ({PRICES_ENV})") from exc
    except (OSError, UnicodeDecodeError) as exc:
        raise PricesError(f"{path}: cannot read it ({exc})") from exc
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise PricesError(f"{path}: not valid TOML ({exc})") from exc


def _project_prices(start: str | os.PathLike[str] | None) -> tuple[object, str] | None:
    """``[tool.crewpoint.prices]`` of the nearest pyproject.toml at or above ``start`` (as ``[tool.crewpoint] app``
    is found), or None. Paths by ``os.path``: a listing prices its rows, and ``pathlib`` would add to its start."""
    folder = os.path.realpath(start or os.getcwd())
    while True:
        pyproject = os.path.join(folder, "pyproject.toml")
        if not os.path.isfile(pyproject):
            parent = os.path.dirname(folder)
            if parent == folder:
                return None
            folder = parent
            continue
        data = _read_toml(pyproject)
        tool = data.get("tool")
        settings = tool.get("crewpoint") if isinstance(tool, dict) else None
        if not isinstance(settings, dict) or "prices" not in settings:
            return None
        return settings["prices"], pyproject


def load_prices(start: str | os.PathLike[str] | None = None, environ: Mapping[str, str] | None = None) -> Prices:
    """The overrides in force for the working folder (or ``start``): ``[tool.crewpoint.prices]``, then the file
    ``$CREWPOINT_PRICES`` names over it. Raises :class:`PricesError` for a file or table that cannot be used."""
    env = os.environ if environ is None else environ
    overrides: dict[str, Mapping[str, Decimal]] = {}
    sources: dict[str, str] = {}
    found = _project_prices(start)
    if found is not None:
        table, pyproject = found
        for model, prices in check_overrides(table, f"{pyproject} [tool.crewpoint.prices]").items():
            overrides[model], sources[model] = prices, pyproject
    named = env.get(PRICES_ENV, "").strip()
    if named:
        path = os.path.expanduser(named)
        for model, prices in check_overrides(_read_toml(path), path).items():
            overrides[model], sources[model] = prices, path
    return Prices(overrides, sources)


# -- costs ---------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Cost:
    """What one row cost: ``usd`` None when no price is known (``note`` says why)."""

    usd: Decimal | None
    source: str = ""
    """"genai-prices", "override: <file>" or "offline"; "" when unknown."""
    note: str | None = None


def _usage_of(row: UsageRow) -> Any:
    from genai_prices import Usage

    counts = {
        "input_tokens": row.input_tokens,
        "output_tokens": row.output_tokens,
        "cache_read_tokens": row.cache_read_tokens,
        "cache_write_tokens": row.cache_write_tokens,
        "output_reasoning_tokens": row.reasoning_tokens,
    }
    return Usage(**{key: value for key, value in counts.items() if value})


def _more_requests(model_price: Any, requests: int) -> Decimal:
    """genai-prices prices one request per calculation: the rest of a row's requests at the per-request price."""
    per_thousand = getattr(model_price, "requests_kcount", None)
    if not isinstance(per_thousand, Decimal) or requests <= 1:
        return Decimal(0)
    return per_thousand * (requests - 1) / 1000


def price_row(row: object, prices: Prices | None = None) -> Cost:
    """The cost of one usage row (a row, or one as a body stores it): an override for its model, else genai-prices'
    ``calc_price`` for its model and provider (bundled data); ``Cost(None, note="price unknown")`` for a model
    neither knows."""
    clean = _row(row)
    if clean is None:
        return Cost(None, note="usage not readable")
    provider, model = _price_name(clean.model, clean.provider)
    override = (prices or Prices()).override_for(clean.model) or (prices or Prices()).override_for(model)
    try:
        if override is not None:
            from genai_prices.types import ModelPrice

            fields, source = override
            model_price = ModelPrice(**fields)
            usd = model_price.calc_price(_usage_of(clean))["total_price"]
            return Cost(usd + _more_requests(model_price, clean.requests), f"override: {source}")
        if clean.provider == OFFLINE_PROVIDER:
            return Cost(Decimal(0), "offline")
        from genai_prices import calc_price

        calc = calc_price(_usage_of(clean), model_ref=model, provider_id=provider or None)
    except LookupError:
        return Cost(None, note=PRICE_UNKNOWN)
    except ValueError as exc:  # counts that do not add up (more cached tokens than input tokens)
        return Cost(None, note=f"usage does not add up ({' '.join(str(exc).split())})")
    return Cost(calc.total_price + _more_requests(calc.model_price, clean.requests), "genai-prices")


# -- model names as CrewAI writes them: the LLM sends the model part, a row is priced by both --------------------

PROVIDER_PREFIXES: Mapping[str, str] = {
    "openai": "openai",
    "anthropic": "anthropic",
    "azure": "azure",
    "gemini": "google",
    "vertex_ai": "google",
    "bedrock": "aws",
    "groq": "groq",
    "mistral": "mistral",
    "deepseek": "deepseek",
    "cohere": "cohere",
    "together_ai": "together",
    "fireworks_ai": "fireworks",
    "openrouter": "openrouter",
    "perplexity": "perplexity",
    "xai": "x-ai",
    "cerebras": "cerebras",
    "ollama": "ollama",
    "ollama_chat": "ollama",
    "hosted_vllm": "vllm",
    "lm_studio": "lm_studio",
}
"""The provider prefixes of CrewAI's (LiteLLM's) model names (``openai/gpt-4o-mini``), each with the provider its
usage is recorded and priced under (genai-prices' name for it where it has one)."""


def split_provider(model: str) -> tuple[str | None, str]:
    """``("openai", "gpt-4o-mini")`` for ``"openai/gpt-4o-mini"``: the provider a CrewAI-style name starts with and
    the model as that provider's server knows it (only the first part goes: ``openrouter/anthropic/claude-3`` →
    ``("openrouter", "anthropic/claude-3")``); ``(None, model)`` when the first part names no provider (a Hugging
    Face id such as ``meta-llama/Llama-3-8B`` is a model name as a whole)."""
    head, sep, rest = model.partition("/")
    provider = PROVIDER_PREFIXES.get(head.strip().lower()) if sep and rest.strip() else None
    return (provider, rest.strip()) if provider is not None else (None, model)


def _price_name(model: str, provider: str) -> tuple[str, str]:
    """The provider and model a row is priced as: a CrewAI-style name (``openai/gpt-4o-mini``) is its provider's
    model, unless the row names another provider (Groq's ``openai/gpt-oss-20b`` is Groq's own id)."""
    named, rest = split_provider(model)
    if named is None or provider not in ("", "custom", "openai", named, model.partition("/")[0].strip().lower()):
        return provider, model
    return named, rest


@dataclass
class CostSummary:
    """Rows summed: tokens by kind, what the priced rows cost, and which models no price covers."""

    usd: Decimal = Decimal(0)
    """The cost of the rows whose price is known."""
    tokens: dict[str, int] = field(default_factory=lambda: dict.fromkeys((*TOKEN_KINDS, "requests"), 0))
    duration_s: float = 0.0
    estimated: bool = False
    """Some of the tokens were estimated (the server reported none)."""
    rows: int = 0
    priced: int = 0
    unknown_models: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def complete(self) -> bool:
        """Every row was priced."""
        return self.priced == self.rows

    @property
    def cost_usd(self) -> float | None:
        """The cost for display and JSON, rounded to a millionth of a dollar; None when no row could be priced."""
        if self.rows and not self.priced:
            return None
        return float(round(self.usd, 6))

    def add(self, row: UsageRow, cost: Cost) -> None:
        tokens = self.tokens
        self.rows += 1
        tokens["input_tokens"] += row.input_tokens
        tokens["output_tokens"] += row.output_tokens
        tokens["cache_read_tokens"] += row.cache_read_tokens
        tokens["cache_write_tokens"] += row.cache_write_tokens
        tokens["reasoning_tokens"] += row.reasoning_tokens
        tokens["requests"] += row.requests
        self.duration_s += row.duration_s
        self.estimated = self.estimated or row.estimated
        if cost.usd is not None:
            self.priced += 1
            self.usd += cost.usd
        elif cost.note == PRICE_UNKNOWN:
            if row.model not in self.unknown_models:
                self.unknown_models.append(row.model)
        elif cost.note and cost.note not in self.notes:
            self.notes.append(cost.note)

    def shown(self) -> str:
        """The cost as a cell: ``$0.0123``, ``$0.0123 + price unknown`` when some rows have no price."""
        if self.rows and not self.priced:
            return PRICE_UNKNOWN
        text = format_usd(self.usd)
        return text if self.complete else f"{text} + {PRICE_UNKNOWN}"

    def to_json(self) -> dict[str, Any]:
        """``usage`` (tokens by kind and requests), ``cost_usd`` (None: no price known), ``cost_estimated``, and the
        models no price covers (``price_unknown``)."""
        return {
            "usage": {**self.tokens, "duration_s": round(self.duration_s, 3)},
            "cost_usd": self.cost_usd,
            "cost_estimated": self.estimated,
            "price_unknown": sorted(self.unknown_models),
        }


def price_rows(rows: Iterable[object], prices: Prices | None = None) -> CostSummary:
    """Rows (or rows as a body stores them) summed and priced (:func:`price_row` each); malformed rows are left out.
    With no ``prices`` the overrides of the working folder are read (:func:`load_prices`, which may raise
    :class:`PricesError`)."""
    if prices is None:
        prices = load_prices()
    summary = CostSummary()
    for raw in rows:
        row = _row(raw)
        if row is not None:
            summary.add(row, price_row(row, prices))
    return summary


_HUGE = Decimal(10**15)
"""Dollars from here on are shown in powers of ten (``$1.0e+30``): a figure no run spends, told without raising."""


def format_usd(usd: Decimal | float | None) -> str:
    """Dollars for people: four decimals under a dollar (``$0.0042``), two above (``$12.34``), "price unknown".
    Never raises: a huge figure reads ``$1.0e+30``, one that is not a number ``$?``, an infinite one ``$inf``."""
    if usd is None:
        return PRICE_UNKNOWN
    try:
        amount = usd if isinstance(usd, Decimal) else Decimal(usd if isinstance(usd, int) else repr(float(usd)))
    except (ValueError, TypeError, OverflowError, InvalidOperation):
        return "$?"
    if amount.is_nan():
        return "$?"
    sign = "-" if amount.is_signed() and amount else ""
    amount = abs(amount)
    if amount.is_infinite():
        return f"{sign}$inf"
    if amount >= _HUGE:
        return f"{sign}${amount:.1e}"
    if amount and amount < Decimal("0.0001"):
        return f"{sign}<$0.0001"
    places = Decimal("0.01") if amount >= 1 else Decimal("0.0001")
    return f"{sign}${amount.quantize(places, rounding=ROUND_HALF_UP):,}"


def table_version() -> str:
    """Which price table prices are from, shown wherever a cost is: ``genai-prices 0.2.3 (bundled data)``."""
    found = _installed_version("genai_prices")
    return f"genai-prices {found} (bundled data)" if found else "genai-prices (version unknown)"


@functools.cache
def _installed_version(package: str) -> str | None:
    """The installed version of ``package``, from the ``<package>-<version>.dist-info`` folder beside it (what an
    installer writes): a folder listing, not ``importlib.metadata``, which alone takes longer than an ``info``."""
    import importlib.util

    spec = importlib.util.find_spec(package)
    if spec is not None and spec.origin:
        folder = os.path.dirname(os.path.dirname(spec.origin))
        prefix = f"{package}-"
        try:
            names = [n for n in os.listdir(folder) if n.startswith(prefix) and n.endswith(".dist-info")]
        except OSError:
            names = []
        if len(names) == 1:
            return names[0][len(prefix) : -len(".dist-info")]
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(package)
    except PackageNotFoundError:  # pragma: no cover - a dependency of crewpoint
        return None
