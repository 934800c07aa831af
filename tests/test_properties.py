"""Any JSON, any depth, any escape: the endpoints that take JSON or a SCIM filter answer 4xx for
whatever a client sends, never 5xx, and write nothing when they refuse (spec 7; RFC 7644
section 3.12 on /scim/v2).

Property-based (hypothesis), through the Flask test client against the test's database: flag
create, update and JSON Patch (RFC 6902); integration create and update; SCIM users and groups
created, replaced and patched; SCIM filters on the lists and in ``/.search``. The bodies are
arbitrary JSON (wide, deep up to thousands of levels, strings with any code point, lone
surrogates included, written as escapes or as the bytes UTF-8 would give them), the fields the
schemas know holding arbitrary values, and raw bytes.

"Nothing written" is checked with a cheap fingerprint taken before and after each refused
request: the row count of every table an endpoint writes, the last event's id, and the rows
the updates aim at. A request that is accepted (2xx) moves the fingerprint on.

The examples are derandomized (the same ones every run, on either engine) and few enough that
the file runs in about a minute on the 2-core machine.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from scim_helpers import BASE, GROUP_SCHEMA, PATCH_SCHEMA, USER_SCHEMA, Scim, new_scim_token

from helpers import auth

#: Shared by every property: the same examples each run, no deadline (the machine is shared),
#: and one database per test function whose state the examples carry on (hence the fixtures).
PROPERTY = settings(
    derandomize=True,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)

FLAGS = "/api/admin/projects/default/features"
FLAG = f"{FLAGS}/dark-mode"
ADDONS = "/api/admin/addons"

#: Tables the endpoints under test write (flags, integrations, the directory, the event log).
WRITTEN_TABLES = (
    "features",
    "feature_environments",
    "feature_tags",
    "integrations",
    "users",
    "directory_groups",
    "directory_group_members",
    "group_root_roles",
    "group_project_roles",
    "events",
)


# --- what is sent ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Deep:
    """An array nested ``levels`` deep, written as brackets (no Python recursion to build it)."""

    levels: int


#: Characters that have broken parsers and databases: lone surrogates, NUL, backslashes and
#: quotes (the escapes of a SCIM filter), brackets, a character outside the BMP.
ODD = ["\ud800", "\udbff", "\udc00", "\udfff", "\x00", "\\", '"', "[", "{", "\u00e9", "\U0001f600", "a", " "]
#: Any text: every code point, surrogates included (written as escapes, or as the three bytes
#: UTF-8 would give one, which is not UTF-8), odd characters often.
any_text = st.text(st.characters(exclude_categories=()), max_size=24) | st.text(
    st.sampled_from(ODD), max_size=8
)
#: Text the fields expect, nearly: short names, with now and then an odd character.
name_like = st.from_regex(r"[a-z][a-z0-9._~-]{0,20}", fullmatch=True) | any_text

#: Odd text only: what a field's value holds when the test aims at escapes and encodings.
odd_text = st.text(st.sampled_from(ODD), min_size=1, max_size=8)
#: Arrays nested around the limit (64), around where Python's recursion stops (about 600 levels
#: of JSON Patch), and around orjson's limit (1,024).
deep_values = st.builds(Deep, st.sampled_from([63, 64, 65, 300, 600, 900, 1023, 1024, 1025, 3000]))

scalars = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | any_text
json_values = st.recursive(
    scalars | deep_values,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(any_text | name_like, inner, max_size=4),
    max_leaves=12,
)


def fields(
    known: dict[str, st.SearchStrategy], required: dict[str, st.SearchStrategy] | None = None
) -> st.SearchStrategy[dict]:
    """An object holding the ``required`` fields (their likely value), some of the ``known``
    ones (their likely value or any JSON), and now and then an unknown one."""
    return st.fixed_dictionaries(
        dict(required or {}),
        optional={
            **{name: strategy | json_values for name, strategy in known.items()},
            "unknown": json_values,
        },
    )


def encode(value: Any, ascii_only: bool) -> bytes:
    """``value`` as JSON text, UTF-8, a lone surrogate written as ``\\udXXX`` (``ascii_only``)
    or as its three bytes (``surrogatepass``): both are what some client sends."""
    return _text(value, ascii_only).encode("utf-8", "surrogatepass")


def _text(value: Any, ascii_only: bool) -> str:
    if isinstance(value, Deep):
        return "[" * value.levels + "]" * value.levels
    if isinstance(value, dict):
        items = (
            f"{json.dumps(str(k), ensure_ascii=ascii_only)}:{_text(v, ascii_only)}" for k, v in value.items()
        )
        return "{" + ",".join(items) + "}"
    if isinstance(value, list):
        return "[" + ",".join(_text(item, ascii_only) for item in value) + "]"
    return json.dumps(value, ensure_ascii=ascii_only)


def bodies(documents: st.SearchStrategy) -> st.SearchStrategy[bytes]:
    """Request bodies: ``documents`` as JSON (escaped or raw), or any bytes at all."""
    return st.builds(encode, documents, st.booleans()) | st.binary(max_size=64)


# --- what must hold ----------------------------------------------------------------------------------


class Fingerprint:
    """The cheap fingerprint of what the endpoints under test write, read with ``db``."""

    def __init__(self, db, rows: dict[str, tuple[str, tuple]]):
        self.db = db
        self.rows = rows  # name -> (SELECT of the rows aimed at, its parameters)

    def take(self) -> dict[str, Any]:
        found: dict[str, Any] = {t: self.db.value(f"SELECT count(*) FROM {t}") for t in WRITTEN_TABLES}
        found["last event"] = self.db.value("SELECT max(id) FROM events")
        for name, (sql, params) in self.rows.items():
            found[name] = [sorted(row.items()) for row in self.db.all(sql, params)]
        return found


class Checker:
    """Sends requests and holds each answer to the properties: never 5xx; a refusal (4xx)
    leaves the fingerprint as it was; an acceptance moves it on."""

    def __init__(self, client, fingerprint: Fingerprint):
        self.client = client
        self.fingerprint = fingerprint
        self.before = fingerprint.take()

    def send(self, method: str, path: str, data: bytes | None = None, headers: dict | None = None):
        response = self.client.open(path, method=method, data=data, headers=headers or {})
        status = response.status_code
        shown = response.get_data()[:300]
        assert status < 500, f"{method} {path} {data[:300] if data else ''!r} answered {status}: {shown!r}"
        after = self.fingerprint.take()
        if status >= 400:
            assert after == self.before, f"{method} {path} refused ({status}) but wrote: {shown!r}"
            assert response.mimetype in ("application/json", "application/scim+json"), response.mimetype
        self.before = after
        return response


@pytest.fixture
def admin_checker(client, db):
    return Checker(
        client,
        Fingerprint(
            db,
            {
                "flag": ("SELECT * FROM features WHERE name = ?", ("dark-mode",)),
                "addon": ("SELECT * FROM integrations WHERE id = ?", (1,)),
            },
        ),
    )


def _json(token: str) -> dict[str, str]:
    return {**auth(token), "Content-Type": "application/json"}


# --- the admin API --------------------------------------------------------------------------------

flag_fields = fields(
    required={"name": name_like},
    known={
        "type": st.sampled_from(["release", "experiment", "operational", "kill-switch", "permission"]),
        "description": any_text,
        "impressionData": st.booleans(),
        "stale": st.booleans(),
        "tags": st.lists(st.fixed_dictionaries({"type": name_like, "value": any_text}), max_size=2),
    },
)


@settings(PROPERTY, max_examples=60)
@given(body=bodies(flag_fields | json_values))
def test_flag_create__any_body__never_5xx_nothing_written_on_refusal(admin_checker, admin_token, body):
    admin_checker.send("POST", FLAGS, body, _json(admin_token))


@settings(PROPERTY, max_examples=60)
@given(body=bodies(flag_fields | json_values))
def test_flag_update__any_body__never_5xx_nothing_written_on_refusal(admin_checker, admin_token, body):
    admin_checker.send("PUT", FLAG, body, _json(admin_token))


patch_operations = st.lists(
    fields(
        required={
            "op": st.sampled_from(["add", "remove", "replace", "move", "copy", "test"]),
            "path": st.sampled_from(["/description", "/type", "/stale", "/impressionData", "/name", "", "/"]),
        },
        known={
            "from": st.sampled_from(["/description", "/type", "/environments/0", "/x"]),
            "value": deep_values | odd_text | json_values,
        },
    ),
    min_size=1,
    max_size=3,
)


def _patch(op: str, levels: int) -> bytes:
    """A JSON Patch of one operation on /description whose value nests ``levels`` deep."""
    return b'[{"op": "%s", "path": "/description", "value": %s}]' % (op.encode(), encode(Deep(levels), True))


@settings(PROPERTY, max_examples=150)
@given(body=bodies(patch_operations | json_values))
@example(body=_patch("replace", 600))  # once 500: RecursionError in jsonpatch
@example(body=_patch("test", 1000))  # once 500: RecursionError in its message
def test_flag_json_patch__any_operations__never_5xx_nothing_written_on_refusal(
    admin_checker, admin_token, body
):
    admin_checker.send("PATCH", FLAG, body, _json(admin_token))


addon_fields = fields(
    required={"provider": st.sampled_from(["webhook", "slack", "teams"])},
    known={
        "enabled": st.booleans(),
        "description": any_text,
        "parameters": st.fixed_dictionaries(
            {},
            optional={
                "url": st.sampled_from(["http://127.0.0.1:9099/hook", "ftp://x", ""]) | any_text,
                "bodyTemplate": any_text,
                "customHeaders": any_text,
                "secret": any_text,
            },
        ),
        "events": st.lists(st.sampled_from(["feature-created", "feature-updated"]) | any_text, max_size=3),
        "projects": st.lists(st.sampled_from(["default", "*"]) | any_text, max_size=2),
        "environments": st.lists(any_text, max_size=2),
    },
)


@settings(PROPERTY, max_examples=50)
@given(method_path=st.sampled_from([("POST", ADDONS), ("PUT", f"{ADDONS}/1")]), body=bodies(addon_fields))
def test_addons_create_and_update__any_body__never_5xx_nothing_written_on_refusal(
    admin_checker, admin_token, method_path, body
):
    method, path = method_path
    admin_checker.send(method, path, body, _json(admin_token))


# --- SCIM ----------------------------------------------------------------------------------------------


@pytest.fixture
def scim_checker(client, db):
    """A checker for SCIM, with one user and one group made through SCIM to aim at."""
    scim = Scim(client, new_scim_token(db))
    user = scim.create_user("target.user")
    group = scim.create_group("Target group", [user["id"]])
    checker = Checker(
        client,
        Fingerprint(
            db,
            {
                "user": ("SELECT * FROM users WHERE username = ?", ("target.user",)),
                "group": ("SELECT * FROM directory_groups WHERE display_name = ?", ("Target group",)),
            },
        ),
    )
    checker.scim = scim
    checker.user_id, checker.group_id = user["id"], group["id"]
    return checker


def _scim_headers(checker: Checker) -> dict[str, str]:
    return checker.scim.headers({"Content-Type": "application/scim+json"})


user_fields = fields(
    required={"schemas": st.just([USER_SCHEMA]), "userName": name_like},
    known={
        "externalId": any_text,
        "displayName": any_text,
        "active": st.booleans(),
        "name": st.fixed_dictionaries({}, optional={"givenName": any_text, "familyName": any_text}),
        "emails": st.lists(
            st.fixed_dictionaries({"value": any_text}, optional={"primary": st.booleans(), "type": any_text}),
            max_size=2,
        ),
    },
)
group_fields = fields(
    required={"schemas": st.just([GROUP_SCHEMA]), "displayName": name_like},
    known={
        "externalId": any_text,
        "members": st.lists(st.fixed_dictionaries({"value": any_text | st.just("1")}), max_size=3),
    },
)
scim_patch = fields(
    required={
        "schemas": st.just([PATCH_SCHEMA]),
        "Operations": st.lists(
            fields(
                required={"op": st.sampled_from(["add", "remove", "replace", "Add", "Replace"])},
                known={
                    "path": st.sampled_from(
                        ["displayName", "active", "members", 'emails[type eq "work"].value', "name.givenName"]
                    )
                    | st.builds(lambda value: f"members[value eq {json.dumps(value)}]", any_text)
                    | any_text,
                    "value": deep_values | odd_text | json_values,
                },
            ),
            max_size=3,
        ),
    },
    known={},
)


@settings(PROPERTY, max_examples=60)
@given(
    target=st.sampled_from(["create", "replace", "patch"]),
    body=bodies(user_fields | scim_patch | json_values),
)
@example(  # a PATCH path holding a filter whose value is the escape of a lone surrogate
    target="patch",
    body=b'{"schemas": ["%s"], "Operations": [{"op": "remove", "path": "emails[value eq \\"\\\\udc00\\"]"}]}'
    % PATCH_SCHEMA.encode(),
)
def test_scim_users__any_body__never_5xx_nothing_written_on_refusal(scim_checker, target, body):
    path = f"{BASE}/Users" + ("" if target == "create" else f"/{scim_checker.user_id}")
    method = {"create": "POST", "replace": "PUT", "patch": "PATCH"}[target]
    scim_checker.send(method, path, body, _scim_headers(scim_checker))


@settings(PROPERTY, max_examples=60)
@given(
    target=st.sampled_from(["create", "replace", "patch"]),
    body=bodies(group_fields | scim_patch | json_values),
)
def test_scim_groups__any_body__never_5xx_nothing_written_on_refusal(scim_checker, target, body):
    path = f"{BASE}/Groups" + ("" if target == "create" else f"/{scim_checker.group_id}")
    method = {"create": "POST", "replace": "PUT", "patch": "PATCH"}[target]
    scim_checker.send(method, path, body, _scim_headers(scim_checker))


#: SCIM filters (RFC 7644 section 3.4.2.2): mostly well formed, with any value (lone surrogates
#: as escapes included), now and then any text at all.
comparisons = st.builds(
    lambda attribute, operator, value: f"{attribute} {operator} {value}",
    st.sampled_from(["displayName", "externalId", "userName", "emails.value", "meta.lastModified", "id"]),
    st.sampled_from(["eq", "ne", "co", "sw", "ew", "gt", "ge", "lt", "le"]),
    st.builds(json.dumps, odd_text) | st.builds(json.dumps, scalars) | any_text,
)
filters = (
    st.recursive(
        comparisons | st.builds(lambda a: f"{a} pr", st.sampled_from(["displayName", "members", "title"])),
        lambda inner: (
            st.builds(lambda a, op, b: f"{a} {op} {b}", inner, st.sampled_from(["and", "or"]), inner)
            | st.builds(lambda a: f"not ({a})", inner)
        ),
        max_leaves=4,
    )
    | st.builds(lambda value: f"emails[value eq {json.dumps(value)}]", odd_text)
    | any_text
)


@settings(PROPERTY, max_examples=80)
@given(resource=st.sampled_from(["Users", "Groups"]), scim_filter=filters, ascii_only=st.booleans())
# once 500: the value the filter decoded could not be encoded for the database
@example(resource="Users", scim_filter='userName eq "\\ud800"', ascii_only=True)
def test_scim_filters__any_filter__never_5xx_nothing_written(scim_checker, resource, scim_filter, ascii_only):
    # The filter percent-encoded as UTF-8 (a lone surrogate as the bytes UTF-8 would give it)
    query = "filter=" + quote(scim_filter.encode("utf-8", "surrogatepass"), safe="")
    response = scim_checker.send("GET", f"{BASE}/{resource}?{query}", headers=scim_checker.scim.headers())
    assert response.status_code in (200, 400), response.get_data()[:300]
    # The same filter in a search body, as JSON (escaped or as bytes)
    search = {"schemas": ["urn:ietf:params:scim:api:messages:2.0:SearchRequest"], "filter": scim_filter}
    response = scim_checker.send(
        "POST", f"{BASE}/{resource}/.search", encode(search, ascii_only), _scim_headers(scim_checker)
    )
    assert response.status_code in (200, 400), response.get_data()[:300]
