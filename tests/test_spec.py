"""The spec's vocabularies (``spec.py``) held against the spec and against ``schema.sql``."""

from __future__ import annotations

import re

import pytest

from flagadmin import spec
from flagadmin.config import DEFAULT_RESOURCE_LIMITS
from flagadmin.store import schema

#: Spec section 6, "Allowed values of the event type field", copied as the spec writes it.
SPEC_6 = """
`application-created`, `feature-created`, `feature-deleted`, `feature-updated`,
`feature-metadata-updated`, `feature-variants-updated`, `feature-environment-variants-updated`,
`feature-project-change`, `feature-archived`, `feature-revived`, `feature-import`,
`feature-tagged`, `feature-tag-import`, `feature-strategy-update`, `feature-strategy-add`,
`feature-strategy-remove`, `feature-type-updated`, `feature-completed`, `feature-uncompleted`,
`strategy-order-changed`, `drop-feature-tags`, `feature-untagged`, `feature-stale-on`,
`feature-stale-off`, `drop-features`, `feature-environment-enabled`,
`feature-environment-disabled`, `strategy-created`, `strategy-deleted`, `strategy-deprecated`,
`strategy-reactivated`, `strategy-updated`, `strategy-import`, `drop-strategies`,
`context-field-created`, `context-field-updated`, `context-field-deleted`,
`project-access-added`, `project-access-user-roles-updated`,
`project-access-group-roles-updated`, `project-access-user-roles-deleted`,
`project-access-group-roles-deleted`, `project-access-updated`, `project-created`,
`project-updated`, `project-deleted`, `project-archived`, `project-revived`, `project-import`,
`project-user-added`, `project-user-removed`, `project-user-role-changed`,
`project-group-role-changed`, `project-group-added`, `project-group-removed`, `role-created`,
`role-updated`, `role-deleted`, `drop-projects`, `tag-created`, `tag-deleted`, `tag-import`,
`drop-tags`, `tag-type-created`, `tag-type-deleted`, `tag-type-updated`, `tag-type-import`,
`drop-tag-types`, `addon-config-created`, `addon-config-updated`, `addon-config-deleted`,
`db-pool-update`, `user-created`, `user-updated`, `user-deleted`, `drop-environments`,
`environment-import`, `environment-created`, `environment-updated`, `environment-deleted`,
`segment-created`, `segment-updated`, `segment-deleted`, `group-created`, `group-updated`,
`group-deleted`, `group-user-added`, `group-user-removed`, `setting-created`, `setting-updated`,
`setting-deleted`, `client-metrics`, `client-register`, `pat-created`, `pat-deleted`,
`public-signup-token-created`, `public-signup-token-user-added`, `public-signup-token-updated`,
`change-request-created`, `change-request-discarded`, `change-added`, `change-discarded`,
`change-edited`, `change-request-rejected`, `change-request-approved`,
`change-request-approval-added`, `change-request-cancelled`, `change-request-sent-to-review`,
`change-request-schedule-suspended`, `change-request-applied`, `change-request-scheduled`,
`change-request-scheduled-application-success`, `change-request-scheduled-application-failure`,
`change-request-configuration-updated`, `api-token-created`, `api-token-updated`,
`api-token-deleted`, `feature-favorited`, `feature-unfavorited`, `project-favorited`,
`project-unfavorited`, `features-exported`, `features-imported`, `service-account-created`,
`service-account-deleted`, `service-account-updated`, `feature-potentially-stale-on`,
`feature-dependency-added`, `feature-dependency-removed`, `feature-dependencies-removed`,
`banner-created`, `banner-updated`, `banner-deleted`, `project-environment-added`,
`project-environment-removed`, `default-strategy-updated`, `segment-import`,
`signal-endpoint-created`, `signal-endpoint-updated`, `signal-endpoint-deleted`,
`signal-endpoint-token-created`, `signal-endpoint-token-updated`,
`signal-endpoint-token-deleted`, `actions-created`, `actions-updated`, `actions-deleted`
"""


def test_event_types__exactly_spec_6_in_its_order():
    listed = re.findall(r"`([a-z-]+)`", SPEC_6)
    assert len(listed) == 146
    assert list(spec.EVENT_TYPES) == listed


def check_values(table: str, column: str) -> set[str]:
    """The values a CHECK (column IN (...)) constraint of table's definition in schema.sql allows."""
    (definition,) = re.findall(rf"CREATE TABLE IF NOT EXISTS {table} \((.*?)\n\);", schema.schema_sql(), re.S)
    (found,) = re.findall(rf"CHECK \({column} IN \(([^)]*)\)\)", definition)
    return set(re.findall(r"'([^']*)'", found))


@pytest.mark.parametrize(
    ("table", "column", "vocabulary"),
    [("users", "root_role", spec.ROOT_ROLES), ("integration_events", "state", spec.INTEGRATION_EVENT_STATES)],
)
def test_schema_checks__allow_exactly_the_vocabulary(table, column, vocabulary):
    assert check_values(table, column) == set(vocabulary)


def test_flag_types__the_rows_of_feature_types():
    (rows,) = re.findall(r"INSERT OR IGNORE INTO feature_types[^;]*;", schema.schema_sql())
    assert set(re.findall(r"\('([a-z-]+)',", rows)) == set(spec.FLAG_TYPES)


def test_resource_limits__defaults_for_exactly_the_spec_names():
    assert list(DEFAULT_RESOURCE_LIMITS) == list(spec.RESOURCE_LIMITS)
    assert set(spec.POSITIVE_RESOURCE_LIMITS) <= set(spec.RESOURCE_LIMITS)
    assert all(DEFAULT_RESOURCE_LIMITS[name] >= 1 for name in spec.POSITIVE_RESOURCE_LIMITS)
