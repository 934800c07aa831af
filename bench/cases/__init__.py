"""The cases of the suite, one module each (``python -m bench list``); each imports
:mod:`bench.lib` and no other case."""
