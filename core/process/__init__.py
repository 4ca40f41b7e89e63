"""Running the service: the CLI (serve, worker, migrate, dev), supervision, embedded dev servers,
migrations, the settings table generator.
"""
