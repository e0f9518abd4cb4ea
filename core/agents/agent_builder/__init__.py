"""CrewAI's ``crewai.agents.agent_builder`` package, renamed: what a CrewAI project imports from it."""
