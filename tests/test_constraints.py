"""Constraints, as a strategy's body carries them (``rules.constraints.normalise``, which
segments share): every operator the reference server accepts, stored in its wire shape; every
operator with wrong values refused with 400 naming the field and nothing stored; strict
semver, RE2 patterns, RFC 3339 dates, numbers; the ``constraints`` and ``constraintValues``
resource limits; and, for any JSON at all, a 400 or a stored list, never another error.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from flagadmin.config import DEFAULT_RESOURCE_LIMITS
from flagadmin.refusals import Invalid
from flagadmin.rules.constraints import LIST_OPERATORS, OPERATORS, SINGLE_VALUE_OPERATORS, normalise

from flag_helpers import assert_reference, last_event_id
from helpers import auth, examples

FLAG = "constrained"
STRATEGIES = f"/api/admin/projects/default/features/{FLAG}/environments/production/strategies"


@pytest.fixture
def flag(client, admin_token):
    response = client.post(
        "/api/admin/projects/default/features", json={"name": FLAG}, headers=auth(admin_token)
    )
    assert response.status_code == 201
    return FLAG


def add(client, token, constraints):
    return client.post(STRATEGIES, json={"name": "default", "constraints": constraints}, headers=auth(token))


def stored(db) -> int:
    return db.value("SELECT count(*) FROM feature_strategies WHERE feature_name = ?", [FLAG])


def c(operator, **members):
    return {"contextName": "appName", "operator": operator, **members}


#: One valid constraint per operator, and what is stored for it.
VALID = [
    (c("IN", values=["a", "b"]), {"values": ["a", "b"]}),
    (c("NOT_IN", values=["a"], inverted=True), {"values": ["a"], "inverted": True}),
    (
        c("STR_STARTS_WITH", values=["app-"], caseInsensitive=True),
        {"values": ["app-"], "caseInsensitive": True},
    ),
    (c("STR_ENDS_WITH", values=["-prod"]), {"values": ["-prod"]}),
    (c("STR_CONTAINS", values=["x" * 100]), {"values": ["x" * 100]}),
    (c("NUM_EQ", value="42"), {"value": "42"}),
    (c("NUM_GT", value="-1.5"), {"value": "-1.5"}),
    (c("NUM_GTE", value="1e3"), {"value": "1e3"}),
    (c("NUM_LT", value="0"), {"value": "0"}),
    (c("NUM_LTE", value="3.25", inverted=True), {"value": "3.25", "inverted": True}),
    (c("DATE_AFTER", value="2026-01-31T12:00:00Z"), {"value": "2026-01-31T12:00:00Z"}),
    (c("DATE_BEFORE", value="2026-01-31T12:00:00.123+02:00"), {"value": "2026-01-31T12:00:00.123+02:00"}),
    (c("SEMVER_EQ", value="1.2.3"), {"value": "1.2.3"}),
    (c("SEMVER_GT", value="1.4.0-beta.1"), {"value": "1.4.0-beta.1"}),
    (c("SEMVER_GTE", value="2.0.0+build.5"), {"value": "2.0.0+build.5"}),
    (c("SEMVER_LT", value="10.20.30-rc.1+meta"), {"value": "10.20.30-rc.1+meta"}),
    (c("SEMVER_LTE", value="0.0.1"), {"value": "0.0.1"}),
    (c("REGEX", value="^app-[0-9]+$"), {"value": "^app-[0-9]+$"}),
    (
        c("REGEX", value="(?i)beta|gamma", caseInsensitive=True),
        {"value": "(?i)beta|gamma", "caseInsensitive": True},
    ),
    # a value sent with a list operator, values with a single-value one: checked, not kept
    (c("IN", values=["a"], value="ignored"), {"values": ["a"]}),
    (c("NUM_EQ", value="1", values=["ignored"]), {"value": "1"}),
]


@pytest.mark.parametrize(
    ("constraint", "kept"), VALID, ids=[f"{v[0]['operator']}-{i}" for i, v in enumerate(VALID)]
)
def test_add__valid_constraint_of_each_operator__stored_in_the_reference_shape(
    client, admin_token, flag, constraint, kept
):
    # Given
    assert_reference(constraint, "constraintSchema")
    # When
    response = add(client, admin_token, [constraint])
    # Then
    assert response.status_code == 200, response.get_json()
    (got,) = response.get_json()["constraints"]
    expected = {
        "contextName": "appName",
        "operator": constraint["operator"],
        "values": [],
        "inverted": False,
        "caseInsensitive": False,
        **kept,
    }
    assert got == expected
    assert list(got) == [
        k for k in ("contextName", "operator", "values", "value", "inverted", "caseInsensitive") if k in got
    ]
    assert_reference(got, "constraintSchema")
    read = client.get(f"{STRATEGIES}/{response.get_json()['id']}", headers=auth(admin_token)).get_json()
    assert read["constraints"] == [expected]


def test_every_operator_of_the_reference_is_accepted():
    assert set(OPERATORS) == set(
        __import__("flag_helpers").SCHEMAS["constraintSchema"]["properties"]["operator"]["enum"]
    )


#: (constraints, the field a detail names): every operator with wrong values, wrong types.
INVALID = [
    ("not a list", "constraints"),
    (["not an object"], "constraints.0"),
    ([c("IN", values=[])], "constraints.0.values"),
    ([c("IN")], "constraints.0.values"),
    ([c("NOT_IN", values="a")], "constraints.0.values"),
    ([c("STR_CONTAINS", values=[""])], "constraints.0.values.0"),
    ([c("STR_STARTS_WITH", values=["x" * 101])], "constraints.0.values.0"),
    ([c("STR_ENDS_WITH", values=[1])], "constraints.0.values.0"),
    ([c("IN", values=[None])], "constraints.0.values.0"),
    ([c("IN", values=[["nested"]])], "constraints.0.values.0"),
    ([c("IN", values=["a"], value=5)], "constraints.0.value"),
    ([c("NUM_EQ")], "constraints.0.value"),
    ([c("NUM_EQ", value=42)], "constraints.0.value"),
    ([c("NUM_GT", value="abc")], "constraints.0.value"),
    ([c("NUM_GTE", value=" 42")], "constraints.0.value"),
    ([c("NUM_LT", value="0x10")], "constraints.0.value"),
    ([c("NUM_LTE", value="NaN")], "constraints.0.value"),
    ([c("NUM_EQ", value="1_000")], "constraints.0.value"),
    ([c("NUM_EQ", value="")], "constraints.0.value"),
    ([c("DATE_AFTER", value="2026-01-31")], "constraints.0.value"),
    ([c("DATE_AFTER", value="2026-01-31T12:00:00")], "constraints.0.value"),
    ([c("DATE_BEFORE", value="2026-02-30T00:00:00Z")], "constraints.0.value"),
    ([c("DATE_BEFORE", value="tomorrow")], "constraints.0.value"),
    ([c("DATE_BEFORE", value=1700000000)], "constraints.0.value"),
    ([c("SEMVER_EQ", value="v1.2.3")], "constraints.0.value"),
    ([c("SEMVER_GT", value="1.2")], "constraints.0.value"),
    ([c("SEMVER_GTE", value="01.2.3")], "constraints.0.value"),
    ([c("SEMVER_LT", value="1.2.3-")], "constraints.0.value"),
    ([c("SEMVER_LTE", value=" 1.2.3")], "constraints.0.value"),
    ([c("REGEX", value="(?=lookahead)")], "constraints.0.value"),
    ([c("REGEX", value="(a)\\1")], "constraints.0.value"),
    ([c("REGEX", value="[unclosed")], "constraints.0.value"),
    ([c("REGEX", value="^a$", inverted=True)], "constraints.0.inverted"),
    ([c("REGEX")], "constraints.0.value"),
    ([c("IN_CIDR", values=["10.0.0.0/8"])], "constraints.0.operator"),
    ([c("in", values=["a"])], "constraints.0.operator"),
    ([{"operator": "IN", "values": ["a"]}], "constraints.0.contextName"),
    ([c("IN", values=["a"], contextName="")], "constraints.0.contextName"),
    ([c("IN", values=["a"], contextName=7)], "constraints.0.contextName"),
    ([c("IN", values=["a"], inverted="true")], "constraints.0.inverted"),
    ([c("IN", values=["a"], caseInsensitive=1)], "constraints.0.caseInsensitive"),
    ([c("IN", values=["a"], extra="x")], "constraints.0.extra"),
    ([c("IN", values=["a"]), c("NUM_EQ", value="x")], "constraints.1.value"),
]


@pytest.mark.parametrize(
    ("constraints", "field"), INVALID, ids=[f"{i}-{v[1]}" for i, v in enumerate(INVALID)]
)
def test_add__invalid_constraint__400_naming_the_field_and_nothing_stored(
    client, admin_token, db, flag, constraints, field
):
    # Given
    before = last_event_id(db)
    # When
    response = add(client, admin_token, constraints)
    # Then
    assert response.status_code == 400, response.get_json()
    body = response.get_json()
    assert body["name"] == "BadDataError"
    assert any(d["message"].startswith(f"{field}:") for d in body["details"]), body
    assert stored(db) == 0 and last_event_id(db) == before


def test_add__several_problems__each_named(client, admin_token, db, flag):
    response = add(client, admin_token, [c("NUM_EQ", value="x"), c("SEMVER_EQ", value="v2.0.0")])
    assert response.status_code == 400
    fields = [d["message"].split(":")[0] for d in response.get_json()["details"]]
    assert fields == ["constraints.0.value", "constraints.1.value"]
    assert "no v before it" in response.get_json()["details"][1]["message"]


# --- resource limits ------------------------------------------------------------------------------


def limited(make_app, **limits):
    return make_app(resource_limits={**DEFAULT_RESOURCE_LIMITS, **limits}).test_client()


def test_add__more_constraints_than_the_limit__400_naming_the_limit(make_app, admin_token, db):
    client = limited(make_app, constraints=3)
    client.post("/api/admin/projects/default/features", json={"name": FLAG}, headers=auth(admin_token))
    assert add(client, admin_token, [c("IN", values=["a"])] * 3).status_code == 200
    response = add(client, admin_token, [c("IN", values=["a"])] * 4)
    assert response.status_code == 400
    message = response.get_json()["details"][0]["message"]
    assert message.startswith("constraints: holds 4 constraints, past the constraints resource limit of 3")
    assert "FLAGADMIN_RESOURCE_LIMITS" in message
    assert stored(db) == 1


def test_add__more_values_than_the_limit__400_naming_the_constraint(make_app, admin_token, db):
    client = limited(make_app, constraintValues=5)
    client.post("/api/admin/projects/default/features", json={"name": FLAG}, headers=auth(admin_token))
    response = add(client, admin_token, [c("IN", values=["a"]), c("IN", values=[str(i) for i in range(6)])])
    assert response.status_code == 400
    assert response.get_json()["details"][0]["message"].startswith(
        "constraints.1.values: holds 6 values, past the constraintValues resource limit of 5"
    )
    assert stored(db) == 0


def test_add__default_limits__a_huge_list_of_values_refused(client, admin_token, db, flag):
    response = add(client, admin_token, [c("IN", values=[f"v{i}" for i in range(5000)])])
    assert response.status_code == 400
    assert "constraintValues resource limit of 250" in response.get_json()["message"]
    assert stored(db) == 0


def test_update__list_stored_past_a_lowered_limit__stored_again_unless_it_grows(make_app, admin_token, db):
    # Given: a strategy with 4 constraints of 6 values, stored under the default limits
    generous = limited(make_app)
    generous.post("/api/admin/projects/default/features", json={"name": FLAG}, headers=auth(admin_token))
    constraints = [c("IN", values=[str(i) for i in range(6)])] * 4
    strategy = add(generous, admin_token, constraints).get_json()["id"]
    # When: the limits are lowered below what is stored
    strict = limited(make_app, constraints=2, constraintValues=3)
    same = strict.put(
        f"{STRATEGIES}/{strategy}",
        json={"name": "default", "constraints": constraints},
        headers=auth(admin_token),
    )
    grown = strict.put(
        f"{STRATEGIES}/{strategy}",
        json={"name": "default", "constraints": [*constraints, c("IN", values=["a"])]},
        headers=auth(admin_token),
    )
    more_values = strict.put(
        f"{STRATEGIES}/{strategy}",
        json={
            "name": "default",
            "constraints": [c("IN", values=[str(i) for i in range(7)]), *constraints[1:]],
        },
        headers=auth(admin_token),
    )
    # Then
    assert same.status_code == 200, same.get_json()
    assert (grown.status_code, more_values.status_code) == (400, 400)


# --- any JSON -----------------------------------------------------------------------------------

_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=20,
)
_member = st.sampled_from(["contextName", "operator", "values", "value", "inverted", "caseInsensitive", "x"])
_constraint = st.dictionaries(
    _member,
    st.one_of(_json, st.sampled_from(OPERATORS), st.lists(st.text(min_size=1, max_size=5), max_size=3)),
    max_size=6,
)


@given(st.one_of(_json, st.lists(_constraint, max_size=4)))
@settings(max_examples=examples(400), deadline=None, suppress_health_check=list(HealthCheck))
def test_normalise__any_json__the_stored_shape_or_invalid_and_nothing_else(document):
    try:
        kept = normalise(document, DEFAULT_RESOURCE_LIMITS)
    except Invalid as refused:
        assert refused.details and all(":" in detail for detail in refused.details)
        return
    for constraint in kept:
        assert constraint["operator"] in OPERATORS
        assert isinstance(constraint["values"], list)
        assert isinstance(constraint["inverted"], bool) and isinstance(constraint["caseInsensitive"], bool)
        if constraint["operator"] in SINGLE_VALUE_OPERATORS:
            assert constraint["values"] == [] and isinstance(constraint["value"], str)
        else:
            assert (
                constraint["operator"] in LIST_OPERATORS
                and constraint["values"]
                and "value" not in constraint
            )
