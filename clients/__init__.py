"""The Client API that backend SDKs read (the reference server's ``/api/client``): the flag
configuration of a token's environment and projects, registrations and metrics of SDK
instances, the applications they make, and the ``lastSeenAt`` of flags that metrics report
(spec 2.6), with ``application-created`` (spec 6)."""
