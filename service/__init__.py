"""The process: the composition root that wires api/, workers/ and models/ into running programs.

`legacy-planning serve|worker|migrate|dev` (service.cli), the dev runner (service.dev) with its
supervision and embedded PostgreSQL/Redis, the migration runner, the settings table generator.
Nothing below imports this package: api/, workers/, models/ and core/ never import service/.
"""
