"""The domain's refusals: why flagadmin will not read or change something, in its own words.

Domain code (``flags/``, ``integrations/``, ``directory/``, ``tokens/``, ``seed/``) raises
these and nothing else to refuse a request; it knows nothing of HTTP. Two renderers turn them
into answers, each in one place: the admin API's error envelope (spec 2.8, 7) in
``web/errors.py``, and SCIM's error body (RFC 7644 section 3.12) in ``blueprints/scim.py``.
The command line prints their message.

====================  ======  ===========================  =====================
refusal               status  envelope ``name``            SCIM ``scimType``
====================  ======  ===========================  =====================
:class:`Invalid`      400     ``BadDataError``             ``scim_type`` or none
:class:`Forbidden`    403     ``NoAccessError``            none
:class:`NotFound`     404     ``NotFoundError``            none
:class:`Conflict`     409     ``ConflictError``            ``scim_type`` or none
:class:`Unavailable`  503     ``ServiceUnavailableError``  none
====================  ======  ===========================  =====================

Every message says what was wrong and what is accepted or what to do; ``details`` lists one
message per problem (an :class:`Invalid` with several problems).
"""

from __future__ import annotations

from typing import ClassVar


class Refusal(Exception):
    """A request flagadmin refuses: ``message`` (str, shown to the caller), ``details`` (one
    message per problem; ``[message]`` when none are given) and ``scim_type`` (RFC 7644
    section 3.12's ``scimType``, for the SCIM renderer; ``None`` elsewhere)."""

    #: The HTTP status both renderers answer with.
    status: ClassVar[int] = 400

    def __init__(self, message: str, *, details: list[str] | None = None, scim_type: str | None = None):
        super().__init__(message)
        self.message = message
        self.details = list(details) if details else [message]
        self.scim_type = scim_type


class Invalid(Refusal):
    """400: the request's content breaks a rule (a name, a value, a body's shape)."""

    status = 400


class Forbidden(Refusal):
    """403: the caller is known but lacks ``permission`` (a permission name such as
    ``UPDATE_FEATURE``, or ``None``) in ``project`` and ``environment`` (spec 5.3, 7)."""

    status = 403

    def __init__(
        self,
        message: str,
        *,
        permission: str | None = None,
        project: str | None = None,
        environment: str | None = None,
    ):
        super().__init__(message)
        self.permission = permission
        self.project = project
        self.environment = environment


class NotFound(Refusal):
    """404: what the request names does not exist, or the caller may not know that it does."""

    status = 404


class Conflict(Refusal):
    """409: the request conflicts with what is stored (a name taken, a state already left)."""

    status = 409


class Unavailable(Refusal):
    """503: something the request needs cannot be reached now; retry after ``retry_after_s``
    seconds (int)."""

    status = 503

    def __init__(self, message: str, *, retry_after_s: int = 1):
        super().__init__(message)
        self.retry_after_s = retry_after_s
