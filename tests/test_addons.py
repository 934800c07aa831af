"""Integration configurations: ``/api/admin/addons`` and ``/api/admin/addons/{id}`` (the
reference server's bodies; spec 2.2 names the configuration that 4.1's id points at), and the
events their changes record (spec 2.3, 6)."""

from __future__ import annotations

import orjson
import pytest

from flagadmin.store import deliveries, integration_events
from flagadmin.store import events as store_events

from helpers import auth
from receiver import Receiver

ADDONS = "/api/admin/addons"
ADDON = "/api/admin/addons/{id}"
#: The URL of configurations that are saved and never sent (no worker runs here); a test that
#: sends (``/test``) points its configuration at its own :class:`Receiver` on a free port.
RECEIVER = "http://127.0.0.1/saved-never-sent"


def config(**changes) -> dict:
    """A valid webhook configuration body, with ``changes``."""
    body = {
        "provider": "webhook",
        "enabled": True,
        "description": "Posts flag changes to the release channel",
        "parameters": {
            "url": RECEIVER,
            "authorization": "Bearer s3cret",
            "customHeaders": '{"X-Team": "release"}',
            "secret": "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
        },
        "events": ["feature-created", "addon-config-updated"],
        "projects": ["default"],
        "environments": [],
    }
    body.update(changes)
    return body


@pytest.fixture
def app(make_app):
    """The app, allowed to reach 127.0.0.1 (the tests' receivers); test_ssrf.py tests the guard."""
    return make_app(integrations_allowed_hosts=("127.0.0.1",))


@pytest.fixture
def receiver():
    started = Receiver()
    yield started
    started.close()


def newest_events(db, n: int = 5) -> list[dict]:
    return store_events.latest(db, limit=n)


def test_list__seeded_configurations__secrets_masked_and_webhook_provider_described(
    client, admin_token, assert_valid
):
    # When
    response = client.get(ADDONS, headers=auth(admin_token))
    # Then
    assert response.status_code == 200
    assert_valid(response, ADDONS)
    body = response.get_json()
    by_id = {addon["id"]: addon for addon in body["addons"]}
    assert sorted(by_id) == [1, 2, 3, 4, 5, 6]
    assert by_id[1]["parameters"] == {"url": "*****", "authorization": "*****", "customHeaders": "*****"}
    assert by_id[4]["parameters"]["contentType"] == "text/plain"  # not sensitive: shown
    assert by_id[6]["parameters"] == {"accessToken": "*****"}  # the reference's slack-app
    (provider,) = body["providers"]
    assert provider["name"] == "webhook"
    parameters = {p["name"]: p for p in provider["parameters"]}
    assert set(parameters) == {
        "url",
        "contentType",
        "authorization",
        "customHeaders",
        "bodyTemplate",
        "secret",
    }
    assert parameters["url"]["required"] and parameters["url"]["sensitive"]
    assert not parameters["contentType"]["sensitive"] and not parameters["bodyTemplate"]["sensitive"]
    assert "feature-created" in provider["events"]


def test_create__valid_webhook__201_masked_and_stored_with_its_event(client, admin_token, db, assert_valid):
    # When
    response = client.post(ADDONS, json=config(), headers=auth(admin_token))
    # Then: 201 with the configuration, secrets masked
    assert response.status_code == 201, response.get_json()
    assert_valid(response, ADDONS, "post")
    created = response.get_json()
    assert created["parameters"] == {
        "url": "*****",
        "authorization": "*****",
        "customHeaders": "*****",
        "secret": "*****",
    }
    assert created["events"] == ["feature-created", "addon-config-updated"]
    assert created["createdAt"] and created["maxInFlight"] is None
    # the real values are stored
    stored = db.one("SELECT parameters FROM integrations WHERE id = ?", [created["id"]])
    assert orjson.loads(stored["parameters"])["authorization"] == "Bearer s3cret"
    # and addon-config-created was recorded by the admin token, without the parameters
    (event,) = newest_events(db, 1)
    assert event["type"] == "addon-config-created"
    assert (event["createdBy"], event["createdByUserId"]) == ("admin", -42)
    assert event["data"]["id"] == created["id"] and "parameters" not in event["data"]
    assert b"s3cret" not in orjson.dumps(event)


def test_create__by_a_personal_token_of_an_admin__event_names_the_user(client, admin_user, db):
    # When
    response = client.post(ADDONS, json=config(), headers=auth(admin_user))
    # Then
    assert response.status_code == 201
    (event,) = newest_events(db, 1)
    assert (event["createdBy"], event["createdByUserId"]) == ("admin", 1)


@pytest.mark.parametrize(
    ("change", "said"),
    [
        ({"provider": "slack-app"}, "provider"),
        ({"provider": "Webhook"}, "provider"),
        ({"parameters": {"contentType": "text/plain"}}, "parameters.url"),
        ({"parameters": {"url": ""}}, "parameters.url"),
        ({"events": ["feature-created", "feature-link-added"]}, "events"),
        ({"parameters": {"url": "ftp://127.0.0.1/hook"}}, "parameters.url"),
        ({"parameters": {"url": "http://user:pw@127.0.0.1/hook"}}, "parameters.url"),
        ({"parameters": {"url": "javascript:alert(1)"}}, "parameters.url"),
        ({"parameters": {"url": RECEIVER, "colour": "blue"}}, "parameters.colour"),
        ({"parameters": {"url": RECEIVER, "contentType": "text/plain\r\nX-Injected: 1"}}, "contentType"),
        ({"parameters": {"url": RECEIVER, "authorization": "x" * 2049}}, "authorization"),
        ({"parameters": {"url": RECEIVER, "customHeaders": "{" + '"a":"b",' * 300 + "}"}}, "customHeaders"),
        ({"parameters": {"url": RECEIVER, "bodyTemplate": "{{x}}" * 1000}}, "bodyTemplate"),
        ({"parameters": {"url": RECEIVER, "bodyTemplate": "{{#a}}{{/b}}"}}, "bodyTemplate"),
        ({"parameters": {"url": RECEIVER, "bodyTemplate": "{{=x=}}"}}, "bodyTemplate"),
        ({"parameters": {"url": RECEIVER, "secret": "not-a-secret"}}, "secret"),
        ({"parameters": {"url": RECEIVER, "secret": "whsec_c2hvcnQ="}}, "secret"),
        ({"enabled": "true"}, "enabled"),
        ({"enabled": 1}, "enabled"),
        ({"maxInFlight": 0}, "maxInFlight"),
        ({"maxInFlight": "2"}, "maxInFlight"),
        ({"eventsKeep": True}, "eventsKeep"),
        ({"eventsMaxAge": "30 days"}, "eventsMaxAge"),
        ({"projects": ["x" * 101]}, "projects"),
        ({"sneaky": 1}, "sneaky"),
    ],
)
def test_create__invalid__400_naming_the_field_and_nothing_written(client, admin_token, db, change, said):
    # Given
    before = db.value("SELECT count(*) FROM integrations"), db.value("SELECT count(*) FROM events")
    # When
    response = client.post(ADDONS, json=config(**change), headers=auth(admin_token))
    # Then
    assert response.status_code == 400, response.get_json()
    body = response.get_json()
    assert body["name"] == "BadDataError"
    assert said in body["message"], body["message"]
    assert (db.value("SELECT count(*) FROM integrations"), db.value("SELECT count(*) FROM events")) == before


@pytest.mark.parametrize("max_age", ["P9999Y", "P9999M", "P1D", "PT9999999S"])
def test_create__any_max_age_the_document_allows__201_and_retention_applies(
    client, admin_token, db, receiver, max_age
):
    """The OpenAPI pattern of eventsMaxAge allows up to four digits of years: every such value
    is accepted (schemathesis found P8892Y refused), ages beyond 1,000 years counting as that."""
    # When
    body = config(eventsMaxAge=max_age)
    body["parameters"]["url"] = receiver.url("/ok")
    response = client.post(ADDONS, json=body, headers=auth(admin_token))
    # Then
    assert response.status_code == 201, response.get_json()
    assert response.get_json()["eventsMaxAge"] == max_age
    number = int(response.get_json()["id"])
    test = client.post(f"{ADDONS}/{number}/test", headers=auth(admin_token))
    assert test.status_code < 500, test.get_json()


def test_create__missing_required_fields__400_listing_each(client, admin_token):
    # When
    response = client.post(ADDONS, json={"description": "x"}, headers=auth(admin_token))
    # Then
    assert response.status_code == 400
    details = " ".join(d["message"] for d in response.get_json()["details"])
    for name in ("provider", "enabled", "parameters", "events"):
        assert name in details


@pytest.mark.parametrize("body", [b"not json", b"[]", b'"webhook"', b"null", b'{"provider": "webhook"'])
def test_create__malformed_json__400(client, admin_token, body):
    response = client.post(
        ADDONS, data=body, headers={**auth(admin_token), "Content-Type": "application/json"}
    )
    assert response.status_code == 400
    assert response.get_json()["name"] == "BadDataError"


def test_create__by_an_editor__403_and_nothing_written(client, alice, db):
    before = db.value("SELECT count(*) FROM integrations")
    response = client.post(ADDONS, json=config(), headers=auth(alice))
    assert response.status_code == 403
    assert db.value("SELECT count(*) FROM integrations") == before


def test_get__viewer__sees_the_configuration_masked(client, victor, assert_valid):
    # The reference server lets any user read configurations (never their secrets).
    response = client.get(ADDON.format(id=1), headers=auth(victor))
    assert response.status_code == 200
    assert_valid(response, ADDON)
    assert response.get_json()["parameters"]["url"] == "*****"


@pytest.mark.parametrize("id_", ["999", "0", "abc", "1.5", "9223372036854775808", "-1"])
def test_get_put_delete_test__unknown_id__404(client, admin_token, id_):
    headers = auth(admin_token)
    assert client.get(ADDON.format(id=id_), headers=headers).status_code == 404
    assert client.put(ADDON.format(id=id_), json=config(), headers=headers).status_code == 404
    assert client.delete(ADDON.format(id=id_), headers=headers).status_code == 404
    assert client.post(ADDON.format(id=id_) + "/test", headers=headers).status_code == 404


def test_put__masked_values_sent_back__stored_values_kept(client, admin_token, db, assert_valid):
    # Given: a configuration, read back as a client would
    created = client.post(ADDONS, json=config(), headers=auth(admin_token)).get_json()
    shown = client.get(ADDON.format(id=created["id"]), headers=auth(admin_token)).get_json()
    # When: it is sent back with a new description and its ***** untouched
    body = {k: shown[k] for k in ("provider", "enabled", "parameters", "events", "projects", "environments")}
    body["description"] = "renamed"
    response = client.put(ADDON.format(id=created["id"]), json=body, headers=auth(admin_token))
    # Then
    assert response.status_code == 200, response.get_json()
    assert_valid(response, ADDON, "put")
    stored = orjson.loads(db.value("SELECT parameters FROM integrations WHERE id = ?", [created["id"]]))
    assert stored == config()["parameters"]
    (event,) = newest_events(db, 1)
    assert event["type"] == "addon-config-updated"
    assert (event["preData"]["description"], event["data"]["description"]) == (
        config()["description"],
        "renamed",
    )


def test_put__only_a_parameter_changed__stored_but_no_event(client, admin_token, db):
    """Events never carry parameters, so a change of parameters alone leaves data equal to
    preData: a change that changes nothing the event shows writes no event (the reference
    server drops such events too)."""
    created = client.post(ADDONS, json=config(), headers=auth(admin_token)).get_json()
    events_before = db.value("SELECT max(id) FROM events")
    # When
    changed = config(parameters={**config()["parameters"], "url": "http://127.0.0.1/other-saved-never-sent"})
    response = client.put(ADDON.format(id=created["id"]), json=changed, headers=auth(admin_token))
    # Then
    assert response.status_code == 200
    stored = orjson.loads(db.value("SELECT parameters FROM integrations WHERE id = ?", [created["id"]]))
    assert stored["url"] == "http://127.0.0.1/other-saved-never-sent"
    assert db.value("SELECT max(id) FROM events") == events_before


def test_put__mask_for_a_parameter_never_set__stays_unset(client, admin_token, db):
    created = client.post(
        ADDONS, json=config(parameters={"url": RECEIVER}), headers=auth(admin_token)
    ).get_json()
    body = config(parameters={"url": "*****", "authorization": "*****"})
    response = client.put(ADDON.format(id=created["id"]), json=body, headers=auth(admin_token))
    assert response.status_code == 200
    stored = orjson.loads(db.value("SELECT parameters FROM integrations WHERE id = ?", [created["id"]]))
    assert stored == {"url": RECEIVER}


def test_put__other_provider_seeded__409_and_unchanged(client, admin_token, db):
    # Given: configuration 5 is the reference server's teamsworkflow
    before = db.one("SELECT * FROM integrations WHERE id = 5")
    # When
    response = client.put(ADDON.format(id=5), json=config(), headers=auth(admin_token))
    # Then
    assert response.status_code == 409
    assert "teamsworkflow" in response.get_json()["message"]
    assert db.one("SELECT * FROM integrations WHERE id = 5") == before


def test_put__disabled__its_pending_deliveries_cancelled(client, admin_token, db):
    # Given: configuration 3 (the demo's enabled webhook) has a pending delivery (a new
    # configuration raised an event it handles)
    client.post(ADDONS, json=config(enabled=False), headers=auth(admin_token))
    event_id = db.value("SELECT max(id) FROM events")
    assert {d["integration_id"]: d["state"] for d in deliveries.of_event(db, event_id)}[3] == "pending"
    seeded = client.get(ADDON.format(id=3), headers=auth(admin_token)).get_json()
    body = {k: seeded[k] for k in ("provider", "parameters", "projects", "environments", "description")}
    # When
    response = client.put(
        ADDON.format(id=3),
        json={**body, "enabled": False, "events": ["feature-created"]},
        headers=auth(admin_token),
    )
    # Then
    assert response.status_code == 200
    assert {d["integration_id"]: d["state"] for d in deliveries.of_event(db, event_id)}[3] == "cancelled"


def test_delete__configuration_with_log_and_deliveries__all_gone_in_one_change(client, admin_token, db):
    # Given: configuration 3 (the demo's enabled webhook) has 49 log rows and (after this) a
    # pending delivery
    client.post(ADDONS, json=config(), headers=auth(admin_token))
    assert db.value("SELECT count(*) FROM integration_deliveries WHERE integration_id = 3") >= 1
    # When
    response = client.delete(ADDON.format(id=3), headers=auth(admin_token))
    # Then
    assert response.status_code == 200 and response.get_data() == b""
    assert client.get(ADDON.format(id=3), headers=auth(admin_token)).status_code == 404
    assert client.get(ADDON.format(id=3) + "/events", headers=auth(admin_token)).status_code == 404
    for table in ("integration_events", "integration_deliveries", "integration_options"):
        assert db.value(f"SELECT count(*) FROM {table} WHERE integration_id = 3") == 0
    assert integration_events.head(db, 3) is None
    (event,) = newest_events(db, 1)
    assert event["type"] == "addon-config-deleted"
    assert event["preData"]["id"] == 3 and event["data"] is None and "parameters" not in event["preData"]


def test_delete__by_an_editor__403_and_kept(client, alice):
    assert client.delete(ADDON.format(id=1), headers=auth(alice)).status_code == 403
    assert client.get(ADDON.format(id=1), headers=auth(alice)).status_code == 200


def test_test__other_provider__409(client, admin_token):
    response = client.post(ADDON.format(id=6) + "/test", headers=auth(admin_token))
    assert response.status_code == 409
    assert "slack-app" in response.get_json()["message"]


def test_create__then_event__the_new_configuration_handles_it_at_once(client, admin_token, db):
    """No cache of configurations: a configuration handles the very next event."""
    created = client.post(
        ADDONS, json=config(events=["addon-config-created"]), headers=auth(admin_token)
    ).get_json()
    # When: the next event of a type it handles
    client.post(ADDONS, json=config(enabled=False), headers=auth(admin_token))
    # Then
    event_id = db.value("SELECT max(id) FROM events")
    assert created["id"] in {d["integration_id"] for d in deliveries.of_event(db, event_id)}


def sent_headers(client, token: str, receiver: Receiver, **parameters) -> tuple[list[tuple[str, str]], dict]:
    """Create a webhook to ``receiver`` with ``parameters``, send its test event, and return
    the header fields the receiver got (as sent, in order) and the attempt's log row."""
    body = config()
    body["parameters"] = {"url": receiver.url("/ok"), **parameters}
    created = client.post(ADDONS, json=body, headers=auth(token))
    assert created.status_code == 201, created.get_json()
    row = client.post(ADDON.format(id=created.get_json()["id"]) + "/test", headers=auth(token))
    assert row.status_code == 200, row.get_json()
    (request,) = receiver.received("/ok")
    return request.fields, row.get_json()


def named(fields: list[tuple[str, str]], name: str) -> list[str]:
    """The values of the header ``name``, whatever the case it was sent in."""
    return [value for key, value in fields if key.lower() == name.lower()]


@pytest.mark.parametrize(
    ("content_type", "authorization", "user_agent"),
    [
        ("Content-Type", "Authorization", "User-Agent"),
        ("content-type", "authorization", "user-agent"),
        ("CONTENT-TYPE", "AUTHORIZATION", "USER-AGENT"),
        ("content-Type", "AuThOrIzAtIoN", "user-Agent"),
    ],
)
def test_custom_headers__same_name_in_any_case__replace_the_default_one_of_each_sent(
    client, admin_token, receiver, content_type, authorization, user_agent
):
    """RFC 9110 section 5.1: field names are case-insensitive. A custom header replaces the
    default of the same name whatever its case; the receiver never gets two of one."""
    # When
    fields, row = sent_headers(
        client,
        admin_token,
        receiver,
        contentType="application/json",
        authorization="Bearer from-the-parameter",
        customHeaders=orjson.dumps(
            {content_type: "text/plain", authorization: "Bearer custom", user_agent: "mine/1"}
        ).decode(),
    )
    # Then: one of each, the custom value
    assert named(fields, "Content-Type") == ["text/plain"]
    assert named(fields, "Authorization") == ["Bearer custom"]
    assert named(fields, "User-Agent") == ["mine/1"]
    assert row["state"] == "success" and row["details"]["contentType"] == "text/plain"


def test_custom_headers__two_names_differing_in_case__the_last_sent_and_the_row_says_so(
    client, admin_token, receiver
):
    # When
    fields, row = sent_headers(client, admin_token, receiver, customHeaders='{"X-Team": "a", "x-team": "b"}')
    # Then
    assert named(fields, "X-Team") == ["b"]
    assert row["state"] == "successWithErrors"
    assert "'x-team' repeats 'X-Team'" in row["stateDetails"]


@pytest.mark.parametrize("name", ["WEBHOOK-ID", "Webhook-Signature", "content-LENGTH", "HOST"])
def test_custom_headers__reserved_name_in_any_case__not_sent_and_named(client, admin_token, receiver, name):
    # When
    fields, row = sent_headers(
        client,
        admin_token,
        receiver,
        secret="whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
        customHeaders=orjson.dumps({name: "1"}).decode(),
    )
    # Then: the framing and signature headers are flagadmin's, once each
    assert len(named(fields, name)) == 1 and named(fields, name) != ["1"]
    assert f"The custom header {name!r} cannot be set" in row["stateDetails"]
