"""Values that only look valid are refused where they are given, with a message that says what
is accepted: a pattern is matched against the whole value, so a trailing newline (which
Python's ``$`` lets through) or a space around it is not quietly accepted or trimmed; and a
webhook body template that cannot render as its author meant (an unclosed tag or section, a
section closed out of order) or that names what its context has not (the reference server's
``eventMarkdown``) is refused when the configuration is saved, with 400 naming the line and
column.

Through the real stack: the admin API (POST and PUT of integration configurations, a flag's
tags), the command line (``seed``, ``create-token --expires-in``) and the settings read at
start (``FLAGADMIN_INTEGRATION_EVENTS_MAX_AGE``).
"""

from __future__ import annotations

import json

import orjson
import pytest

from flagadmin.config import SettingsError, settings_from_env

from flag_helpers import features_path
from helpers import auth

pytestmark = pytest.mark.same_on_both_engines

ADDONS = "/api/admin/addons"
ADDON = "/api/admin/addons/{id}"
#: Saved and never sent: no worker runs here, and no test delivery is asked for.
URL = "http://127.0.0.1/saved-never-sent"
SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"


@pytest.fixture
def app(make_app):
    """The app, allowed to save URLs on 127.0.0.1 (test_ssrf.py tests the guard)."""
    return make_app(integrations_allowed_hosts=("127.0.0.1",))


def webhook(**changes) -> dict:
    parameters = {"url": URL, **changes.pop("parameters", {})}
    return {"provider": "webhook", "enabled": True, "parameters": parameters, "events": [], **changes}


def refused(response, field: str, *words: str) -> str:
    """Assert a 400 whose message names ``field`` and holds each of ``words``; the message."""
    assert response.status_code == 400, response.get_json()
    body = response.get_json()
    assert body["name"] == "BadDataError"
    assert field in body["message"], body["message"]
    for word in words:
        assert word in body["message"], body["message"]
    return body["message"]


LOOKS_VALID = [
    ({"eventsMaxAge": "P30D\n"}, "eventsMaxAge", "ISO 8601 duration"),
    ({"eventsMaxAge": "P30D "}, "eventsMaxAge", "no spaces or line breaks"),
    ({"eventsMaxAge": " PT12H"}, "eventsMaxAge", "no spaces or line breaks"),
    ({"parameters": {"url": URL + "\n"}}, "parameters.url", "no spaces or line breaks"),
    ({"parameters": {"contentType": "text/plain\n"}}, "parameters.contentType", "one line"),
    ({"parameters": {"authorization": "Bearer x\n"}}, "parameters.authorization", "one line"),
    ({"parameters": {"secret": SECRET + "\n"}}, "parameters.secret", "nothing after it"),
]


@pytest.mark.parametrize(("change", "field", "says"), LOOKS_VALID)
def test_addon_create__value_with_a_trailing_newline_or_space__400_saying_what_is_accepted(
    client, admin_token, db, change, field, says
):
    # Given
    before = db.value("SELECT count(*) FROM integrations")
    # When
    response = client.post(ADDONS, json=webhook(**change), headers=auth(admin_token))
    # Then: refused, nothing written
    refused(response, field, says)
    assert db.value("SELECT count(*) FROM integrations") == before


@pytest.mark.parametrize(("change", "field", "says"), LOOKS_VALID)
def test_addon_update__value_with_a_trailing_newline_or_space__400_and_unchanged(
    client, admin_token, db, change, field, says
):
    # Given: a configuration saved with clean values
    created = client.post(
        ADDONS, json=webhook(eventsMaxAge="P30D", parameters={"secret": SECRET}), headers=auth(admin_token)
    )
    assert created.status_code == 201, created.get_json()
    number = created.get_json()["id"]
    stored = db.one("SELECT * FROM integrations WHERE id = ?", [number])
    # When
    response = client.put(ADDON.format(id=number), json=webhook(**change), headers=auth(admin_token))
    # Then
    refused(response, field, says)
    assert db.one("SELECT * FROM integrations WHERE id = ?", [number]) == stored


def test_addon_create__the_clean_values__201_stored_as_sent(client, admin_token, db):
    # When
    body = webhook(
        eventsMaxAge="PT12H",
        parameters={"contentType": "text/plain", "authorization": "Bearer x", "secret": SECRET},
    )
    response = client.post(ADDONS, json=body, headers=auth(admin_token))
    # Then
    assert response.status_code == 201, response.get_json()
    stored = db.one("SELECT * FROM integrations WHERE id = ?", [response.get_json()["id"]])
    assert orjson.loads(stored["parameters"])["url"] == URL
    assert response.get_json()["eventsMaxAge"] == "PT12H"


@pytest.mark.parametrize(
    ("template", "says"),
    [
        ('{"flag": "{{#event.data}}{{name}}"}', "the section '{{#event.data}}' opened at line 1, column 11"),
        ("{{^event.data}}none", "the section '{{^event.data}}' opened at line 1, column 1 is never closed"),
        ('{"type": "{{event.type"}', "the tag '{{event.type\"}' at line 1, column 11 is never closed"),
        ("{{{eventJson}}", "is never closed (end it with }}})"),
        ("{{! a comment", "is never closed (end it with }})"),
        ("ok\n{{#event.data}}{{/event.tags}}", "'{{/event.tags}}' at line 2, column 16 does not close"),
        ("{{#a}}{{#b}}{{/a}}{{/b}}", "does not close the section '{{#b}}'"),
        ("{{/event.data}}", "closes a section that was never opened"),
        ("{{= =}}", "must give two delimiters"),
        ("{{=<% %>=}}<%#event.data%>", "the section '<%#event.data%>' opened at line 1, column 12"),
        ("{{}}", "has no name"),
        ("{{> header}}", "partials are not supported"),
    ],
)
def test_addon_save__template_that_cannot_render__400_naming_the_problem_and_where(
    client, admin_token, db, template, says
):
    # Given
    before = db.value("SELECT count(*) FROM integrations")
    created = client.post(ADDONS, json=webhook(), headers=auth(admin_token)).get_json()
    body = webhook(parameters={"bodyTemplate": template})
    # When: created with it, or updated to it
    on_create = client.post(ADDONS, json=body, headers=auth(admin_token))
    on_update = client.put(ADDON.format(id=created["id"]), json=body, headers=auth(admin_token))
    # Then: both refused in flagadmin's words, nothing written
    for response in (on_create, on_update):
        refused(response, "parameters.bodyTemplate", "not valid Mustache", says)
    assert db.value("SELECT count(*) FROM integrations") == before + 1
    stored = db.one("SELECT parameters FROM integrations WHERE id = ?", [created["id"]])
    assert "bodyTemplate" not in orjson.loads(stored["parameters"])


@pytest.mark.parametrize(
    "template",
    [
        "{{event.type}} by {{event.createdBy}}",
        "{{#event.data}}{{name}}{{/event.data}}{{^event.data}}-{{/event.data}}",
        "{{{eventJson}}}}",  # the last brace is text
        "{{=<% %>=}}<%event.type%> <%={{ }}=%>{{event.project}}",
        "}} {{! a comment }} {{&event.featureName}}",
    ],
)
def test_addon_save__complete_templates__201(client, admin_token, template):
    body = webhook(parameters={"bodyTemplate": template})
    response = client.post(ADDONS, json=body, headers=auth(admin_token))
    assert response.status_code == 201, response.get_json()


@pytest.mark.parametrize(
    ("template", "name"),
    [
        ("{{event.type}}: {{{eventMarkdown}}}", "eventMarkdown"),  # the reference server's
        ("{{#items}}{{name}}{{/items}}", "items"),
        ("{{type}} by {{createdBy}}", "type"),
    ],
)
def test_addon_save__template_naming_what_its_context_has_not__400_naming_it(
    client, admin_token, db, template, name
):
    """Mustache renders an unknown name as nothing: a template that names, outside every
    section, something other than ``event`` or ``eventJson`` is refused rather than sent with
    a hole in its body."""
    created = client.post(ADDONS, json=webhook(), headers=auth(admin_token)).get_json()
    body = webhook(parameters={"bodyTemplate": template})
    for response in (
        client.post(ADDONS, json=body, headers=auth(admin_token)),
        client.put(ADDON.format(id=created["id"]), json=body, headers=auth(admin_token)),
    ):
        refused(response, "parameters.bodyTemplate", f"names {name!r}", "use event", "eventJson")


def test_flag_create__tag_color_with_a_trailing_newline__400(client, alice, db):
    # Given
    before = db.value("SELECT count(*) FROM features")
    tag = {"type": "simple", "value": "team-a", "color": "#00aa00\n"}
    # When
    response = client.post(
        features_path("default"), json={"name": "coloured", "tags": [tag]}, headers=auth(alice)
    )
    # Then
    refused(response, "color")
    assert db.value("SELECT count(*) FROM features") == before


def test_seed__environment_name_with_a_trailing_newline__refused_and_nothing_written(invoke, tmp_path):
    # Given
    document = tmp_path / "environments.json"
    document.write_text(json.dumps({"environments": [{"name": "production\n", "type": "production"}]}))
    # When
    result = invoke("seed", str(document))
    # Then
    assert result.exit_code != 0
    assert "name" in result.output and "production\\n" in result.output


@pytest.mark.parametrize("duration", ["P30D\n", "P30D ", " P30D"])
def test_create_token__expires_in_with_a_space_or_newline__usage_error(invoke, database, duration):
    # When
    result = invoke("create-token", "--admin", "--expires-in", duration, db=database)
    # Then
    assert result.exit_code == 2
    assert "--expires-in" in result.output and "no spaces or line breaks" in result.output


@pytest.mark.parametrize("value", ["P30D\n", "P30D ", "\tP30D"])
def test_settings__events_max_age_with_a_space_or_newline__refused_naming_the_variable(value):
    with pytest.raises(SettingsError) as refusal:
        settings_from_env({"FLAGADMIN_INTEGRATION_EVENTS_MAX_AGE": value})
    assert "FLAGADMIN_INTEGRATION_EVENTS_MAX_AGE" in str(refusal.value)
    assert "no spaces or line breaks" in str(refusal.value)
