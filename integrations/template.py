"""The body template of a webhook: ``bodyTemplate`` rendered as Mustache, within a budget.

It holds :func:`render_template` (the context ``event`` and ``eventJson``), its
:class:`TemplateError`, :func:`js_text` (a value written as mustache.js writes it, which
custom header values reuse), the renderer that bounds the work of one rendering, and
:data:`SAMPLE_EVENT` (the event templates are tried on when a configuration is saved, and the
base of a test delivery's event).

The language is Mustache (the mustache(5) manual, as the reference server's webhook provider
renders it with mustache.js): ``{{x}}`` is HTML-escaped the way mustache.js escapes (``&``,
``<``, ``>``, quotes, ``/``, backtick and ``=``), ``{{{x}}}`` is not; missing names render as
nothing; partials are refused (there are no template files). pystache renders it; the budget
(:data:`MAX_SECTION_ITERATIONS`, :data:`MAX_RENDERED_BODY`) is flagadmin's, so that a
template cannot make one event's body run away. The event rendered is spec 2.3's.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import orjson
import pystache

#: mustache.js's escaping of ``{{x}}`` (HTML, plus ``/``, backtick and ``=``).
_MUSTACHE_JS_ESCAPES = str.maketrans(
    {
        "&": "&amp;",
        "<": "&lt;",
        ">": "&gt;",
        '"': "&quot;",
        "'": "&#39;",
        "/": "&#x2F;",
        "`": "&#x60;",
        "=": "&#x3D;",
    }
)
#: Section iterations one rendering may make (nested sections over long lists multiply).
MAX_SECTION_ITERATIONS = 100_000
#: The largest body a template may render (bytes of UTF-8, roughly).
MAX_RENDERED_BODY = 1024 * 1024


class TemplateError(Exception):
    """A ``bodyTemplate`` that cannot be rendered: a syntax error, a partial, or too much work."""


def js_text(value: Any) -> str:
    """A value as mustache.js writes it: ``true``/``false``, integers without ``.0``, null as
    nothing, arrays joined with commas."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return str(int(value)) if value.is_integer() and abs(value) < 1e21 else repr(value)
    if isinstance(value, list):
        return ",".join(js_text(item) for item in value)
    if isinstance(value, dict):
        return "[object Object]"
    return str(value)


#: Tag types of Mustache (the character after the opening delimiter); any other is a variable.
_TYPES = "#^/>!&{="
_SECTION, _INVERTED, _END, _PARTIAL, _COMMENT, _UNESCAPED, _TRIPLE, _DELIMITERS = _TYPES


def _where(template: str, index: int) -> str:
    """``line L, column C`` (both from 1) of ``template[index]``."""
    line = template.count("\n", 0, index) + 1
    return f"line {line}, column {index - template.rfind(chr(10), 0, index)}"


def _shown(text: str, limit: int = 40) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def syntax_problem(template: str, outside: list[tuple[str, int, str]] | None = None) -> str | None:
    """What makes ``template`` not a complete Mustache template (the mustache(5) manual's
    syntax), in flagadmin's words with the line and column, or None when it is one. The names
    used outside every section are appended to ``outside`` (``(name, index, tag)``) when given.

    Checked: every tag is closed (``{{x}}``, ``{{{x}}}``, ``{{=<% %>=}}`` with what ends its
    type), every section (``{{#x}}``, ``{{^x}}``) is closed by ``{{/x}}`` in the reverse order
    of opening, no ``{{/x}}`` closes what was not opened, tags have names, a set-delimiter tag
    gives two delimiters, and there are no partials (``{{> x}}``: there are no template files).
    pystache renders such templates anyway (an unclosed tag as text, an unclosed section to
    the end), so the body would not be what its author meant: they are refused instead.
    """
    opening, closing = "{{", "}}"
    sections: list[tuple[str, int, str]] = []  # (name, index, opening tag as written)
    index = 0
    while (start := template.find(opening, index)) >= 0:
        inner = start + len(opening)
        kind = template[inner : inner + 1]
        ending = {_TRIPLE: "}" + closing, _DELIMITERS: "=" + closing}.get(kind, closing)
        body_at = inner + 1 if kind and kind in _TYPES else inner
        end = template.find(ending, body_at)
        if end < 0:
            return (
                f"the tag {_shown(template[start:])!r} at {_where(template, start)} is never closed "
                f"(end it with {ending})"
            )
        tag = template[start : end + len(ending)]
        name = template[body_at:end].strip()
        index = end + len(ending)
        if kind == _COMMENT:
            continue
        if kind == _DELIMITERS:
            delimiters = name.split()
            if len(delimiters) != 2 or any("=" in d for d in delimiters):
                return (
                    f"the set-delimiter tag {_shown(tag)!r} at {_where(template, start)} must give two "
                    "delimiters without '=', like {{=<% %>=}}"
                )
            opening, closing = delimiters
            continue
        if not name:
            return f"the tag {_shown(tag)!r} at {_where(template, start)} has no name"
        if kind == _PARTIAL:
            where = _where(template, start)
            return f"the tag {_shown(tag)!r} at {where} is a partial; partials are not supported"
        if outside is not None and not sections and kind != _END:
            outside.append((name, start, tag))
        if kind in (_SECTION, _INVERTED):
            sections.append((name, start, tag))
        elif kind == _END:
            if not sections:
                return f"{_shown(tag)!r} at {_where(template, start)} closes a section that was never opened"
            opened, opened_at, opened_tag = sections.pop()
            if opened != name:
                return (
                    f"{_shown(tag)!r} at {_where(template, start)} does not close the section "
                    f"{_shown(opened_tag)!r} opened at {_where(template, opened_at)}; close sections in the "
                    "reverse order of opening"
                )
    if sections:
        name, at, tag = sections[-1]
        return (
            f"the section {_shown(tag)!r} opened at {_where(template, at)} is never closed "
            f"(end it with {opening}/{name}{closing})"
        )
    return None


#: The names a template's context has (:func:`render_template`'s).
CONTEXT_NAMES = ("event", "eventJson")


def unknown_name(template: str) -> str | None:
    """The first name used outside every section that :func:`render_template`'s context does
    not have (``event``, ``eventJson``), said in flagadmin's words with where it is; None when
    there is none (or the template has a syntax problem: :func:`syntax_problem` says it).

    Mustache renders an unknown name as nothing, so a template written for another server
    (the reference server's ``{{{eventMarkdown}}}``) would send a body with a hole in it. Names
    inside a section are looked up in the section's value first and are not checked.
    """
    outside: list[tuple[str, int, str]] = []
    if syntax_problem(template, outside) is not None:
        return None
    for name, at, tag in outside:
        head = name.split(".")[0]
        if name != "." and head not in CONTEXT_NAMES:
            return (
                f"the tag {_shown(tag)!r} at {_where(template, at)} names {head!r}, which a webhook "
                "template does not have: use event (the event: {{event.type}}, {{event.data.name}}...) "
                "or eventJson (the event as JSON: {{{eventJson}}})"
            )
    return None


class _NoPartials:
    """Partials (``{{> name}}``) would read templates from files: there are none."""

    def get(self, name: str) -> str:
        raise TemplateError(f"the template uses the partial {{{{> {name}}}}}; partials are not supported")


class _BudgetedRenderer(pystache.Renderer):
    """pystache's renderer, with bounds on the work one rendering may do: at most
    :data:`MAX_SECTION_ITERATIONS` section iterations and :data:`MAX_RENDERED_BODY` characters
    written, so that nested sections over long lists cannot run away."""

    def __init__(self) -> None:
        super().__init__(
            escape=lambda text: text.translate(_MUSTACHE_JS_ESCAPES),
            partials=_NoPartials(),
            missing_tags="ignore",
            search_dirs=[],
        )
        self.str_coerce = js_text
        self.iterations = 0
        self.written = 0

    def _iterate(self, count: int) -> None:
        self.iterations += count
        if self.iterations > MAX_SECTION_ITERATIONS:
            raise TemplateError(
                "rendering the template for this event takes too much work (nested sections over "
                "long lists?); simplify it"
            )

    def _write(self, count: int) -> None:
        self.written += count
        if self.written > MAX_RENDERED_BODY:
            raise TemplateError(f"the rendered body is longer than {MAX_RENDERED_BODY} characters")

    def _make_render_engine(self):
        engine = super()._make_render_engine()
        fetch_section_data, escape, literal = engine.fetch_section_data, engine.escape, engine.literal

        def counted_section_data(context: Any, name: str) -> Any:
            data = fetch_section_data(context, name)
            self._iterate(1 + len(data))
            return data

        def counted(write: Callable[[Any], str]) -> Callable[[Any], str]:
            def run(value: Any) -> str:
                text = write(value)
                self._write(len(text))
                return text

            return run

        engine.fetch_section_data = counted_section_data
        engine.escape = counted(escape)
        engine.literal = counted(literal)
        return engine


def render_template(template: str, event: dict[str, Any]) -> str:
    """Render ``bodyTemplate`` for ``event`` (spec 2.3 shape) with the context ``event`` and
    ``eventJson`` (the event's JSON as a JSON string literal, as the reference server gives it).

    :raise TemplateError: a syntax error (:func:`syntax_problem`), a partial, or a rendering
        over the work budget or :data:`MAX_RENDERED_BODY`.
    """
    problem = syntax_problem(template)
    if problem is not None:
        raise TemplateError(f"the template is not valid Mustache: {problem}")
    context = {"event": event, "eventJson": orjson.dumps(orjson.dumps(event).decode()).decode()}
    renderer = _BudgetedRenderer()
    try:
        body = renderer.render(template, context)
    except TemplateError:
        raise
    except Exception as exc:  # pystache raises many kinds on malformed templates
        raise TemplateError(f"the template is not valid Mustache: {exc or type(exc).__name__}") from exc
    if len(body) > MAX_RENDERED_BODY:
        raise TemplateError(f"the rendered body is longer than {MAX_RENDERED_BODY} characters")
    return body


#: An event to try templates on when they are saved.
SAMPLE_EVENT: dict[str, Any] = {
    "id": 1,
    "createdAt": "2026-01-01T00:00:00.000Z",
    "type": "feature-created",
    "createdBy": "admin",
    "createdByUserId": 1,
    "environment": "production",
    "project": "default",
    "featureName": "sample-flag",
    "data": {
        "name": "sample-flag",
        "type": "release",
        "enabled": True,
        "description": "A sample flag",
        "strategies": [{"name": "default", "parameters": {}}],
    },
    "preData": None,
    "tags": [{"type": "simple", "value": "sample"}],
}
