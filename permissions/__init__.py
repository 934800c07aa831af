"""Permissions and project roles: the reference server's permission names, what the built-in
project roles Owner and Member grant, and custom project roles declared with the permissions they
grant (``flagadmin role``). A refusal is 403 ``NoAccessError`` naming the missing permission and,
where it is scoped, the environment (spec 5.3, 7)."""
