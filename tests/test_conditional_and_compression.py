"""ETags with 304 for 4.2, 4.3 and 4.4, gzip when asked, and the dashboard's reuse of answers
that stays exact: a seed load or a flag reaching its lifetime gives a new answer."""

from __future__ import annotations

import gzip
import json
from datetime import UTC, datetime, timedelta

import pytest

from flagadmin.timestamps import format_rfc3339

from helpers import auth

DASHBOARD = "/api/admin/personal-dashboard"
CONDITIONAL = [DASHBOARD, "/api/admin/ui-config", "/api/admin/archive/features"]


@pytest.mark.parametrize("path", CONDITIONAL)
def test_conditional__same_etag__304_without_body(client, alice, assert_valid, path):
    # Given
    first = client.get(path, headers=auth(alice))
    etag = first.headers["ETag"]
    # When
    again = client.get(path, headers={**auth(alice), "If-None-Match": etag})
    # Then
    assert first.status_code == 200
    assert again.status_code == 304
    assert again.get_data() == b""
    assert again.headers["ETag"] == etag


@pytest.mark.parametrize("path", [DASHBOARD, "/api/admin/archive/features"])  # ui-config: under 1 KiB
def test_conditional__gzip_variant_of_the_etag__304_without_body(client, alice, assert_valid, path):
    # Given: a gzipped answer, whose ETag names its encoding
    first = client.get(path, headers={**auth(alice), "Accept-Encoding": "gzip"})
    etag = first.headers["ETag"]
    # When: the same client revalidates it
    again = client.get(path, headers={**auth(alice), "Accept-Encoding": "gzip", "If-None-Match": etag})
    # Then
    assert first.headers["Content-Encoding"] == "gzip" and etag.endswith(':gzip"')
    assert again.status_code == 304
    assert again.get_data() == b""
    assert again.headers["ETag"] == etag
    assert_valid(again, path)


@pytest.mark.parametrize("path", CONDITIONAL)
def test_conditional__answer__private_no_cache_so_the_client_revalidates(client, alice, path):
    first = client.get(path, headers=auth(alice))
    again = client.get(path, headers={**auth(alice), "If-None-Match": first.headers["ETag"]})
    assert first.headers["Cache-Control"] == "private, no-cache"
    assert again.headers["Cache-Control"] == "private, no-cache"


@pytest.mark.parametrize("path", CONDITIONAL)
def test_conditional__other_etag__200_with_body(client, alice, path):
    response = client.get(path, headers={**auth(alice), "If-None-Match": '"not-it"'})
    assert response.status_code == 200
    assert response.get_json()


def test_archive__etag__differs_by_what_the_caller_sees(client, alice, victor):
    path = "/api/admin/archive/features"
    assert (
        client.get(path, headers=auth(alice)).headers["ETag"]
        != client.get(path, headers=auth(victor)).headers["ETag"]
    )


def test_archive__seed_load__new_etag_and_new_flag(client, seed, admin_token):
    # Given
    path = "/api/admin/archive/features"
    before = client.get(path, headers=auth(admin_token))
    # When: a flag is archived by a seed load
    seed(
        {
            "features": [
                {
                    "name": "late-archive",
                    "project": "default",
                    "type": "release",
                    "createdAt": "2026-01-01T00:00:00Z",
                    "archivedAt": "2026-11-01T00:00:00Z",
                }
            ]
        },
    )
    after = client.get(path, headers={**auth(admin_token), "If-None-Match": before.headers["ETag"]})
    # Then
    assert after.status_code == 200
    assert "late-archive" in {f["name"] for f in after.get_json()["features"]}


def test_gzip__large_answer__compressed_when_accepted(client, admin_token):
    plain = client.get("/api/admin/addons/1/events?limit=100", headers=auth(admin_token))
    packed = client.get(
        "/api/admin/addons/1/events?limit=100", headers={**auth(admin_token), "Accept-Encoding": "gzip"}
    )
    assert "Content-Encoding" not in plain.headers
    assert packed.headers["Content-Encoding"] == "gzip"
    assert len(packed.get_data()) < len(plain.get_data()) / 3
    assert json.loads(gzip.decompress(packed.get_data())) == plain.get_json()


@pytest.mark.parametrize("keep_whole", [0, 2500], ids=["streamed", "kept whole"])
def test_gzip__archive_streamed_or_kept__compressed_and_whole(make_app, admin_token, keep_whole):
    client = make_app(config={"ARCHIVE_KEEP_WHOLE_FLAGS": keep_whole}).test_client()
    path = "/api/admin/archive/features"
    plain = client.get(path, headers=auth(admin_token))
    assert ("Content-Length" in plain.headers) == (keep_whole > 0)  # a streamed body has no length
    packed = client.get(path, headers={**auth(admin_token), "Accept-Encoding": "gzip"})
    again = client.get(path, headers={**auth(admin_token), "Accept-Encoding": "gzip"})
    assert packed.headers["Content-Encoding"] == "gzip"
    assert json.loads(gzip.decompress(packed.get_data())) == plain.get_json()
    assert again.get_data() == packed.get_data()
    assert packed.headers["ETag"] == plain.headers["ETag"][:-1] + ':gzip"'


def test_archive__kept_whole__same_bytes_as_streamed(make_app, admin_token, alice, victor):
    """Answers kept whole are the bytes the streamed body would have sent, for every view."""
    streamed = make_app(config={"ARCHIVE_KEEP_WHOLE_FLAGS": 0}).test_client()
    kept = make_app().test_client()
    path = "/api/admin/archive/features"
    for token in (admin_token, alice, victor):
        whole = kept.get(path, headers=auth(token)).get_data()
        assert whole == streamed.get(path, headers=auth(token)).get_data()


def test_dashboard__seed_load__next_answer_sees_it(client, seed, alice):
    # Given: alice's dashboard, answered (and kept) once
    before = client.get(DASHBOARD, headers=auth(alice)).get_json()
    # When: a flag of hers is created, by a seed load
    seed(
        {
            "features": [
                {
                    "name": "fresh-flag",
                    "project": "mobile",
                    "type": "release",
                    "createdAt": format_rfc3339(datetime.now(UTC)),
                    "createdByUserId": 2,
                }
            ]
        },
    )
    after = client.get(DASHBOARD, headers=auth(alice)).get_json()
    # Then
    assert "fresh-flag" not in {f["name"] for f in before["flags"]}
    assert after["flags"][0]["name"] == "fresh-flag"


def test_dashboard__flag_reaches_its_lifetime__health_changes_without_a_write(
    make_app, seed, make_token, clock
):
    # Given: a project of one release flag that turns potentially stale in one hour
    client = make_app(config={"CLOCK": clock}).test_client()
    now = clock.now()
    seed(
        {
            "users": [{"id": 700, "username": "tess", "rootRole": "Viewer"}],
            "projects": [{"id": "timed", "name": "Timed", "members": [{"userId": 700, "role": "Owner"}]}],
            "features": [
                {
                    "name": "timed-flag",
                    "project": "timed",
                    "type": "release",
                    "createdAt": format_rfc3339(now - timedelta(days=40) + timedelta(hours=1)),
                }
            ],
        },
    )
    token = make_token(user="tess")
    healthy = client.get(DASHBOARD, headers=auth(token)).get_json()["projects"][0]["health"]
    # When: two hours pass, and nothing is written
    clock.advance(2 * 3600)
    stale = client.get(DASHBOARD, headers=auth(token)).get_json()["projects"][0]["health"]
    # Then
    assert (healthy, stale) == (100, 0)


def test_dashboard__other_writes__answer_reused(client, alice, admin_token, monkeypatch, answer_cache):
    """Token and SCIM writes do not touch the data behind 4.2: its answer is reused."""
    if not answer_cache:
        pytest.skip("this test is about the answer cache, which --answer-cache=off turns off")
    # Given: a count of the dashboard's projects query
    from flagadmin.store import personal_dashboard as store

    calls = []
    original = store.projects
    monkeypatch.setattr(store, "projects", lambda *args: calls.append(1) or original(*args))
    first = client.get(DASHBOARD, headers=auth(alice)).get_data()
    # When: a SCIM token is generated (a write) and the dashboard asked again
    assert (
        client.post("/api/admin/scim-settings/generate-new-token", headers=auth(admin_token)).status_code
        == 200
    )
    again = client.get(DASHBOARD, headers=auth(alice)).get_data()
    # Then: computed once, the same bytes twice
    assert calls == [1]
    assert again == first


# Every path that answers from a kept answer or a 304, and the write whose answer the
# compression hook encodes: each representation varies on Accept-Encoding (RFC 9110 12.5.5),
# so a shared cache never hands a gzip body to a client that did not ask for one.
VARIED = [*CONDITIONAL, "/api/admin/addons/1/events?limit=100"]


@pytest.mark.parametrize("path", VARIED)
@pytest.mark.parametrize("coding", ["gzip", "identity"])
def test_vary__every_answer_and_its_304__vary_accept_encoding(client, admin_token, alice, path, coding):
    # Given: the log is the admin's to read, the other answers alice's
    headers = {**auth(alice if path in CONDITIONAL else admin_token), "Accept-Encoding": coding}
    first = client.get(path, headers=headers)
    # When: the same request, then its revalidation where the operation is conditional
    again = client.get(path, headers={**headers, "If-None-Match": first.headers.get("ETag", '"none"')})
    # Then
    assert first.status_code == 200
    assert first.headers["Vary"] == "Accept-Encoding"
    assert again.headers["Vary"] == "Accept-Encoding"
    assert again.status_code == (304 if path in CONDITIONAL else 200)
    if coding == "identity":
        assert "Content-Encoding" not in first.headers


def test_vary__written_answer__compressed_by_the_hook_when_large_and_accepted(client, admin_token):
    # Given: a flag whose description makes its answer larger than the 1 KiB gzip bound
    body = {"name": "vary-large", "type": "release", "description": "d" * 3000}
    # When
    created = client.post(
        "/api/admin/projects/default/features",
        headers={**auth(admin_token), "Accept-Encoding": "gzip"},
        json=body,
    )
    # Then: the hook compressed it and said so
    assert created.status_code == 201
    assert created.headers["Content-Encoding"] == "gzip"
    assert created.headers["Vary"] == "Accept-Encoding"
    assert json.loads(gzip.decompress(created.get_data()))["description"] == "d" * 3000


@pytest.mark.parametrize(
    ("body", "status"),
    [({"name": "vary-small", "type": "release"}, 201), ({"name": "bad name!"}, 400)],
)
def test_vary__small_written_answer_or_error__sent_as_is_and_still_varies(client, admin_token, body, status):
    # Given: a write whose answer (a flag, or an error) is under the 1 KiB gzip bound
    # When: the client accepts gzip
    response = client.post(
        "/api/admin/projects/default/features",
        headers={**auth(admin_token), "Accept-Encoding": "gzip"},
        json=body,
    )
    # Then: sent as it is, JSON, and varying on Accept-Encoding like every other answer
    assert response.status_code == status
    assert len(response.get_data()) < 1024
    assert "Content-Encoding" not in response.headers
    assert response.headers["Vary"] == "Accept-Encoding"
    assert response.mimetype == "application/json"
    assert response.get_json()["name"] == ("vary-small" if status == 201 else "BadDataError")
