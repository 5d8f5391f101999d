"""Webhooks the service refused (wrong credentials, 401) or could not read (malformed, 400), recorded in the
project file's rejects so that ``easl ls status`` counts and shows them.

A record holds the reason and the client address, never a credential. It is written in a thread, without delaying
the answer; failed authentications are rate-limited per address (``auth.FailureLimiter``), so these writes are few.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from typing import Any

from easl_toolkit.easl_plugin.payloads import client_address

log = logging.getLogger("easl.serve")
DELIVERY_SOURCE = "label-studio-delivery"  #: source of the rejects that record refused and malformed webhooks
DELIVERY_REFUSED = "refused"  #: location prefix of a webhook refused for its credentials (401)
DELIVERY_MALFORMED = "malformed"  #: location prefix of a webhook refused as malformed (400)


def _store_delivery(path: str, kind: str, reason: str, client: str) -> None:
    from easl_toolkit.core.store import Project, now

    with Project.open(path) as project:
        project.add_reject(source=DELIVERY_SOURCE, location=f"{kind} webhook from {client} at {now()}", reason=reason)


def record_delivery(scope: Mapping[str, Any], kind: str, reason: str) -> None:
    """Record a refused or malformed webhook (``kind``: ``DELIVERY_REFUSED`` or ``DELIVERY_MALFORMED``) of the
    request ``scope`` in the rejects of the app's project file, in a thread; a failure is logged, never raised."""
    app = scope.get("app")
    svc = getattr(getattr(app, "state", None), "easl", None)
    if svc is None:
        return
    client = client_address(scope)

    def store() -> None:
        try:
            _store_delivery(svc.config.project_path, kind, reason, client)
        except Exception as exc:  # counting a refusal must never fail the service
            log.warning("could not record a %s webhook: %s", kind, exc.__class__.__name__)

    asyncio.get_running_loop().run_in_executor(None, store)
