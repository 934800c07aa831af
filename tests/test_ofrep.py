"""OFREP (the OpenFeature Remote Evaluation Protocol, ``/ofrep/v1``): one flag and every flag
evaluated for an OpenFeature context by the Frontend API's engine, the protocol's success and
error bodies, the bulk answer's ETag dance, the token kinds; and the real OpenFeature SDK with
the PyPI OFREP provider, unmodified, against a live server: boolean, string, number and object
flags, a missing flag, a bad context.

Rules are written through the admin API. Run on either engine (``--engine=postgresql``).
"""

from __future__ import annotations

import pytest
from openfeature import api as openfeature_api
from openfeature.contrib.provider.ofrep import OFREPProvider
from openfeature.evaluation_context import EvaluationContext
from openfeature.exception import ErrorCode
from openfeature.flag_evaluation import Reason

from flagadmin import events
from flagadmin.store.tokens import new_admin_token
from flagadmin.tokens.changes import create_api_token

from flag_helpers import flag_path
from helpers import auth

OFREP = "/ofrep/v1/evaluate/flags"
PROJECT = "/api/admin/projects/default"


def variant(name: str, kind: str, value: str) -> dict:
    return {
        "name": name,
        "weight": 1000,
        "weightType": "variable",
        "stickiness": "default",
        "payload": {"type": kind, "value": value},
    }


def write_flags(send) -> None:
    """The flags every test reads, in development (``send(method, path, body)``)."""

    def flag(name: str, *strategies: dict, on: bool = True, variants=()) -> None:
        send("POST", f"{PROJECT}/features", {"name": name, "type": "release"})
        for strategy in strategies:
            body = {"parameters": {}, "constraints": [], **strategy}
            send("POST", f"{PROJECT}/features/{name}/environments/development/strategies", body)
        if variants:
            send(
                "PUT",
                f"{PROJECT}/features/{name}/variants-batch",
                {"variants": list(variants), "environments": ["development"]},
            )
        if on:
            send("POST", f"{PROJECT}/features/{name}/environments/development/on")

    flag("plain-on", {"name": "default"})
    flag("plain-off", {"name": "default"}, on=False)
    flag(
        "nordic",
        {
            "name": "default",
            "constraints": [{"contextName": "country", "operator": "IN", "values": ["NO", "SE"]}],
        },
    )
    flag("greeting", {"name": "default", "variants": [variant("hello", "string", "hei")]})
    flag("limit", {"name": "default", "variants": [variant("ten", "number", "10")]})
    flag("theme", {"name": "default"}, variants=[variant("dark", "json", '{"bg": "#000", "dim": 2}')])
    flag(
        "half",
        {
            "name": "flexibleRollout",
            "parameters": {"rollout": "50", "stickiness": "default", "groupId": "half"},
        },
    )
    flag("themed-off", {"name": "default"}, variants=[variant("dark", "json", "{}")], on=False)


@pytest.fixture
def setup(client, admin_token, db):
    def send(method, path, body=None):
        response = client.open(path, method=method, json=body, headers=auth(admin_token))
        assert response.status_code < 300, (method, path, response.get_json())
        return response

    write_flags(send)
    secret, _ = create_api_token(
        db,
        events.COMMAND_LINE,
        type="frontend",
        name="ofrep",
        environment="development",
        projects=["default"],
    )
    return client, {"Authorization": f"Bearer {secret}"}


def evaluate(client, headers, key: str, context=None, **kwargs):
    body = {} if context is None else {"context": context}
    return client.post(f"{OFREP}/{key}", json=body, headers=headers, **kwargs)


def test_one_flag__value_reason_variant_and_metadata_as_the_protocol_says(setup):
    client, headers = setup
    answer = evaluate(client, headers, "plain-on", {"targetingKey": "u1"})
    assert answer.status_code == 200
    assert answer.get_json() == {
        "key": "plain-on",
        "value": True,
        "variant": "enabled",
        "reason": "STATIC",
        "metadata": {"project": "default", "type": "release", "impressionData": False},
    }
    off = evaluate(client, headers, "plain-off", {"targetingKey": "u1"}).get_json()
    assert (off["value"], off["variant"], off["reason"]) == (False, "disabled", "DISABLED")


def test_one_flag__constraints_read_attributes_as_properties(setup):
    client, headers = setup
    norway = evaluate(client, headers, "nordic", {"targetingKey": "u1", "country": "NO"}).get_json()
    spain = evaluate(client, headers, "nordic", {"targetingKey": "u1", "country": "ES"}).get_json()
    assert (norway["value"], norway["reason"]) == (True, "TARGETING_MATCH")
    assert (spain["value"], spain["reason"]) == (False, "TARGETING_MATCH")


def test_one_flag__payloads_typed_as_they_say(setup):
    client, headers = setup
    assert evaluate(client, headers, "greeting", {"targetingKey": "u"}).get_json()["value"] == "hei"
    assert evaluate(client, headers, "limit", {"targetingKey": "u"}).get_json()["value"] == 10
    theme = evaluate(client, headers, "theme", {"targetingKey": "u"}).get_json()
    assert (theme["value"], theme["variant"]) == ({"bg": "#000", "dim": 2}, "dark")
    # a flag with variants that is off answers no value: the provider's default
    off = evaluate(client, headers, "themed-off", {"targetingKey": "u"}).get_json()
    assert "value" not in off and off["reason"] == "DISABLED" and off["variant"] == "disabled"


def test_one_flag__errors_in_the_protocols_body(setup):
    client, headers = setup
    missing = evaluate(client, headers, "nope", {"targetingKey": "u"})
    assert missing.status_code == 404
    assert missing.get_json()["errorCode"] == "FLAG_NOT_FOUND" and missing.get_json()["key"] == "nope"
    not_json = client.post(
        f"{OFREP}/plain-on", data=b"{not json", headers={**headers, "Content-Type": "application/json"}
    )
    assert not_json.status_code == 400 and not_json.get_json()["errorCode"] == "PARSE_ERROR"
    bad = evaluate(client, headers, "plain-on", {"targetingKey": "u", "country": {"nested": 1}})
    assert bad.status_code == 400 and bad.get_json()["errorCode"] == "INVALID_CONTEXT"
    assert "country" in bad.get_json()["errorDetails"]
    not_object = evaluate(client, headers, "plain-on", ["u"])
    assert not_object.status_code == 400 and not_object.get_json()["errorCode"] == "INVALID_CONTEXT"
    keyless = evaluate(client, headers, "half", {"country": "NO"})
    assert keyless.status_code == 400 and keyless.get_json()["errorCode"] == "TARGETING_KEY_MISSING"
    keyed = evaluate(client, headers, "half", {"targetingKey": "u"}).get_json()
    assert keyed["reason"] == "SPLIT" and isinstance(keyed["value"], bool)


def test_one_flag__tokens(setup, admin_token, db):
    client, _ = setup
    assert evaluate(client, {}, "plain-on").status_code == 401
    assert evaluate(client, auth(admin_token), "plain-on").status_code == 403
    secret, _ = create_api_token(
        db, events.COMMAND_LINE, type="client", name="backend", environment="development", projects=["*"]
    )
    assert evaluate(client, {"Authorization": secret}, "plain-on").get_json()["value"] is True
    production, _ = create_api_token(
        db, events.COMMAND_LINE, type="frontend", name="prod", environment="production", projects=["*"]
    )
    assert evaluate(client, {"Authorization": production}, "plain-on").get_json()["value"] is False


def test_one_flag__repeated_bad_tokens__429_with_retry_after_and_a_good_token_still_answered(make_app, db):
    # Given: an install allowing two failed authentications a minute from one address
    client = make_app(auth_failure_limit="2/minute").test_client()
    secret, _ = create_api_token(
        db, events.COMMAND_LINE, type="frontend", name="web", environment="development", projects=["*"]
    )
    wrong = {"Authorization": "Bearer *:development." + "0" * 56}
    # When: a third request after two failures
    failures = [evaluate(client, wrong, "apple-pay").status_code for _ in range(2)]
    refused = evaluate(client, wrong, "apple-pay")
    # Then: 429 with Retry-After (the provider waits that long), and a valid token is answered
    assert failures == [401, 401]
    assert refused.status_code == 429
    assert 1 <= int(refused.headers["Retry-After"]) <= 60
    assert evaluate(client, {"Authorization": f"Bearer {secret}"}, "apple-pay").status_code == 200


def test_bulk__every_flag_with_an_etag_and_304(setup):
    client, headers = setup
    body = {"context": {"targetingKey": "u1", "country": "SE"}}
    answer = client.post(OFREP, json=body, headers=headers)
    assert answer.status_code == 200
    items = {item["key"]: item for item in answer.get_json()["flags"]}
    # (the seeded database has flags of its own in default)
    assert {"plain-on", "plain-off", "nordic", "greeting", "limit", "theme", "half", "themed-off"} <= set(
        items
    )
    assert items["nordic"]["value"] is True and items["theme"]["value"] == {"bg": "#000", "dim": 2}
    etag = answer.headers["ETag"]
    again = client.post(OFREP, json=body, headers={**headers, "If-None-Match": etag})
    assert again.status_code == 304 and again.data == b""
    other = client.post(OFREP, json={"context": {"targetingKey": "u1", "country": "ES"}}, headers=headers)
    assert other.headers["ETag"] != etag
    keyless = client.post(OFREP, json={"context": {}}, headers=headers).get_json()["flags"]
    assert {"key": "half", "errorCode": "TARGETING_KEY_MISSING"}.items() <= next(
        i for i in keyless if i["key"] == "half"
    ).items()
    bad = client.post(OFREP, data=b"[", headers={**headers, "Content-Type": "application/json"})
    assert bad.status_code == 400 and bad.get_json()["errorCode"] == "PARSE_ERROR"


def test_bulk__a_change_is_in_the_next_answer(setup, admin_token):
    client, headers = setup
    body = {"context": {"targetingKey": "u1"}}
    first = client.post(OFREP, json=body, headers=headers)
    client.post(f"{flag_path('default', 'plain-on')}/environments/development/off", headers=auth(admin_token))
    second = client.post(OFREP, json=body, headers={**headers, "If-None-Match": first.headers["ETag"]})
    assert second.status_code == 200
    assert next(i for i in second.get_json()["flags"] if i["key"] == "plain-on")["value"] is False


@pytest.fixture
def live(live_server, db):
    admin_token = new_admin_token()
    server = live_server(env={"FLAGADMIN_ADMIN_TOKEN": admin_token, "FLAGADMIN_DELIVERY_WORKERS": "0"})

    def send(method, path, body=None):
        import orjson

        headers = {**auth(admin_token), "Content-Type": "application/json"}
        reply = server.request(method, path, headers, None if body is None else orjson.dumps(body))
        assert 200 <= reply.status < 300, (method, path, reply.status, reply.body[:300])

    write_flags(send)
    secret, _ = create_api_token(
        db,
        events.COMMAND_LINE,
        type="frontend",
        name="provider",
        environment="development",
        projects=["default"],
    )
    provider = OFREPProvider(
        server.url, headers_factory=lambda: {"Authorization": f"Bearer {secret}"}, timeout=10
    )
    openfeature_api.set_provider(provider)
    yield openfeature_api.get_client()
    openfeature_api.clear_providers()


def test_provider__boolean_string_number_object_missing_and_bad_context(live):
    client = live
    context = EvaluationContext(targeting_key="user-1", attributes={"country": "NO"})
    assert client.get_boolean_value("plain-on", False, context) is True
    assert client.get_boolean_value("plain-off", True, context) is False
    nordic = client.get_boolean_details("nordic", False, context)
    assert nordic.value is True and nordic.reason == Reason.TARGETING_MATCH
    assert client.get_string_value("greeting", "default", context) == "hei"
    assert client.get_integer_value("limit", 0, context) == 10
    assert client.get_object_value("theme", {}, context) == {"bg": "#000", "dim": 2}
    assert client.get_object_value("themed-off", {"fallback": True}, context) == {"fallback": True}
    missing = client.get_boolean_details("nope", True, context)
    assert missing.value is True and missing.error_code == ErrorCode.FLAG_NOT_FOUND
    bad = client.get_boolean_details(
        "plain-on", False, EvaluationContext(targeting_key="u", attributes={"nested": {"a": 1}})
    )
    assert bad.value is False and bad.error_code == ErrorCode.INVALID_CONTEXT
    keyless = client.get_boolean_details("half", False, EvaluationContext(attributes={"country": "NO"}))
    assert keyless.error_code == ErrorCode.TARGETING_KEY_MISSING
