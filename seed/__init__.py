"""Seed documents: JSON files that fill a database (the demo dataset ships here).

``documents`` validates seed documents against the spec's records and loads them in one
transaction; ``demo.json`` is the demo that ``flagadmin serve --demo`` and ``flagadmin seed``
load.
"""
