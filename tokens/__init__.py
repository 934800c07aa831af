"""API tokens: who may call flagadmin, and their changes as events.

Admin API tokens and personal access tokens (spec 5) are stored as digests only; each creation,
update and revocation records its event (spec 2.3, 6) in the same transaction.
"""
