"""Ceiling servers: precomputed response bytes, served by the same waitress configuration.

``--mode flask``: one Flask route answering every path (the floor of flagadmin's stack: Flask,
Werkzeug, waitress, no database, no serialization). ``--mode wsgi``: a bare WSGI callable.

Both are served by ``flagadmin.serving.serve``, the waitress set-up of ``flagadmin serve``, so
that only the application differs. Usage:
``python bench/ceilings.py --mode flask --body FILE --port N [--threads 8]``; run.py starts it
pinned to the server's core, like ``flagadmin serve``.

``--index FILE`` instead of ``--body``: answers chosen per request (traffic.py, where requests
differ: distinct users, a mix of operations, gzip accepted). The index is a JSON list of
entries ``{"method", "path", "query", "auth", "gzip", "status", "headers", "body"}`` (``body``: a
file name relative to the index; ``query`` or ``auth`` null: any); a request takes the entry of
its method, path, query string, ``Authorization`` and whether its ``Accept-Encoding`` names gzip,
the exact query and token first. A request no entry answers gets a 500, which wrk counts.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from flask import Flask, Response, request

from flagadmin.serving import serve

JSON = "application/json"


def flask_app(body: bytes) -> Flask:
    """Return a Flask app whose single route answers ``body`` to GET, POST and DELETE on any
    path."""
    app = Flask(__name__)

    @app.route("/<path:path>", methods=["GET", "POST", "DELETE"])
    def answer(path: str) -> Response:
        return Response(body, mimetype=JSON)

    return app


def wsgi_app(body: bytes):
    """Return a bare WSGI callable that answers ``body`` to every request."""
    headers = [("Content-Type", JSON), ("Content-Length", str(len(body)))]

    def app(environ, start_response):
        start_response("200 OK", headers)
        return [body]

    return app


#: An answer of the index: status, headers (name, value pairs), body.
Answer = tuple[int, list[tuple[str, str]], bytes]
#: Methods a keyed ceiling answers.
METHODS = ["GET", "POST", "PUT", "PATCH", "DELETE"]


def load_index(index: Path) -> dict[tuple, Answer]:
    """Read an index (see the module's docstring): answers by (method, path, query, auth, gzip)."""
    table = {}
    for entry in json.loads(index.read_text()):
        body = (index.parent / entry["body"]).read_bytes()
        headers = [(k, v) for k, v in entry["headers"]] + [("Content-Length", str(len(body)))]
        key = (entry["method"], entry["path"], entry["query"], entry["auth"], entry["gzip"])
        table[key] = (entry["status"], headers, body)
    return table


def lookup(
    table: dict[tuple, Answer], method: str, path: str, query: str, auth: str | None, accept_encoding: str
) -> Answer | None:
    """The answer of the index to a request: exact query and token first, then either as any."""
    gzip = "gzip" in accept_encoding
    for key in (
        (method, path, query, auth, gzip),
        (method, path, None, auth, gzip),
        (method, path, query, None, gzip),
        (method, path, None, None, gzip),
    ):
        found = table.get(key)
        if found is not None:
            return found
    return None


MISSING: Answer = (500, [("Content-Type", "text/plain")], b"no answer in the index for this request")


def flask_keyed_app(table: dict[tuple, Answer]) -> Flask:
    """Return a Flask app answering each request from ``table`` (see :func:`lookup`)."""
    app = Flask(__name__)

    @app.route("/<path:path>", methods=METHODS)
    def answer(path: str) -> Response:
        status, headers, body = (
            lookup(
                table,
                request.method,
                request.path,
                request.query_string.decode("latin-1"),
                request.headers.get("Authorization"),
                request.headers.get("Accept-Encoding", ""),
            )
            or MISSING
        )
        return Response(body, status=status, headers=headers)

    return app


def wsgi_keyed_app(table: dict[tuple, Answer]):
    """Return a bare WSGI callable answering each request from ``table``."""
    reasons = {200: "200 OK", 201: "201 Created", 202: "202 Accepted", 204: "204 No Content"}

    def app(environ, start_response):
        status, headers, body = (
            lookup(
                table,
                environ["REQUEST_METHOD"],
                environ.get("PATH_INFO", ""),
                environ.get("QUERY_STRING", ""),
                environ.get("HTTP_AUTHORIZATION"),
                environ.get("HTTP_ACCEPT_ENCODING", ""),
            )
            or MISSING
        )
        start_response(reasons.get(status, f"{status} Status"), headers)
        return [body]

    return app


def main() -> None:
    """Command line: serve the body until killed."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mode", choices=("flask", "wsgi"), required=True)
    bodies = parser.add_mutually_exclusive_group(required=True)
    bodies.add_argument("--body", type=Path, help="file holding the response body")
    bodies.add_argument("--index", type=Path, help="index of answers chosen per request (traffic.py)")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--threads", type=int, default=8, help="waitress threads (as flagadmin serve)")
    args = parser.parse_args()
    if args.index:
        table = load_index(args.index)
        app = flask_keyed_app(table) if args.mode == "flask" else wsgi_keyed_app(table)
    else:
        body = args.body.read_bytes()
        app = flask_app(body) if args.mode == "flask" else wsgi_app(body)
    serve(app, host="127.0.0.1", port=args.port, threads=args.threads)


if __name__ == "__main__":
    main()
