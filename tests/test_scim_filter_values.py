"""The store's SCIM filter refuses, as invalidFilter (400), every value no engine can bind:
NUL and lone surrogates (UTF-8 cannot encode them), whichever attribute and operator carries
them, also when called without the request edge's own check. Either engine."""

from __future__ import annotations

import pytest
from scim2_models import Group, User

from flagadmin.directory.resources import filtered_page
from flagadmin.refusals import Invalid
from flagadmin.store import connect
from flagadmin.store import directory as store_directory
from flagadmin.store.scim_filter import GROUP_ATTRIBUTES, USER_ATTRIBUTES

LONE = "\ud800"


@pytest.mark.parametrize(
    ("model", "page", "vocabulary", "text"),
    [
        (User, store_directory.users_page, USER_ATTRIBUTES, f'userName eq "a{LONE}"'),
        (User, store_directory.users_page, USER_ATTRIBUTES, f'userName sw "{LONE}"'),
        (User, store_directory.users_page, USER_ATTRIBUTES, f'emails[value co "{LONE}"]'),
        (
            User,
            store_directory.users_page,
            USER_ATTRIBUTES,
            f'externalId eq "x" or name.givenName ew "{LONE}"',
        ),
        (User, store_directory.users_page, USER_ATTRIBUTES, 'userName eq "a\u0000"'),
        (Group, store_directory.groups_page, GROUP_ATTRIBUTES, f'displayName eq "{LONE}"'),
    ],
)
def test_filtered_page__value_no_engine_can_bind__invalid_filter(database, model, page, vocabulary, text):
    with connect(database) as conn, pytest.raises(Invalid) as refused:
        filtered_page(conn, page, vocabulary, model, text, 1, 10)
    assert refused.value.scim_type == "invalidFilter"


def test_filtered_page__non_ascii_value__searched(database):
    with connect(database) as conn:
        total, _ = filtered_page(
            conn, store_directory.users_page, USER_ATTRIBUTES, User, 'userName eq "zoë"', 1, 10
        )
    assert total == 0
