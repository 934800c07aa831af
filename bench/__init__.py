"""flagadmin's benchmark suite: ``python -m bench CASE [options]`` from the repository root.

``python -m bench list`` names the cases; bench/README.md gives the protocol and
bench/RESULTS.md the current figures. The cases live in :mod:`bench.cases`, one module each,
and import only :mod:`bench.lib`.
"""
