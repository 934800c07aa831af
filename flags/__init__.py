"""Flags: feature flags, their projects and environments, and who may change them.

A flag (spec 2.6, the reference server's ``featureSchema``) lives in a project and is on or off
per environment. This package holds the domain of the flag changes made through the reference
server's own paths (create, update, JSON Patch (RFC 6902), switch an environment, archive,
revive, delete, favorite) and of projects, project roles and environments; each change records
its event in the same transaction (spec 2.3, 6). What a caller sees follows spec 5.3: root role,
project role, token kind. The spec's read-only views of flags are 4.2 (the personal dashboard)
and 4.4 (archived flags).
"""
