"""Integration configurations (the reference server's addons): which providers exist, how a
configuration sent to the API is checked, and how one is shown (secrets masked) and recorded in
events (never with its parameters).

flagadmin delivers through one provider, ``webhook`` (:mod:`flagadmin.integrations.webhooks`).
Configurations of the reference server's other providers (loaded by a seed) are listed, with
their secrets masked, but handle no events and cannot be created.

Spec 2.2 names the configuration that 4.1's ``id`` points at without showing its fields; they
are the reference server's (``addonCreateUpdateSchema``, ``addonSchema``), plus flagadmin's
options (:data:`OPTION_FIELDS`). A configuration that cannot be saved is refused with
:mod:`flagadmin.refusals`: :class:`~flagadmin.refusals.Invalid` (400, every problem listed) or
:class:`~flagadmin.refusals.Conflict` (409, a change of provider).
"""

from __future__ import annotations

from typing import Any

from ..config import Settings, SettingsError, iso_duration
from ..refusals import Conflict, Invalid
from . import address_guard, template, webhooks

#: Providers flagadmin can deliver to, by name: their ``addonTypeSchema`` definitions.
PROVIDERS: dict[str, dict[str, Any]] = {webhooks.PROVIDER: webhooks.DEFINITION}

#: Sensitive parameters of the reference server's other providers, so that configurations
#: seeded from it are listed with their secrets masked. Any other provider: every parameter
#: is masked, since which of them are secret is unknown.
FOREIGN_SENSITIVE: dict[str, frozenset[str]] = {
    "slack": frozenset({"url", "customHeaders"}),
    "slack-app": frozenset({"accessToken"}),
    "teams": frozenset({"url", "customHeaders"}),
    "teamsworkflow": frozenset({"url", "customHeaders"}),
    "datadog": frozenset({"apiKey", "customHeaders"}),
    "new-relic": frozenset({"licenseKey", "customHeaders"}),
}

#: API field -> column of the options flagadmin adds to a configuration.
OPTION_FIELDS = {
    "maxInFlight": "max_in_flight",
    "eventsKeep": "events_keep",
    "eventsMaxAge": "events_max_age",
}


def _invalid(problems: list[str]) -> Invalid:
    """The refusal of a configuration that cannot be saved (400): its message names every
    problem, and ``details`` lists them one by one (``"parameters.url: ..."``)."""
    return Invalid("Invalid integration configuration: " + "; ".join(problems), details=problems)


def guard(settings: Settings) -> address_guard.AddressGuard:
    """The address guard of the instance's settings."""
    return address_guard.AddressGuard(
        allow_private=settings.integrations_allow_private,
        allowed_hosts=frozenset(settings.integrations_allowed_hosts),
    )


def checked(body: dict[str, Any], *, stored: dict[str, Any] | None, settings: Settings) -> dict[str, Any]:
    """The configuration to store for ``body`` (a loaded ``addonCreateUpdateSchema``), in the
    store's row shape (``flagadmin.store.integrations``).

    Checks what the schema cannot: a parameter sent back as ``*****`` keeps its stored value
    (``stored``: the configuration a PUT replaces), the required parameters are there, the URL
    resolves to public addresses (unless allowed), the body template renders.

    :raise flagadmin.refusals.Conflict: ``stored`` has another provider (409).
    :raise flagadmin.refusals.Invalid: anything else (400); ``details`` lists every problem.
    """
    provider = body["provider"]
    if stored is not None and stored["provider"] != provider:
        raise Conflict(
            f"Integration configuration {stored['id']} uses the provider {stored['provider']!r}; "
            f"a configuration's provider cannot change. Create a new {provider} configuration instead."
        )
    if provider not in PROVIDERS:
        raise _invalid([f"provider: {provider!r} is not a provider flagadmin delivers to; use webhook."])
    problems: list[str] = []
    parameters = _unmasked(body["parameters"], stored)
    for definition in webhooks.PARAMETERS:
        if definition.required and not parameters.get(definition.name):
            problems.append(f"parameters.{definition.name}: required by the {provider} provider.")
    url = parameters.get("url")
    if url:
        normalized = webhooks.schema_match(webhooks.URL_PATTERN, url)
        if normalized is None or len(normalized) > webhooks.MAX_URL:
            problems.append(
                "parameters.url: must be an http:// or https:// URL with a host name or IP address, "
                f"without user name or password, at most {webhooks.MAX_URL} characters."
            )
        else:
            parameters["url"] = normalized
            try:
                guard(settings).check_url(normalized)
            except address_guard.Blocked as exc:
                problems.append(f"parameters.url: not allowed: {exc}")
            except address_guard.Unresolvable as exc:
                problems.append(f"parameters.url: {exc}; give a host name that resolves.")
    body_template = parameters.get("bodyTemplate")
    if body_template:
        try:
            template.render_template(body_template, template.SAMPLE_EVENT)
        except template.TemplateError as exc:
            problems.append(f"parameters.bodyTemplate: {exc}.")
        else:
            unknown = template.unknown_name(body_template)
            if unknown is not None:
                problems.append(f"parameters.bodyTemplate: {unknown}.")
    max_age = body.get("eventsMaxAge")
    if max_age is not None:
        try:
            iso_duration("eventsMaxAge", max_age)
        except SettingsError as exc:
            problems.append(str(exc))
    if problems:
        raise _invalid(problems)
    return {
        "provider": provider,
        "description": body.get("description"),
        "enabled": body["enabled"],
        "events": list(dict.fromkeys(body["events"])),
        "projects": list(body.get("projects") or []),
        "environments": list(body.get("environments") or []),
        "parameters": {name: value for name, value in parameters.items() if value != ""},
        **{column: body.get(name) for name, column in OPTION_FIELDS.items()},
    }


def _unmasked(sent: dict[str, Any], stored: dict[str, Any] | None) -> dict[str, Any]:
    """``sent`` with every ``*****`` replaced by the stored value (dropped when none is stored)."""
    kept = stored["parameters"] if stored is not None else {}
    parameters = {}
    for name, value in sent.items():
        if value == webhooks.MASK:
            if name in kept:
                parameters[name] = kept[name]
        else:
            parameters[name] = value
    return parameters


def sensitive(provider: str) -> frozenset[str] | None:
    """Names of a provider's sensitive parameters (None: unknown, mask them all)."""
    if provider == webhooks.PROVIDER:
        return webhooks.SENSITIVE
    return FOREIGN_SENSITIVE.get(provider)


def masked(provider: str, parameters: dict[str, Any]) -> dict[str, Any]:
    """``parameters`` with every set sensitive value shown as ``*****``."""
    secret = sensitive(provider)
    return {
        name: webhooks.MASK if (secret is None or name in secret) and value not in ("", None) else value
        for name, value in parameters.items()
    }


def wire(config: dict[str, Any]) -> dict[str, Any]:
    """A stored configuration as the API shows it (``addonSchema`` plus flagadmin's options),
    sensitive parameters masked."""
    return {
        "id": config["id"],
        "provider": config["provider"],
        "description": config["description"],
        "enabled": config["enabled"],
        "parameters": masked(config["provider"], config["parameters"]),
        "events": config["events"],
        "projects": config["projects"],
        "environments": config["environments"],
        "createdAt": config["created_at"],
        **{name: config[column] for name, column in OPTION_FIELDS.items()},
    }


def event_data(config: dict[str, Any]) -> dict[str, Any]:
    """What ``addon-config-*`` events record of a configuration: everything but its parameters
    (the reference server's shape, plus flagadmin's options)."""
    return {
        "id": config["id"],
        "provider": config["provider"],
        "enabled": config["enabled"],
        "description": config["description"],
        "events": config["events"],
        "projects": config["projects"],
        "environments": config["environments"],
        "createdAt": config["created_at"],
        **{name: config[column] for name, column in OPTION_FIELDS.items()},
    }


def deliverable(config: dict[str, Any]) -> bool:
    """True when flagadmin can send through the configuration's provider."""
    return config["provider"] in PROVIDERS
