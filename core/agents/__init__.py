"""CrewAI's ``crewai.agents`` package, renamed: what a CrewAI project imports from it."""
