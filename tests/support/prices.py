"""genai-prices' own figures, computed the library's way, that the tests hold crewpoint's prices to."""

from __future__ import annotations

from collections.abc import Mapping
from decimal import Decimal
from typing import Any

from genai_prices import Usage, calc_price


def genai_usd(row: Mapping[str, Any]) -> Decimal:
    """genai-prices' price of one usage row (``input_tokens``, ``output_tokens``, the cache and reasoning counts
    if any, ``model`` and ``provider``), as the library computes it itself."""
    usage = Usage(
        input_tokens=row["input_tokens"],
        output_tokens=row["output_tokens"],
        cache_read_tokens=row.get("cache_read_tokens") or None,
        cache_write_tokens=row.get("cache_write_tokens") or None,
        output_reasoning_tokens=row.get("reasoning_tokens") or None,
    )
    return calc_price(usage, model_ref=row["model"], provider_id=row["provider"]).total_price
