"""Evaluation in the server for clients that cannot hold a flag configuration: the reference
server's Frontend API (``/api/frontend``, browser and mobile SDKs) and the OpenFeature Remote
Evaluation Protocol (``/ofrep/v1``), both answered by Unleash's own engine (yggdrasil-engine)
fed the state the Client API serves for the token's environment and projects."""
