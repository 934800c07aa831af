"""A view's answer already in its response schema's shape (``web.operations.Wire``):
sent as it is, and held to the schema under TESTING."""

from __future__ import annotations

import pytest
from flask import Blueprint
from marshmallow import Schema, fields

from flagadmin.web.operations import PathParameter, Wire, operation


class PairSchema(Schema):
    first = fields.String(required=True)
    second = fields.Integer(required=True)


@pytest.fixture
def pair_app(make_app):
    """An app with ``GET /api/admin/pairs/<kind>``: ``kind`` ``wire`` answers a Wire in the
    schema's order, ``swapped`` a Wire with the keys the other way round, ``plain`` a dict in
    the other order (dumped). ``make(testing)`` builds it."""

    def make(testing: bool):
        bp = Blueprint("pairs", __name__, url_prefix="/api/admin")

        @operation(
            bp,
            "/pairs/<kind>",
            section="test",
            summary="A pair",
            response=PairSchema(),
            path={"kind": PathParameter("Which answer.")},
        )
        def get_pair(caller, conn, kind):
            if kind == "wire":
                return Wire({"first": "a", "second": 1})
            if kind == "swapped":
                return Wire({"second": 1, "first": "a"})
            return {"second": 1, "first": "a"}

        app = make_app(config={"TESTING": testing})
        app.register_blueprint(bp)
        return app

    return make


def test_wire__in_the_schemas_shape__sent_as_it_is(pair_app, admin_token):
    response = (
        pair_app(True).test_client().get("/api/admin/pairs/wire", headers={"Authorization": admin_token})
    )
    assert response.status_code == 200
    assert response.data == b'{"first":"a","second":1}'


def test_plain_dict__dumped_into_the_schemas_order(pair_app, admin_token):
    response = (
        pair_app(True).test_client().get("/api/admin/pairs/plain", headers={"Authorization": admin_token})
    )
    assert response.data == b'{"first":"a","second":1}'


def test_wire__other_than_its_dump__500_under_testing(pair_app, admin_token, caplog):
    response = (
        pair_app(True).test_client().get("/api/admin/pairs/swapped", headers={"Authorization": admin_token})
    )
    assert response.status_code == 500
    assert "PairSchema dumps this answer as" in caplog.text


def test_wire__not_testing__no_dump_at_all(pair_app, admin_token):
    """Outside TESTING the schema is not run: the Wire's own bytes go out, order included (so
    only the tests' check keeps a Wire to its schema)."""
    response = (
        pair_app(False).test_client().get("/api/admin/pairs/swapped", headers={"Authorization": admin_token})
    )
    assert response.status_code == 200
    assert response.data == b'{"second":1,"first":"a"}'
