"""One blueprint per operation of the spec; each module holds its view and its schemas.

:data:`BLUEPRINTS` lists them in the order they are registered (the order of the OpenAPI
document). The OpenAPI document's own route (``docs``) is registered last, by
``create_app``.
"""

from flask import Flask

from . import (
    addons,
    api_tokens,
    applications,
    archived_features,
    backstage,
    client_api,
    client_metrics,
    dependencies,
    events,
    feature_archive,
    features,
    frontend_api,
    group_roles,
    health,
    integration_events,
    ofrep,
    personal_dashboard,
    scim,
    scim_token,
    segments,
    strategies,
    ui_config,
    variants,
)

BLUEPRINTS = (
    integration_events.bp,
    personal_dashboard.bp,
    ui_config.bp,
    archived_features.bp,
    scim_token.bp,
    scim.bp,
    health.bp,
    # The Prometheus metrics, on the reference server's path.
    backstage.bp,
    # Flags change through the API.
    features.bp,
    feature_archive.bp,
    # Integration configurations (the reference server's /api/admin/addons).
    addons.bp,
    # What SCIM groups grant (the SCIM service provider itself is scim.bp).
    group_roles.bp,
    # The system event log (the reference server's /api/admin/events and search/events).
    events.bp,
    # Rollout rules: segments, a flag's variants, its dependency on a parent flag.
    segments.bp,
    variants.bp,
    dependencies.bp,
    # Rollout rules: strategy types and a flag environment's strategies.
    strategies.bp,
    # What SDKs report (the reference server's /api/client/register and /metrics) and the
    # applications they make (/api/admin/metrics).
    client_metrics.bp,
    applications.bp,
    # API tokens for the SDKs (the reference server's /api/admin/api-tokens).
    api_tokens.bp,
    # The flag configuration backend SDKs poll (the reference server's /api/client/features).
    client_api.bp,
    # Flags evaluated for browser SDKs (the reference server's /api/frontend).
    frontend_api.bp,
    # The same evaluations for OpenFeature providers (OFREP, /ofrep/v1).
    ofrep.bp,
)


def register(app: Flask) -> None:
    """Register every blueprint of flagadmin on ``app``."""
    for blueprint in BLUEPRINTS:
        app.register_blueprint(blueprint)
