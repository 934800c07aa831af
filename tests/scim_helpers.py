"""Helpers of the SCIM tests: a SCIM client over the Flask test client, request
bodies as identity providers write them, and bulk fixtures written with store functions."""

from __future__ import annotations

from typing import Any

from flagadmin.store import Connection, scim_tokens
from flagadmin.store import directory as store_directory

BASE = "/scim/v2"
MEDIA_TYPE = "application/scim+json"
USER_SCHEMA = "urn:ietf:params:scim:schemas:core:2.0:User"
GROUP_SCHEMA = "urn:ietf:params:scim:schemas:core:2.0:Group"
ENTERPRISE_SCHEMA = "urn:ietf:params:scim:schemas:extension:enterprise:2.0:User"
PATCH_SCHEMA = "urn:ietf:params:scim:api:messages:2.0:PatchOp"
ERROR_SCHEMA = "urn:ietf:params:scim:api:messages:2.0:Error"
LIST_SCHEMA = "urn:ietf:params:scim:api:messages:2.0:ListResponse"


class Scim:
    """Requests to ``/scim/v2`` with ``Authorization: Bearer <token>`` through ``client``.

    ``content_type`` is what bodies are sent as (Okta sends ``application/json``, Entra
    ``application/scim+json``).
    """

    def __init__(self, client, token: str, content_type: str = MEDIA_TYPE):
        self.client = client
        self.token = token
        self.content_type = content_type

    def headers(self, extra: dict[str, str] | None = None) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token}", **(extra or {})}

    def request(self, method: str, path: str, body: Any = None, **kwargs):
        headers = self.headers(kwargs.pop("headers", None))
        if body is not None:
            kwargs["json"] = body
            headers.setdefault("Content-Type", self.content_type)
        return self.client.open(BASE + path, method=method, headers=headers, **kwargs)

    def get(self, path: str, **kwargs):
        return self.request("GET", path, **kwargs)

    def post(self, path: str, body: Any, **kwargs):
        return self.request("POST", path, body, **kwargs)

    def put(self, path: str, body: Any, **kwargs):
        return self.request("PUT", path, body, **kwargs)

    def patch(self, path: str, *operations: dict, **kwargs):
        return self.request("PATCH", path, patch_body(*operations), **kwargs)

    def delete(self, path: str, **kwargs):
        return self.request("DELETE", path, **kwargs)

    def find_users(self, scim_filter: str, **params) -> list[dict]:
        """The Resources of ``GET /Users?filter=...``."""
        response = self.get("/Users", query_string={"filter": scim_filter, **params})
        assert response.status_code == 200, response.get_json()
        return response.get_json()["Resources"]

    def create_user(self, username: str, **fields) -> dict:
        response = self.post("/Users", user_body(username, **fields))
        assert response.status_code == 201, response.get_json()
        return response.get_json()

    def create_group(self, name: str, members: list[str] = (), **fields) -> dict:
        response = self.post("/Groups", group_body(name, members, **fields))
        assert response.status_code == 201, response.get_json()
        return response.get_json()


def new_scim_token(db: Connection) -> str:
    """Generate the SCIM token (spec 4.5), revoking any earlier one."""
    return scim_tokens.generate(db)


def user_body(username: str, **fields) -> dict:
    """A user as Okta creates it: names, one primary work email, active."""
    given, _, family = (fields.pop("display", None) or username.split("@")[0]).partition(".")
    return {
        "schemas": [USER_SCHEMA],
        "userName": username,
        "name": {"givenName": given.title() or "Given", "familyName": family.title() or "Family"},
        "emails": [
            {
                "primary": True,
                "value": username if "@" in username else f"{username}@example.com",
                "type": "work",
            }
        ],
        "active": True,
        **fields,
    }


def group_body(name: str, members: list[str] = (), **fields) -> dict:
    """A group with the users of ids ``members``."""
    return {
        "schemas": [GROUP_SCHEMA],
        "displayName": name,
        "members": [{"value": member} for member in members],
        **fields,
    }


def patch_body(*operations: dict) -> dict:
    return {"schemas": [PATCH_SCHEMA], "Operations": list(operations)}


def assert_scim_error(response, status: int, scim_type: str | None = None) -> dict:
    """The response is an RFC 7644 error of ``status`` (and ``scim_type``), as SCIM JSON."""
    assert response.status_code == status, (response.status_code, response.get_data(as_text=True)[:500])
    assert response.mimetype == MEDIA_TYPE
    body = response.get_json()
    assert body["schemas"] == [ERROR_SCHEMA]
    assert body["status"] == str(status)
    assert body["detail"]
    if scim_type is not None:
        assert body.get("scimType") == scim_type, body
    return body


def bulk_users(
    db: Connection, count: int, prefix: str = "bulk", now: str = "2026-01-01T00:00:00.000Z"
) -> list[int]:
    """Insert ``count`` SCIM-managed users ``{prefix}00001``... with bulk SQL (not ``count``
    HTTP calls); return their ids in order."""
    users = [
        {
            "username": f"{prefix}{i:05d}",
            "email": f"{prefix}{i:05d}@example.com",
            "email_type": "work",
            "active": 1,
        }
        for i in range(1, count + 1)
    ]
    with db.write("directory"):
        store_directory.bulk_insert_users(db, users, now)
    return list(
        db.values(
            "SELECT id FROM users WHERE username LIKE ? ESCAPE '\\' ORDER BY id",
            [prefix.replace("_", "\\_") + "%"],
        )
    )
