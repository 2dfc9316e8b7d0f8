"""What one REST listener lets through: its share of the routes (``admin.listeners``) and, when a
credentials file is configured, only authenticated users (HTTP basic), ``/admin`` only for admins.

A plain ASGI wrapper around the FastAPI app, so it covers every path the app serves (``/ui``,
``/metrics``, ``/openapi.json`` included) without touching the routes or the OpenAPI document.
"""

from __future__ import annotations

import base64
import binascii
import logging
from dataclasses import dataclass

from starlette.concurrency import run_in_threadpool
from starlette.types import ASGIApp, Receive, Scope, Send

from api.app import error_response
from api.rest_credentials import BasicAuthenticator

log = logging.getLogger(__name__)

REALM = "mirror-sink"
#: Connect's JaasBasicAuthFilter's wording for any authentication failure (no hint which part was wrong).
UNAUTHORIZED = "User cannot access the resource."


def is_admin_path(path: str) -> bool:
    """True for Connect's admin resources (``/admin/loggers`` and below)."""
    return path == "/admin" or path.startswith("/admin/")


@dataclass
class ListenerApp:
    """The REST app as one listener serves it.

    ``main``/``admin``: which routes this listener serves; the others answer Connect's 404, as a
    Connect listener without the admin resources does. ``authenticator``: None = no authentication.
    ``admin_users``: who may use ``/admin`` (None = every authenticated user); anyone else gets 403.

    Kafka Connect's ``BasicAuthSecurityRestExtension`` filters every resource, ``/health`` (KIP-1017)
    included: only its internal worker-to-worker task requests skip it, and this worker makes none.
    So ``/health`` needs credentials here too; a probe that cannot send them can check the TCP port.
    """

    app: ASGIApp
    main: bool = True
    admin: bool = True
    authenticator: BasicAuthenticator | None = None
    admin_users: frozenset[str] | None = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Gate, authenticate, authorize, then hand over to the app."""
        if scope["type"] != "http":  # lifespan: the app's own business
            await self.app(scope, receive, send)
            return
        admin_path = is_admin_path(scope["path"])
        if not (self.admin if admin_path else self.main):
            await error_response(404, "HTTP 404 Not Found")(scope, receive, send)
            return
        if self.authenticator is not None:
            user = await self._authenticate(scope)
            if user is None:
                headers = {"WWW-Authenticate": f'Basic realm="{REALM}"'}
                await error_response(401, UNAUTHORIZED, headers)(scope, receive, send)
                return
            if admin_path and self.admin_users is not None and user not in self.admin_users:
                await error_response(403, f"User {user} may not use the admin endpoints")(scope, receive, send)
                return
        await self.app(scope, receive, send)

    async def _authenticate(self, scope: Scope) -> str | None:
        """The user of a valid ``Authorization: Basic`` header, or None."""
        assert self.authenticator is not None
        header = next((v for k, v in scope["headers"] if k == b"authorization"), None)
        if header is None:
            return None
        method, _, encoded = header.decode("latin-1").partition(" ")
        if method.lower() != "basic":
            return None
        try:
            user, sep, password = base64.b64decode(encoded.strip(), validate=True).decode("utf-8").partition(":")
        except (binascii.Error, UnicodeDecodeError):
            return None
        if not sep or not user:
            return None
        # Argon2 takes ~50 ms of CPU (less on a cache hit): off the event loop, which serves every listener.
        if await run_in_threadpool(self.authenticator.verify, user, password):
            return user
        # DEBUG, as Connect: a mistyped password is not worth a line in an operator's log.
        log.debug("REST request for %s refused: bad credentials for user %r", scope["path"], user)
        return None
