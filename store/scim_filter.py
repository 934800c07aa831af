"""SCIM filters (RFC 7644 section 3.4.2.2) as SQL conditions with bound parameters.

A filter arrives parsed by scim2-models (:class:`scim2_models.ScimFilter`, whose ``ast`` is a
tree of ``Comparison``, ``Present``, ``Not``, ``LogicalExpr`` and ``ValuePath`` nodes). This
module walks the tree and writes SQL from a fixed vocabulary: each attribute a filter may name
maps to a trusted column expression (:data:`USER_ATTRIBUTES`, :data:`GROUP_ATTRIBUTES`), each
operator to a fixed SQL shape, and every value the client sent becomes a ``?`` parameter. No
byte of the filter text is ever put into SQL.

Semantics, the same on SQLite and PostgreSQL: string attributes whose schema says
``caseExact: false`` compare case-insensitively, ASCII letters folded and nothing else (the
column through :data:`~flagadmin.store.collation.FOLD`, the fold the unique indexes use; the
value folded in Python by :func:`~flagadmin.store.collation.fold`); ``co``/``sw``/``ew`` are
``LIKE`` patterns with ``%``, ``_`` and ``\\`` escaped (SQLite's ``LIKE`` ignores ASCII case,
PostgreSQL's does not: case-exact ones are re-checked exactly, and case-insensitive ones
compare folded text, so neither depends on it); ``gt``/``ge``/``lt``/``le`` compare text by
code point (PostgreSQL under the "C" collation, not the database's locale), timestamps
(``meta.created``, ``meta.lastModified``) as stored RFC 3339 UTC text; ``pr`` is "has a
non-empty value"; a comparison on an attribute without a value is false, and ``not`` turns
unknown into true. Conditions are SQL booleans (``TRUE``/``FALSE``, never 1/0, which
PostgreSQL does not take as one). Multi-valued attributes kept in other tables (a user's
``groups``, a group's ``members``) are ``EXISTS`` subqueries. A value holding NUL is refused
(no stored text holds one, and PostgreSQL's text cannot).

It is over 400 lines because it has one job, a SCIM filter (RFC 7644 section 3.4.2.2) turned
into SQL for both dialects, and its operators and attributes read best as one table.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from scim2_models.path import (
    AttrPath,
    CompareOperator,
    Comparison,
    FilterNode,
    LogicalExpr,
    LogicalOperator,
    Not,
    Present,
    ValuePath,
)

from ..timestamps import format_rfc3339
from .collation import BINARY, FOLD, fold

USER_SCHEMA = "urn:ietf:params:scim:schemas:core:2.0:user"
GROUP_SCHEMA = "urn:ietf:params:scim:schemas:core:2.0:group"

#: SCIM ids are unique across all resources (RFC 7643 section 3.1): a user's is its flagadmin
#: id (``12``), a group's its id after this prefix (``group-12``).
GROUP_ID_PREFIX = "group-"

#: Filters at most this deep (nested parentheses, ``not``) or with more terms are refused:
#: SQLite limits the depth of an expression, and no identity provider sends more.
MAX_DEPTH = 16
MAX_TERMS = 100


class UnsupportedFilter(ValueError):
    """The filter names an attribute or uses an operator flagadmin cannot evaluate; the
    message says which, and what is supported (SCIM ``invalidFilter``)."""


class UnknownAttribute(UnsupportedFilter):
    """The filter names an attribute the resource type does not have."""


@dataclass(frozen=True)
class Attribute:
    """What a filter attribute stands for in SQL.

    ``column``: a trusted SQL expression; ``kind``: ``string``, ``id`` (an integer key compared
    as its decimal text), ``boolean``, ``datetime`` or ``constant`` (``column`` is then the
    value itself); ``case_exact``: string comparison keeps case.
    """

    column: str
    kind: str = "string"
    case_exact: bool = False
    prefix: str = ""


@dataclass(frozen=True)
class Collection:
    """A multi-valued attribute kept in another table: the ``EXISTS`` subquery that ranges over
    its values (``{sql}`` joined to the outer row) and the sub-attributes of one value."""

    sql: str
    attributes: dict[str, Attribute]
    default: str = "value"


@dataclass(frozen=True)
class Vocabulary:
    """The attributes of one resource type: plain ones by lower-case path (``name.givenname``),
    multi-valued ones kept in columns of the row itself (``emails``: single-valued in
    flagadmin) and collections kept in other tables."""

    schema: str
    attributes: dict[str, Attribute]
    inline: dict[str, tuple[str, dict[str, Attribute]]] = field(default_factory=dict)
    collections: dict[str, Collection] = field(default_factory=dict)


#: A user flagadmin had before SCIM wrote it has its email as its primary work email. An email
#: stored without ``primary`` (only before booleans were checked) is not the primary one: a
#: boolean is true or false, as the documents say.
_USER_EMAIL = {
    "value": Attribute("u.email"),
    "type": Attribute("coalesce(u.email_type, CASE WHEN u.scim_managed = 0 THEN 'work' END)"),
    "primary": Attribute(
        "CASE WHEN u.email IS NOT NULL THEN coalesce(u.email_primary, 1 - u.scim_managed) END", "boolean"
    ),
}

#: Users (alias ``u``): what ``/Users`` filters may name.
USER_ATTRIBUTES = Vocabulary(
    schema=USER_SCHEMA,
    attributes={
        "id": Attribute("u.id", "id"),
        "username": Attribute("u.username"),
        "externalid": Attribute("u.external_id", case_exact=True),
        "displayname": Attribute("u.name"),
        "name.givenname": Attribute("u.given_name"),
        "name.familyname": Attribute("u.family_name"),
        "name.formatted": Attribute("u.formatted_name"),
        # never NULL since schema version 10 (NULL was read as active, as everywhere)
        "active": Attribute("coalesce(u.active, 1)", "boolean"),
        "meta.created": Attribute("u.created_at", "datetime"),
        "meta.lastmodified": Attribute("u.last_modified", "datetime"),
        "meta.resourcetype": Attribute("User", "constant"),
    },
    # emails: flagadmin keeps one email per user, in columns of the user's row.
    inline={"emails": ("u.email", _USER_EMAIL)},
    collections={
        "groups": Collection(
            "SELECT 1 FROM directory_group_members gm JOIN directory_groups gg ON gg.id = gm.group_id"
            " WHERE gm.user_id = u.id",
            {
                "value": Attribute("gm.group_id", "id", prefix=GROUP_ID_PREFIX),
                "display": Attribute("gg.display_name"),
                "type": Attribute("direct", "constant"),
            },
        )
    },
)

#: Groups (alias ``g``): what ``/Groups`` filters may name.
GROUP_ATTRIBUTES = Vocabulary(
    schema=GROUP_SCHEMA,
    attributes={
        "id": Attribute("g.id", "id", prefix=GROUP_ID_PREFIX),
        "displayname": Attribute("g.display_name"),
        "externalid": Attribute("g.external_id", case_exact=True),
        "meta.created": Attribute("g.created_at", "datetime"),
        "meta.lastmodified": Attribute("g.last_modified", "datetime"),
        "meta.resourcetype": Attribute("Group", "constant"),
    },
    collections={
        "members": Collection(
            "SELECT 1 FROM directory_group_members gm JOIN users mu ON mu.id = gm.user_id"
            " WHERE gm.group_id = g.id",
            {
                "value": Attribute("gm.user_id", "id"),
                "display": Attribute("coalesce(gm.display, mu.name, mu.username)"),
                "type": Attribute("User", "constant"),
            },
        )
    },
)


@dataclass
class Condition:
    """A SQL boolean expression and its parameters, in order."""

    sql: str
    params: list[Any]


def condition(
    node: FilterNode, vocabulary: Vocabulary, dialect: str = "sqlite", *, unknown_is_false: bool = False
) -> Condition:
    """Return the SQL condition for the filter tree ``node`` over ``vocabulary``'s rows, in the
    SQL of ``dialect`` (``sqlite`` or ``postgresql``: they differ in a substring function and in
    collations, see the module docstring).

    An attribute the resource type does not have is refused, unless ``unknown_is_false``: a
    search over several resource types evaluates it to false (RFC 7644 section 3.4.2.1).

    :raise UnsupportedFilter: an attribute is not in the vocabulary, an operator does not
        apply to its attribute's type, a value has the wrong type, or the filter is deeper than
        :data:`MAX_DEPTH` or has more than :data:`MAX_TERMS` comparisons, or a value holds NUL
        or a lone surrogate (no engine can store it).
    """
    writer = _Writer(vocabulary, dialect, unknown_is_false)
    sql = writer.node(node, 0)
    return Condition(sql, writer.params)


def like_pattern(text: str, *, prefix: bool, suffix: bool) -> str:
    """``text`` as a ``LIKE ... ESCAPE '\\'`` pattern: its ``\\``, ``%`` and ``_`` escaped, with
    ``%`` before it when ``prefix`` and after it when ``suffix``."""
    escaped = text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return ("%" if prefix else "") + escaped + ("%" if suffix else "")


class _Writer:
    """Writes SQL for one filter; collects its parameters in order."""

    def __init__(self, vocabulary: Vocabulary, dialect: str, unknown_is_false: bool = False):
        self.vocabulary = vocabulary
        self.dialect = dialect
        self.unknown_is_false = unknown_is_false
        self.params: list[Any] = []
        self.terms = 0

    def node(self, node: FilterNode, depth: int, scope: dict[str, Attribute] | None = None) -> str:
        if depth > MAX_DEPTH:
            raise UnsupportedFilter(f"The filter is nested more than {MAX_DEPTH} levels deep.")
        if isinstance(node, LogicalExpr):
            joiner = " AND " if node.op == LogicalOperator.and_ else " OR "
            return "(" + joiner.join(self.node(term, depth + 1, scope) for term in node.terms) + ")"
        if isinstance(node, Not):
            # A comparison on a missing value is NULL in SQL; "not" of it is true in SCIM.
            return f"(NOT coalesce({self.node(node.expr, depth + 1, scope)}, FALSE))"
        try:
            if isinstance(node, ValuePath):
                return self.value_path(node, depth)
            if isinstance(node, Comparison | Present):
                self.terms += 1
                if self.terms > MAX_TERMS:
                    raise UnsupportedFilter(f"The filter has more than {MAX_TERMS} comparisons.")
                return self.leaf(node, scope)
        except UnknownAttribute:
            if not self.unknown_is_false:
                raise
            return "FALSE"
        raise UnsupportedFilter(f"flagadmin cannot evaluate the filter expression {node}.")

    # --- attributes -------------------------------------------------------------------------

    def _key(self, attr_path: AttrPath) -> tuple[str, str | None]:
        """(attribute, sub-attribute) in lower case, the core schema URN dropped."""
        if attr_path.uri is not None and attr_path.uri.lower() != self.vocabulary.schema:
            raise UnknownAttribute(
                f"flagadmin keeps no attribute of the schema {attr_path.uri}: filter on "
                f"{self.supported()} instead."
            )
        return attr_path.attr.lower(), attr_path.sub_attr.lower() if attr_path.sub_attr else None

    def supported(self) -> str:
        names = [name for name in self.vocabulary.attributes]
        names += [f"{name}.{sub}" for name, (_, subs) in self.vocabulary.inline.items() for sub in subs]
        names += [f"{name}.{sub}" for name, c in self.vocabulary.collections.items() for sub in c.attributes]
        return ", ".join(names)

    def unknown(self, attr_path: AttrPath) -> UnknownAttribute:
        return UnknownAttribute(
            f"flagadmin cannot filter on {attr_path}: it filters on {self.supported()} "
            "(attribute names in any case)."
        )

    def leaf(self, node: Comparison | Present, scope: dict[str, Attribute] | None) -> str:
        attr, sub = self._key(node.attr_path)
        if scope is not None:
            # Inside a value path: names are sub-attributes of one value.
            if sub is not None or attr not in scope:
                raise self.unknown(node.attr_path)
            return self.compare(scope[attr], node)
        if sub is None and attr in self.vocabulary.attributes:
            return self.compare(self.vocabulary.attributes[attr], node)
        if sub is not None and f"{attr}.{sub}" in self.vocabulary.attributes:
            return self.compare(self.vocabulary.attributes[f"{attr}.{sub}"], node)
        if attr in self.vocabulary.inline:
            presence, subs = self.vocabulary.inline[attr]
            if isinstance(node, Present) and sub is None:
                return self.present(Attribute(presence))
            if (sub or "value") not in subs:
                raise self.unknown(node.attr_path)
            return self.compare(subs[sub or "value"], node)
        if attr in self.vocabulary.collections:
            collection = self.vocabulary.collections[attr]
            if isinstance(node, Present) and sub is None:
                return f"EXISTS ({collection.sql})"
            if (sub or collection.default) not in collection.attributes:
                raise self.unknown(node.attr_path)
            inner = self.compare(collection.attributes[sub or collection.default], node)
            return f"EXISTS ({collection.sql} AND {inner})"
        raise self.unknown(node.attr_path)

    def value_path(self, node: ValuePath, depth: int) -> str:
        attr, sub = self._key(node.attr_path)
        if sub is not None or node.sub_attr is not None:
            raise self.unknown(node.attr_path)
        if attr in self.vocabulary.inline:
            presence, subs = self.vocabulary.inline[attr]
            inner = self.node(node.val_filter, depth + 1, subs)
            return f"({presence} IS NOT NULL AND {inner})"
        if attr in self.vocabulary.collections:
            collection = self.vocabulary.collections[attr]
            inner = self.node(node.val_filter, depth + 1, collection.attributes)
            return f"EXISTS ({collection.sql} AND {inner})"
        raise self.unknown(node.attr_path)

    # --- comparisons ------------------------------------------------------------------------

    def bind(self, value: Any) -> str:
        """Every value of the SQL goes through here: refused if neither engine can store it."""
        if isinstance(value, str):
            if "\x00" in value:
                raise UnsupportedFilter("A filter value must not hold a NUL character (\\u0000).")
            if not value.isascii():
                try:
                    value.encode("utf-8")
                except UnicodeEncodeError:
                    raise UnsupportedFilter(
                        "A filter value must be Unicode text: it holds a lone surrogate"
                        " (\\ud800 to \\udfff), which UTF-8 cannot encode."
                    ) from None
        self.params.append(value)
        return "?"

    def binary(self, expression: str) -> str:
        """``expression`` compared and ordered by code point, on either engine."""
        suffix = BINARY[self.dialect]
        return f"({expression}){suffix}" if suffix else expression

    def present(self, attribute: Attribute) -> str:
        if attribute.kind == "constant":
            return "TRUE"
        if attribute.kind == "string":
            return f"({attribute.column} IS NOT NULL AND {attribute.column} <> '')"
        return f"({attribute.column} IS NOT NULL)"

    def compare(self, attribute: Attribute, node: Comparison | Present) -> str:
        if isinstance(node, Present):
            return self.present(attribute)
        op, value = node.op, node.value
        if attribute.kind == "boolean":
            return self.compare_boolean(attribute, op, value)
        if attribute.kind == "id":
            return self.compare_id(attribute, op, value)
        if attribute.kind == "datetime":
            return self.compare_text(attribute.column, op, self.timestamp(value), case_exact=True)
        if not isinstance(value, str):
            raise UnsupportedFilter(f"{node.attr_path} is a string: compare it with a quoted value.")
        if attribute.kind == "constant":
            # meta.resourceType and the like: the same for every row of the endpoint.
            return self.compare_text(_literal(attribute.column), op, value, case_exact=attribute.case_exact)
        return self.compare_text(attribute.column, op, value, case_exact=attribute.case_exact)

    def compare_boolean(self, attribute: Attribute, op: CompareOperator, value: Any) -> str:
        if not isinstance(value, bool) or op not in (CompareOperator.eq, CompareOperator.ne):
            raise UnsupportedFilter("A boolean attribute takes eq or ne with true or false.")
        wanted = self.bind(int(value))
        if op == CompareOperator.eq:
            return f"{attribute.column} = {wanted}"
        return f"({attribute.column} IS NULL OR {attribute.column} <> {wanted})"

    def compare_id(self, attribute: Attribute, op: CompareOperator, value: Any) -> str:
        if not isinstance(value, str):
            raise UnsupportedFilter("An id is a string: compare it with a quoted value.")
        if op in (CompareOperator.eq, CompareOperator.ne):
            number = parse_id(value, attribute.prefix)
            if number is None:
                # No row has this id: eq matches nothing, ne everything.
                return "FALSE" if op == CompareOperator.eq else "TRUE"
            wanted = self.bind(number)
            return (
                f"{attribute.column} = {wanted}"
                if op == CompareOperator.eq
                else (f"{attribute.column} <> {wanted}")
            )
        text = f"CAST({attribute.column} AS TEXT)"
        if attribute.prefix:
            text = f"{_literal(attribute.prefix)} || {text}"
        return self.compare_text(f"({text})", op, value, case_exact=True)

    def compare_text(self, column: str, op: CompareOperator, value: Any, *, case_exact: bool) -> str:
        # Equality is byte equality under any deterministic collation, so a case-exact one keeps
        # the column's own (and its index); LIKE and ordering go by code point on both engines.
        folded = self.binary(column) if case_exact else FOLD[self.dialect].format(column)
        equal = column if case_exact else folded

        def wanted(text: str) -> str:
            return self.bind(text if case_exact else fold(text))

        if op == CompareOperator.eq:
            return f"{equal} = {wanted(value)}"
        if op == CompareOperator.ne:
            return f"({column} IS NULL OR {equal} <> {wanted(value)})"
        if op in (CompareOperator.co, CompareOperator.sw, CompareOperator.ew):
            pattern = like_pattern(value, prefix=op != CompareOperator.sw, suffix=op != CompareOperator.ew)
            like = f"{folded} LIKE {wanted(pattern)} ESCAPE '\\'"
            if not case_exact:
                return like
            # SQLite's LIKE ignores the case of ASCII letters: the exact check follows it.
            return f"({like} AND {self.exact_match(column, op, value)})"
        ordering = {
            CompareOperator.gt: ">",
            CompareOperator.ge: ">=",
            CompareOperator.lt: "<",
            CompareOperator.le: "<=",
        }
        if op in ordering:
            return f"{folded} {ordering[op]} {wanted(value)}"
        raise UnsupportedFilter(f"flagadmin does not know the operator {op}.")

    def exact_match(self, column: str, op: CompareOperator, value: str) -> str:
        """Case-exact ``co``/``sw``/``ew`` with portable string functions."""
        if op == CompareOperator.sw:
            return f"substr({column}, 1, {self.bind(len(value))}) = {self.bind(value)}"
        if op == CompareOperator.ew:
            return f"substr({column}, length({column}) - {self.bind(len(value) - 1)}) = {self.bind(value)}"
        position = "strpos" if self.dialect == "postgresql" else "instr"
        return f"{position}({column}, {self.bind(value)}) > 0"

    def timestamp(self, value: Any) -> str:
        if isinstance(value, datetime):
            moment = value
        else:
            try:
                moment = datetime.fromisoformat(str(value))
            except ValueError as exc:
                raise UnsupportedFilter(
                    f"{_quoted(value)} is not a date-time: write it as in RFC 3339,"
                    " e.g. 2026-01-31T12:00:00Z."
                ) from exc
        if moment.tzinfo is None:
            moment = moment.replace(tzinfo=UTC)
        return format_rfc3339(moment.astimezone(UTC))


def _quoted(value: Any) -> str:
    """``value`` as JSON writes it (a string in double quotes), never a Python repr, for
    messages."""
    return json.dumps(value if isinstance(value, str | int | float | bool) or value is None else str(value))


def _literal(text: str) -> str:
    """A constant of this module (never input) as an SQL string literal. A column expression
    may appear more than once in a condition, so it holds no ``?`` of its own."""
    if not all(ch.isalnum() or ch == "-" for ch in text):
        raise ValueError(f"{_quoted(text)} is not a plain constant")
    return f"'{text}'"


def parse_id(text: str, prefix: str = "") -> int | None:
    """The integer key a SCIM ``id`` stands for (``prefix`` then the key's canonical decimal
    text, e.g. ``group-12``), or None."""
    if not text.startswith(prefix):
        return None
    text = text[len(prefix) :]
    if not text.isascii() or not text.isdigit() or (len(text) > 1 and text[0] == "0") or len(text) > 18:
        return None
    return int(text)


def group_scim_id(group_id: int) -> str:
    """The SCIM ``id`` of group ``group_id``."""
    return f"{GROUP_ID_PREFIX}{group_id}"
