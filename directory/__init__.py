"""The directory: users and groups provisioned by identity providers over SCIM 2.0.

Users and groups are SCIM resources (RFC 7643) served by a SCIM service provider (RFC 7644:
create, read, replace, PATCH, delete, list with filters, sorting and paging, ``/.search``).
``protocol`` holds the SCIM models, discovery documents and parsing; the rest holds the
resources and flagadmin's own role mappings: the root and project roles a SCIM group grants to
its members. Its bearer token is made by spec 4.5.
"""
