"""SCIM locations (``meta.location``, ``$ref``, the ``Location`` header; RFC 7643 section 3.1,
RFC 7644 section 3.1) come from the configured service URL (``FLAGADMIN_SERVICE_URL``), never
from the request's ``Host`` header, which the caller chooses."""

from __future__ import annotations

import pytest
from scim_helpers import Scim, group_body, new_scim_token, user_body

HOSTS = ["evil.example", "127.0.0.1:1", "flags.example.com.evil.example", "localhost"]


def all_locations(document) -> list[str]:
    """Every ``location`` and ``$ref`` anywhere in a SCIM document."""
    found = []
    stack = [document]
    while stack:
        value = stack.pop()
        if isinstance(value, dict):
            for key, item in value.items():
                if key in ("location", "$ref") and isinstance(item, str):
                    found.append(item)
                else:
                    stack.append(item)
        elif isinstance(value, list):
            stack.extend(value)
    return found


@pytest.mark.parametrize(
    "service_url, base",
    [
        ("https://flags.example.com", "https://flags.example.com/scim/v2/"),
        ("https://example.com/flags/", "https://example.com/flags/scim/v2/"),
        ("", "/scim/v2/"),
    ],
)
def test_locations__from_the_service_url_whatever_the_host(make_app, db, service_url, base):
    # Given
    client = make_app(service_url=service_url).test_client()
    scim = Scim(client, new_scim_token(db))
    for host in HOSTS:
        headers = {"Host": host, "X-Forwarded-Host": host}
        # When
        created = scim.post("/Users", user_body(f"{host}@example.com"), headers=headers)
        user = created.get_json()
        group = scim.post("/Groups", group_body(f"Group {host}", [user["id"]]), headers=headers)
        answers = [
            user,
            group.get_json(),
            scim.get(f"/Users/{user['id']}", headers=headers).get_json(),
            scim.get("/Users", headers=headers).get_json(),
            scim.get("/Groups", headers=headers).get_json(),
            scim.post("/.search", {"filter": "id pr"}, headers=headers).get_json(),
            scim.get("/ServiceProviderConfig", headers=headers).get_json(),
            scim.get("/ResourceTypes", headers=headers).get_json(),
            scim.get("/Schemas", headers=headers).get_json(),
            scim.patch(
                f"/Users/{user['id']}",
                {"op": "replace", "path": "displayName", "value": "x"},
                headers=headers,
            ).get_json(),
        ]
        # Then
        assert created.status_code == 201 and group.status_code == 201
        assert created.headers["Location"] == f"{base}Users/{user['id']}" == user["meta"]["location"]
        assert group.headers["Location"] == f"{base}Groups/{group.get_json()['id']}"
        locations = [location for answer in answers for location in all_locations(answer)]
        assert f"{base}Users/{user['id']}" in locations  # a member's $ref
        assert f"{base}Groups/{group.get_json()['id']}" in locations  # a user's group's $ref
        assert len(locations) > 10
        for location in locations:
            assert location.startswith(base), (host, location)
            assert host not in location.removeprefix(base), (host, location)
