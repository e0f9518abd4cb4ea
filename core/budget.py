"""Budgets: a run stops before the LLM call that would go past its budget, with a checkpoint to resume from.

``Crew(..., budget=Budget(usd=2.0))``, ``Flow(budget=...)`` (or a class attribute) and ``Agent(..., budget=...)``
(a standalone agent's kickoff) set one. Before each LLM call (:meth:`crewpoint.llm.BaseLLM.invoke`, sync or async,
streamed or not) :func:`check_before_call` adds to what the run has spent since its kickoff (the rows of its
:class:`~crewpoint.usage.UsageLedger`; never its source chain's ``before``) the most the call can cost
(:class:`Bound`): its prompt's tokens estimated from its text, its output bounded by ``max_tokens`` or else by the
largest output one call of its task or agent made on the chain, priced at its model's price. When that would pass
the budget (or the spending has reached it), the call is not made: the run emits ``budget_exceeded``, writes a
checkpoint with that trigger (whatever ``on_events`` says, when the run has a store), its record reads ``budget``
(``stopped: budget``) and ``kickoff()`` raises :class:`BudgetExceeded`. A call nothing bounds (no ``max_tokens``, no
earlier call of its task or agent; or, in dollars, a model of unknown price) is made: it may go past the budget,
by itself at most. Resuming with a larger budget (``kickoff(from_checkpoint=..., budget=...)``, ``crewpoint
checkpoint resume ID --budget USD``) runs only what was left: the finished tasks are reused and none of their calls
is made again. A task the budget stopped part-way starts over, as after a crash. The budget is saved with the
entity's state (:func:`budget_state`): a rebuild from the checkpoint alone keeps it, and so does a program that sets
none; a budget given to the resume, or the program's own, replaces it.

Tokens are ``input + output + reasoning`` tokens (``input`` counts cached tokens too). Dollars come from the
recorded usage priced as ``crewpoint checkpoint cost`` prices it (:mod:`crewpoint.cost`); a model no price covers
counts in tokens only, and the run says once, in one line, that its dollars cannot be checked.

Headless and cheap: at import time the standard library only, and the ceilings (``MAX_USD``, ``MAX_TOKENS``), which
live beside the usage they bound (:mod:`crewpoint.providers.usage_meta`) so that checking a saved budget loads no
budget code.
"""

from __future__ import annotations

import math
import sys
import weakref
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from crewpoint.providers.usage_meta import MAX_TOKENS, MAX_USD

if TYPE_CHECKING:
    from crewpoint.cost import Prices
    from crewpoint.runtime import RuntimeState
    from crewpoint.usage import UsageRow

__all__ = [
    "MAX_TOKENS",
    "MAX_USD",
    "STATUS",
    "TRIGGER",
    "Bound",
    "Budget",
    "BudgetExceeded",
    "Call",
    "Spending",
    "budget_from_state",
    "budget_of",
    "budget_state",
    "check_before_call",
    "over_budget",
    "parse_usd",
    "spending_of",
    "stop",
]

TRIGGER = "budget_exceeded"
"""The event a budget stop emits and the trigger of the checkpoint it writes."""

STATUS = "budget"
"""What the run record of a run stopped by its budget reads (``stopped: budget``)."""


@dataclass(frozen=True, slots=True)
class Budget:
    """What a run may spend: ``usd`` dollars and/or ``tokens`` tokens (input + output + reasoning tokens, cached
    input included). ``None`` sets no limit of that kind. It counts what this run spends from its kickoff (or
    resume), never what its source chain spent before (unless ``whole_run``)."""

    usd: float | None = None
    tokens: int | None = None
    whole_run: bool = False
    """Count what the run's chain spent before this kickoff too (the resumed checkpoint's ledger, ``usage.before``),
    not only what it spends from here: a run the fleet resumes after its worker died keeps the budget it was
    started with. Not saved with the entity's state."""

    def __post_init__(self) -> None:
        usd, tokens = self.usd, self.tokens
        if usd is not None and (
            isinstance(usd, bool)
            or not isinstance(usd, int | float)
            or not math.isfinite(usd)
            or not 0 < usd <= MAX_USD
        ):
            raise ValueError(f"Budget(usd=...) takes a number of dollars above 0, up to {MAX_USD:,.0f}, not {usd!r}")
        if tokens is not None and (
            isinstance(tokens, bool) or not isinstance(tokens, int) or not 0 < tokens <= MAX_TOKENS
        ):
            raise ValueError(
                f"Budget(tokens=...) takes a whole number of tokens above 0, up to {MAX_TOKENS:,}, not {tokens!r}"
            )

    @classmethod
    def of(cls, usd: float | None = None, tokens: int | None = None) -> Budget | None:
        """A budget of the given limits, or None when neither is given (the command line's ``--budget``)."""
        return None if usd is None and tokens is None else cls(usd, tokens)

    def larger(self, factor: float = 2.0) -> Budget:
        """This budget ``factor`` times over: what the resume command suggests."""
        return Budget(
            None if self.usd is None else min(float(f"{self.usd * factor:.6g}"), MAX_USD),
            None if self.tokens is None else min(math.ceil(self.tokens * factor), MAX_TOKENS),
        )

    def options(self) -> list[str]:
        """The command line's options for this budget: ``["--budget", "4", "--budget-tokens", "2000"]``."""
        out: list[str] = []
        if self.usd is not None:
            out += ["--budget", f"{self.usd:g}"]
        if self.tokens is not None:
            out += ["--budget-tokens", str(self.tokens)]
        return out

    def __str__(self) -> str:
        # lazy: the price formatting is needed only when a budget is shown
        from crewpoint.cost import format_usd

        parts = [format_usd(self.usd)] if self.usd is not None else []
        if self.tokens is not None:
            parts.append(f"{self.tokens:,} tokens")
        return " or ".join(parts) or "no limit"


def budget_state(budget: Budget | None) -> dict[str, Any]:
    """What an entity's checkpoint state keeps of ``budget``: ``{"budget": {"usd", "tokens"}}``, nothing for no
    budget (its checkpoints are as they were before budgets were kept)."""
    return {} if budget is None else {"budget": {"usd": budget.usd, "tokens": budget.tokens}}


def budget_from_state(state: object) -> Budget | None:
    """The budget an entity's checkpoint state kept (:func:`budget_state`; checked by the body's schema), or None.
    A rebuild from the checkpoint alone keeps it: a plain resume stops where the run it resumes would have."""
    saved = state.get("budget") if isinstance(state, Mapping) else None
    if not isinstance(saved, Mapping):
        return None
    try:
        return Budget.of(saved.get("usd"), saved.get("tokens"))
    except ValueError:  # (a body the schema did not check)
        return None


def parse_usd(text: str) -> float | None:
    """Dollars typed by a person (``"5"``, ``"$2.50"``); ``None`` for empty text; ``ValueError`` (one line) for
    anything that is not a number of dollars above 0."""
    cleaned = text.strip().removeprefix("$").strip()
    if not cleaned:
        return None
    try:
        value = float(cleaned)
    except ValueError:
        raise ValueError(f"budget {text.strip()!r} is not a number of dollars (like 5 or 2.50)") from None
    if not math.isfinite(value) or value <= 0:
        raise ValueError(f"budget {text.strip()!r}: give a number of dollars above 0, or leave it empty")
    if value > MAX_USD:
        raise ValueError(f"budget {text.strip()!r} is above the largest budget crewpoint takes (${MAX_USD:,.0f})")
    return value


@dataclass(frozen=True, slots=True)
class Spending:
    """What a run has spent since its kickoff: dollars of the priced rows, tokens of all, and the models whose
    price is unknown (their dollars are not counted)."""

    usd: float
    tokens: int
    unpriced: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Call:
    """The LLM call about to be made, as a budget bounds it: its model and provider, the characters it sends, the
    output it may make (``max_tokens``; None: nothing limits it) and whose call it is."""

    model: str
    provider: str = ""
    prompt_chars: int = 0
    max_tokens: int | None = None
    agent_id: str | None = None
    task_id: str | None = None
    agent_role: str | None = None

    def fields(self) -> dict[str, Any]:
        """What the ``budget_exceeded`` event names of the call that was not made."""
        return {"model": self.model, "agent_id": self.agent_id, "task_id": self.task_id, "agent_role": self.agent_role}


@dataclass(frozen=True, slots=True)
class Bound:
    """The most a call was reckoned to cost before it was made: its prompt's tokens (estimated from its text) and
    its output's (``max_tokens``, else the largest output one call of its task or agent made on the chain), and
    those tokens priced (None: its model's price is unknown)."""

    tokens: int
    usd: float | None

    def said(self, dollars: bool) -> str:
        """``up to $0.0020 and 140 tokens`` (the dollars only when they are counted and known)."""
        # lazy: the price formatting is needed only when a stop is told
        from crewpoint.cost import format_usd

        tokens = f"{self.tokens:,} tokens"
        return f"up to {format_usd(self.usd)} and {tokens}" if dollars and self.usd is not None else f"up to {tokens}"


class BudgetExceeded(Exception):
    """Raised by ``kickoff()`` when the run stopped at its budget, before an LLM call. ``ref`` and
    ``checkpoint_id`` name the ``budget_exceeded`` checkpoint (None when the run has no store); ``command`` resumes
    it with a larger budget (``""`` without a store). A command-line run stopped so exits with ``ExitCode.BUDGET``."""

    def __init__(
        self,
        *,
        ref: str | None,
        checkpoint_id: str | None,
        spent_usd: float,
        spent_tokens: int,
        budget: Budget,
        command: str = "",
        problem: str | None = None,
        next_call: str | None = None,
    ) -> None:
        self.ref = ref
        self.checkpoint_id = checkpoint_id
        self.spent_usd = spent_usd
        self.spent_tokens = spent_tokens
        self.budget = budget
        self.command = command
        self.problem = problem
        self.next_call = next_call
        """What the call that was not made could have cost (``up to $0.0020 and 140 tokens``), when it was bounded:
        None when the spending had reached the budget already."""
        super().__init__(self._line())

    def spent(self) -> str:
        """``$2.0100 and 1,234 tokens`` (the dollars only when the budget counts dollars)."""
        # lazy: the price formatting is needed only when a stop is told
        from crewpoint.cost import format_usd

        tokens = f"{self.spent_tokens:,} tokens"
        return f"{format_usd(self.spent_usd)} and {tokens}" if self.budget.usd is not None else tokens

    def why(self) -> str:
        """``" (the next call, up to $0.0020, would pass it)"``, or "" when the budget was reached already."""
        return f" (the next call, {self.next_call}, would pass it)" if self.next_call else ""

    def _line(self) -> str:
        said = f"the run stopped at its budget: spent {self.spent()} of {self.budget}{self.why()}"
        if self.checkpoint_id is None:
            why = self.problem or "the run has no checkpoint store (pass checkpoint=True to resume after a stop)"
            return f"{said}; no checkpoint was written: {why}"
        return f"{said}; checkpoint {self.checkpoint_id[:12]} holds it; go on with: {self.command}"

    def __reduce__(self) -> tuple[Any, ...]:  # keyword-only arguments: pickled through a plain rebuild
        return (_rebuild, (self.__dict__,))


_FIELDS = ("ref", "checkpoint_id", "spent_usd", "spent_tokens", "budget", "command", "problem", "next_call")


def _rebuild(fields: Mapping[str, Any]) -> BudgetExceeded:
    return BudgetExceeded(**{key: fields[key] for key in _FIELDS if key in fields})


# -- metering -------------------------------------------------------------------------------------------------------


@dataclass
class _Meter:
    """One kickoff's count: where the ledger stood when it began, each row's dollars (rows that have not changed
    are the same objects, so each is priced once), and the models already warned about."""

    started: float
    base_usd: float = 0.0
    base_tokens: int = 0
    prices: Prices | None = None
    priced: dict[int, tuple[UsageRow, float | None]] = field(default_factory=dict)
    warned: set[str] = field(default_factory=set)
    seen: dict[tuple[Any, ...], tuple[int, int]] = field(default_factory=dict)
    """Each row's output tokens and requests when it was last looked at (what the calls since made)."""
    largest: dict[tuple[str, str], int] = field(default_factory=dict)
    """``("unit", task or method)`` or ``("agent", role)`` → the largest output one call of it made on the chain."""


_meters: weakref.WeakKeyDictionary[RuntimeState, _Meter] = weakref.WeakKeyDictionary()


def _tokens(row: UsageRow) -> int:
    return row.input_tokens + row.output_tokens + row.reasoning_tokens


def _row_usd(meter: _Meter, row: UsageRow) -> float | None:
    key = id(row)
    kept = meter.priced.get(key)
    if kept is not None and kept[0] is row:
        return kept[1]
    usd = _price(meter, row)
    meter.priced[key] = (row, usd)
    return usd


def _price(meter: _Meter, row: UsageRow) -> float | None:
    # lazy: genai-prices (pydantic and its table) loads with the first dollar budget checked
    from crewpoint.cost import load_prices, price_row

    if meter.prices is None:
        meter.prices = load_prices()
    cost = price_row(row, meter.prices)
    return None if cost.usd is None else float(cost.usd)


def _learn(meter: _Meter, rows: list[UsageRow], part: str) -> None:
    """Note what one call of each task (or method) and agent made at most, from what ``rows`` grew by since they
    were last looked at: one call between two checks (calls are checked one by one), or a row's own average for
    rows counted before (the chain's)."""
    for row in rows:
        unit, agent, requests = row.unit, row.agent, row.requests
        output = row.output_tokens + row.reasoning_tokens  # what the calls made: output, reasoning
        key = (part, unit, agent, row.model, row.provider, row.estimated)
        was_output, was_requests = meter.seen.get(key, (0, 0))
        meter.seen[key] = (output, requests)
        calls = requests - was_requests
        if calls <= 0 or output < was_output:
            continue
        per_call = -(-(output - was_output) // calls)
        for who in _whose(unit, agent):
            meter.largest[who] = max(per_call, meter.largest.get(who, 0))


def _whose(unit: object, agent: object) -> list[tuple[str, str]]:
    return [(kind, name) for kind, name in (("unit", unit), ("agent", agent)) if isinstance(name, str)]


def _bound(state: RuntimeState, meter: _Meter, call: Call, dollars: bool) -> Bound | None:
    """The most ``call`` can cost (see :class:`Bound`), or None when nothing bounds its output (no ``max_tokens``,
    no call of its task or agent so far): such a call may pass the budget, by itself at most."""
    output = call.max_tokens
    if output is None:
        unit = getattr(state, "_usage_method", None) or call.task_id
        roles = getattr(state, "_usage_roles", None)
        role = call.agent_role or (roles.get(call.agent_id or "") if isinstance(roles, dict) else None)
        seen = [meter.largest[who] for who in _whose(unit, role) if who in meter.largest]
        if not seen:
            return None
        output = max(seen)
    # lazy: the usage rules load with the first bounded call
    from crewpoint.usage import UsageRow, estimate_tokens

    prompt = estimate_tokens(call.prompt_chars)
    usd = None
    if dollars:
        row = UsageRow(model=call.model, provider=call.provider, input_tokens=prompt, output_tokens=output, requests=1)
        usd = _price(meter, row._replace(estimated=True))
    return Bound(prompt + output, usd)


def spending_of(rows: list[UsageRow], meter: _Meter | None = None, *, dollars: bool = True) -> Spending:
    """The dollars and tokens of usage ``rows`` (a ledger's), and the models whose price is unknown."""
    meter = meter if meter is not None else _Meter(0.0)
    usd, tokens, unpriced = 0.0, 0, []
    for row in rows:
        tokens += _tokens(row)
        if not dollars:
            continue
        cost = _row_usd(meter, row)
        if cost is None:
            if row.model not in unpriced:
                unpriced.append(row.model)
        else:
            usd += cost
    return Spending(round(usd, 6), tokens, tuple(unpriced))


def _meter_of(state: RuntimeState, budget: Budget) -> _Meter:
    meter = _meters.get(state)
    if meter is None or meter.started != state.run_started:  # a new kickoff counts from here
        meter = _Meter(state.run_started)
        base = spending_of(state.usage.rows(), meter, dollars=budget.usd is not None)
        meter.base_usd, meter.base_tokens = base.usd, base.tokens
        if budget.whole_run:  # what the chain spent before counts as spent by this run
            before = spending_of(state.usage.before, meter, dollars=budget.usd is not None)
            meter.base_usd, meter.base_tokens = meter.base_usd - before.usd, meter.base_tokens - before.tokens
            meter.warned.update(before.unpriced)
        meter.warned.update(base.unpriced)
        _learn(meter, state.usage.before, "before")
        _meters[state] = meter
    return meter


def budget_of(state: RuntimeState) -> Budget | None:
    """The budget of the run ``state`` runs: its entity's ``budget``."""
    budget = getattr(state.root, "budget", None)
    return budget if isinstance(budget, Budget) else None


Over = tuple["RuntimeState", Budget, Spending, Bound | None]
"""The run to stop, its budget, what it spent, and what the call not made could have cost (None: reached already)."""


def over_budget(state: RuntimeState | None, call: Call | None = None) -> Over | None:
    """The run (this one or one it runs inside) that ``call`` would take past its budget, or None: its spending has
    reached the budget, or the most the call can cost (:func:`_bound`) added to it would pass the budget. A call
    nothing bounds is let through: it may pass the budget, by itself at most."""
    while state is not None:
        budget = budget_of(state)
        if budget is not None:
            dollars = budget.usd is not None
            meter = _meter_of(state, budget)
            rows = state.usage.rows()
            _learn(meter, rows, "run")
            now = spending_of(rows, meter, dollars=dollars)
            spent = Spending(round(now.usd - meter.base_usd, 6), now.tokens - meter.base_tokens, now.unpriced)
            for model in spent.unpriced:
                if model not in meter.warned:
                    meter.warned.add(model)
                    _warn_unpriced(model)
            if (budget.usd is not None and spent.usd >= budget.usd) or (
                budget.tokens is not None and spent.tokens >= budget.tokens
            ):
                return state, budget, spent, None
            bound = _bound(state, meter, call, dollars) if call is not None else None
            if bound is not None and (
                (budget.usd is not None and bound.usd is not None and spent.usd + bound.usd > budget.usd)
                or (budget.tokens is not None and spent.tokens + bound.tokens > budget.tokens)
            ):
                return state, budget, spent, bound
        state = state.outer
    return None


def _warn_unpriced(model: str) -> None:
    # logging loads with the first warning, not with the API
    import logging

    logging.getLogger("crewpoint").warning(
        "budget: the price of model %r is unknown, so its dollars cannot be checked against the budget; its tokens "
        "are counted",
        model,
    )


def stop(state: RuntimeState, budget: Budget, spent: Spending, bound: Bound | None, call: Call) -> BudgetExceeded:
    """Stop ``state``'s run at its budget: emit ``budget_exceeded``, write its checkpoint (when the run has a store)
    and answer the :class:`BudgetExceeded` to raise. ``call`` is the call that was not made (model, agent, task)
    and ``bound`` what it could have cost (None when the spending had reached the budget already)."""
    # lazy: the event class and the runtime load only when a run stops at its budget
    from crewpoint.events import BudgetExceededEvent

    # lazy: the runtime imports this module (a run's status reads ``budget`` from its exception)
    from crewpoint.runtime import emit_in, resume_command

    event = BudgetExceededEvent(
        spent_usd=spent.usd if budget.usd is not None else None,
        spent_tokens=spent.tokens,
        budget_usd=budget.usd,
        budget_tokens=budget.tokens,
        source_type="llm",
        **call.fields(),
    )
    emit_in(state, event)
    ref: str | None = None
    checkpoint_id: str | None = None
    problem: str | None = None
    if state.config is not None:
        try:
            ref = state.checkpoint(trigger=TRIGGER)
            checkpoint_id = state.written_id
        except Exception as exc:  # the run stops all the same: say why nothing holds it
            problem = f"the checkpoint could not be written ({' '.join(str(exc).split())})"
    command = ""
    if checkpoint_id is not None:
        base = resume_command(state) or f"crewpoint checkpoint resume {checkpoint_id}"
        command = " ".join([base, *budget.larger().options()])
    return BudgetExceeded(
        ref=ref,
        checkpoint_id=checkpoint_id,
        spent_usd=spent.usd,
        spent_tokens=spent.tokens,
        budget=budget,
        command=command,
        problem=problem,
        next_call=None if bound is None else bound.said(budget.usd is not None),
    )


def check_before_call(call: Call) -> Over | None:
    """Before an LLM call: the run to stop (see :func:`over_budget`), or None to go on. Cheap without a budget; a
    call outside any run (the runtime not even loaded) has none."""
    runtime = sys.modules.get("crewpoint.runtime")
    return None if runtime is None else over_budget(runtime.current_state(), call)
