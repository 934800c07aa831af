"""Two classes of fault in what the admin API says when it refuses:

- what callers may learn: a refusal about a taken flag name is the same whoever asks and
  wherever the flag is, and never names a project the caller cannot see;
- errors in flagadmin's own words: no message of any body or query schema is marshmallow's own
  text ("Not a valid string.", "Unknown field.", "Field may not be null.", "String does not
  match expected pattern."), and none quotes a value as a Python repr; each says what was wrong
  and what is accepted.
"""

from __future__ import annotations

import re

import pytest

from flagadmin.web.operations import declared_operations

from flag_helpers import VALIDATE, features_path, flag_path, revive_path
from helpers import auth

pytestmark = pytest.mark.same_on_both_engines

#: marshmallow's own messages (and the start of its numbered ones): none may reach a caller.
MARSHMALLOW = re.compile(
    r"Not a valid|Unknown field\.|Field may not be null|Missing data for required field|"
    r"does not match expected pattern|Invalid input type|Invalid type\.|Invalid value\.|"
    r"Length must be|Longer than maximum|Shorter than minimum|Must be (greater|less|one of)"
)
#: A Python repr of a string, a boolean or None quoted in a message.
PYTHON_REPR = re.compile(r"'[^']*'|\bTrue\b|\bFalse\b|\bNone\b")


def _messages(response) -> list[str]:
    body = response.get_json()
    return [body["message"], *(d["message"] for d in body.get("details", []))]


def _assert_own_words(response) -> None:
    assert response.status_code == 400, response.get_json()
    for message in _messages(response):
        assert not MARSHMALLOW.search(message), message
        assert "{" not in message and not PYTHON_REPR.search(message.replace("'(", "(")), message


# --- what callers may learn -------------------------------------------------------------------


def test_taken_name__same_answer_whoever_asks__no_project_named(client, make_token, db):
    """kenji sees payments and growth only; a live flag of mobile, an archived flag of default
    and a live flag of a project he sees are refused with the same words."""
    kenji = make_token(user="kenji")
    hidden_live = db.value(
        "SELECT name FROM features WHERE project_id = 'mobile' AND archived_at IS NULL LIMIT 1"
    )
    hidden_archived = db.value(
        "SELECT name FROM features WHERE project_id = 'default' AND archived_at IS NOT NULL LIMIT 1"
    )
    seen = db.value("SELECT name FROM features WHERE project_id = 'payments' AND archived_at IS NULL LIMIT 1")
    answers = {}
    for name in (hidden_live, hidden_archived, seen):
        created = client.post(features_path("payments"), json={"name": name}, headers=auth(kenji))
        checked = client.post(VALIDATE, json={"name": name}, headers=auth(kenji))
        for response in (created, checked):
            assert response.status_code == 400
            message = response.get_json()["message"]
            for project in ("mobile", "default", "payments", "growth"):
                assert f'"{project}"' not in message and f"project {project}" not in message
        answers[name] = {r.get_json()["message"].replace(name, "NAME") for r in (created, checked)}
    assert answers[hidden_live] == answers[hidden_archived] == answers[seen]
    assert len(answers[seen]) == 1


def test_revive_and_delete__flag_of_a_project_the_caller_cannot_see__project_not_named(
    client, make_token, db
):
    kenji = make_token(user="kenji")
    name = db.value(
        "SELECT name FROM features WHERE project_id = 'mobile' AND archived_at IS NOT NULL LIMIT 1"
    )
    for response in (
        client.post(revive_path(name), headers=auth(kenji)),
        client.delete(f"/api/admin/archive/{name}", headers=auth(kenji)),
    ):
        assert response.status_code == 403
        assert "mobile" not in response.get_json()["message"].replace(name, "NAME")


# --- errors in flagadmin's own words ----------------------------------------------------------

#: Bodies of the wrong shape, for every kind of mistake marshmallow words by itself.
BAD_BODIES = [
    {"name": {"an": "object"}},
    {"name": None},
    {"name": 42, "type": "nope", "impressionData": "yes", "tags": "none"},
    {"name": "ok-name", "tags": [{"type": "x", "value": "y", "color": "red"}, "tag"]},
    {"name": "ok-name", "unknownField": 1},
    {},
    ["an", "array"],
    "a string",
]


@pytest.mark.parametrize("body", BAD_BODIES, ids=lambda b: repr(b)[:40])
def test_create__bad_body__every_message_in_flagadmins_words(client, alice, body):
    response = client.post(features_path("default"), json=body, headers=auth(alice))
    _assert_own_words(response)


def test_create__object_where_a_string_is_expected__says_what_is_accepted_and_what_was_sent(client, alice):
    response = client.post(features_path("default"), json={"name": {"a": 1}}, headers=auth(alice))
    assert response.get_json()["details"] == [{"message": "name: must be a string; got an object"}]


def test_create__unknown_field__names_the_fields_taken(client, alice):
    response = client.post(
        features_path("default"), json={"name": "ok-name", "colour": 1}, headers=auth(alice)
    )
    (detail,) = response.get_json()["details"]
    assert detail["message"].startswith("colour: is unknown here (the known ones: name, type,")


@pytest.mark.parametrize(
    "body",
    [
        {"type": "nope", "stale": "yes"},
        {"stale": None},
        {"name": 3},
        {"archived": "no"},
    ],
    ids=lambda b: repr(b)[:40],
)
def test_put__bad_body__every_message_in_flagadmins_words(client, alice, body):
    _assert_own_words(client.put(flag_path("default", "checkout-v2"), json=body, headers=auth(alice)))


@pytest.mark.parametrize(
    "patch",
    [
        {"op": "replace"},
        [{"op": "jump", "path": "/stale"}],
        [{"op": "replace", "path": "/type", "value": "nope"}],
        [{"op": "replace", "path": "/stale", "value": "yes"}],
        [{"op": "replace", "path": "/description", "value": {"an": "object"}}],
        [{"op": "remove", "path": "/tags/7"}],
        [{"op": "replace", "path": "description", "value": "x"}],
        [{"op": "copy", "path": "/description"}],
        [{"op": "add", "path": "/stale"}],
        [3],
    ],
    ids=lambda p: repr(p)[:40],
)
def test_patch__bad_patch__every_message_in_flagadmins_words(client, alice, patch):
    _assert_own_words(client.patch(flag_path("default", "checkout-v2"), json=patch, headers=auth(alice)))


def test_every_body_and_query_schema__wrong_kind_everywhere__no_marshmallow_text(
    app, client, admin_token, alice
):
    """Every declared operation that reads a body or a query: each of its fields sent as a
    value of the wrong kind, and one unknown field; the 400 is in flagadmin's words."""
    checked = 0
    for endpoint, op in declared_operations(app):
        schema = op.body_schema or op.query_schema
        if schema is None:
            continue
        token = alice if "favorite" in endpoint else admin_token
        path = re.sub(
            r"<(?:[^:>]+:)?([^>]+)>", lambda m: {"projectId": "default"}.get(m.group(1), "1"), op.rule
        )
        if op.body_schema is not None:
            wrong = {name: {"wrong": ["kind"]} for name in schema.fields} | {"notAField": 1}
            body = [wrong] if schema.many else wrong
            response = client.open(path, method=op.method, json=body, headers=auth(token))
        else:
            query = "&".join(f"{name}=%7B%7D" for name in schema.fields) + "&notAField=1"
            response = client.open(f"{path}?{query}", method=op.method, headers=auth(token))
        if response.status_code != 400:  # refused before the body is read (e.g. no such id)
            continue
        for message in _messages(response):
            assert not MARSHMALLOW.search(message), (endpoint, message)
        checked += 1
    assert checked >= 5
