"""The HTTP plumbing of flagadmin, shared by every blueprint.

- ``state``: the one state object per app (settings, clock, caches, connections);
- ``cache``: the one cache mechanism (:class:`~flagadmin.web.cache.AnswerCache`);
- ``database``: each waitress thread's database connection;
- ``operations``: declaring an operation once (route, permission, schemas, statuses);
- ``auth`` and ``throttle``: who is calling, what they may do, slowing down failures;
- ``errors``: the one error envelope of spec 7;
- ``headers``: caching rules, security headers, CORS and gzip;
- ``access_log``: one line per request, no secrets;
- ``inflight``: requests in progress, counted, so that background work can yield to them;
- ``openapi``: the OpenAPI document, built from the declared views;
- ``fields`` and ``jsonio``: marshmallow fields and JSON in and out.
"""
