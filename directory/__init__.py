"""The directory: users and groups provisioned by identity providers over SCIM 2.0, and the
roles groups grant in flagadmin.

Users and groups are SCIM resources (RFC 7643) served by a SCIM service provider (RFC 7644:
create, read, replace, PATCH, delete, list with filters and paging, ``/.search``); its bearer
token is made by spec 4.5. The modules, each naming the RFC sections it implements:

- ``protocol``: SCIM as flagadmin speaks it (models, discovery documents, limits, tolerances,
  reading requests, the error body); no storage.
- ``resources``: what users and groups share (the site, ids, strings, reading bodies).
- ``values``: the JSON type of every attribute kept, checked in every request before it is
  read (a boolean is true or false, never null; a string is a string).
- ``users``, ``groups`` (with ``members``, what requests do to a group's members) and
  ``search`` (``/.search``, above both): the operations of ``/Users`` and ``/Groups``.
- ``role_mappings``: flagadmin's own mappings of groups to root and project roles.

Each SCIM operation reads, checks and writes in one write transaction, records its events
(spec 6: ``user-created``, ``user-updated``, ``user-deleted``, ``group-created``,
``group-updated``, ``group-deleted``, ``group-user-added``, ``group-user-removed``,
``pat-deleted``; ``createdBy`` ``scim-client``) in that transaction, and either all of it
happens or none of it: a request refused halfway leaves nothing written. The directory refuses
with :mod:`flagadmin.refusals` only (``scim_type`` carries RFC 7644 section 3.12's
``scimType``) and knows nothing of HTTP: ``blueprints/scim.py`` renders the refusals as SCIM
errors, the admin API's envelope renders the role mappings' ones.
"""
