"""Reading the system event log (spec 2.3, 6) on the reference server's paths: the newest
events (``GET /api/admin/events``), one flag's (``GET /api/admin/events/{featureName}``) and
the search (``GET /api/admin/search/events``) with its filters in the reference's operator
syntax (``IS:value``, ``IS_ANY_OF:a,b``), its dates (``IS:yyyy-MM-dd``) and its paging; each
caller sees the events of the projects she may see, and only root role Admin those of no
project. ``filters`` reads the query's text, ``log`` answers; the SQL is
``store/event_log.py``, and the events are written by ``events.record``."""
