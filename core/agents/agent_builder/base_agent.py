"""``BaseAgent`` where a CrewAI project imports it (``crewai.agents.agent_builder.base_agent``, renamed): the
project template annotates its agents with it (``agents: list[BaseAgent]``). crewpoint has one agent class, so
``BaseAgent`` is :class:`crewpoint.Agent`."""

from __future__ import annotations

from crewpoint.agent import Agent as BaseAgent

__all__ = ["BaseAgent"]
