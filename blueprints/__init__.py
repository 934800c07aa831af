"""One blueprint per operation of the spec; each module holds its view and its schemas."""

from flask import Flask


def register(app: Flask) -> None:
    """Register every blueprint of flagadmin on ``app``."""
    from . import (
        archived_features,
        docs,
        health,
        integration_events,
        personal_dashboard,
        scim,
        scim_token,
        ui_config,
    )

    for module in (
        integration_events,
        personal_dashboard,
        ui_config,
        archived_features,
        scim_token,
        scim,
        docs,
        health,
    ):
        app.register_blueprint(module.bp)
        if hasattr(module, "init_app"):  # per-app state of a blueprint (caches, precomputed answers)
            module.init_app(app)
