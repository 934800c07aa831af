"""flagadmin: a small, self-hostable server for the administration API of a feature-flag service.

The contract is ``spec/admin-api.md`` (kept beside the project, not shipped). The package is the
repository root: ``app.py`` holds the application factory and command line, ``store/`` all SQL,
``blueprints/`` one module per operation.
"""

__version__ = "0.1.0"
