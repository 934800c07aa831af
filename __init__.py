"""flagadmin: a small, self-hostable server for the administration API of a feature-flag service.

The contract is ``spec/admin-api.md`` (kept beside the project, not shipped). The package is the
repository root: ``app.py`` builds the application, ``cli.py`` is the command line,
``serving.py`` the server; ``web/`` holds the HTTP plumbing, ``blueprints/`` one module per
operation, ``store/`` all SQL; ``spec.py`` the spec's vocabularies and ``records.py`` the
records the API and the seed format share.
"""

__version__ = "0.1.0"
