"""Ceiling servers: precomputed response bytes, served by the same waitress configuration.

``--mode flask``: one Flask route answering every path (the floor of flagadmin's stack: Flask,
Werkzeug, waitress, no database, no serialization). ``--mode wsgi``: a bare WSGI callable.

Both are served by ``flagadmin.serving.serve``, the waitress set-up of ``flagadmin serve``, so
that only the application differs. Usage:
``python bench/ceilings.py --mode flask --body FILE --port N [--threads 8]``; run.py starts it
pinned to the server's core, like ``flagadmin serve``.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from flask import Flask, Response

from flagadmin.serving import serve

JSON = "application/json"


def flask_app(body: bytes) -> Flask:
    """Return a Flask app whose single route answers ``body`` to GET and POST on any path."""
    app = Flask(__name__)

    @app.route("/<path:path>", methods=["GET", "POST"])
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


def main() -> None:
    """Command line: serve the body until killed."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mode", choices=("flask", "wsgi"), required=True)
    parser.add_argument("--body", type=Path, required=True, help="file holding the response body")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--threads", type=int, default=8, help="waitress threads (as flagadmin serve)")
    args = parser.parse_args()
    body = args.body.read_bytes()
    app = flask_app(body) if args.mode == "flask" else wsgi_app(body)
    serve(app, host="127.0.0.1", port=args.port, threads=args.threads)


if __name__ == "__main__":
    main()
