"""The store layer: every SQL statement of flagadmin lives in this package.

Functions take a :class:`sqlite_utils.Database` as first argument and return plain data
(dicts, lists, tuples). Nothing here knows about HTTP.
"""
