"""The settings of ``easl serve`` (``ServiceConfig``): read by the web app (``service.py``), its authentication
(``auth.py``) and the process start-up (``server.py``)."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class ServiceConfig:
    """Settings of ``easl serve`` (see ``tui/commands/serve.py`` for the command-line flags).

    ``insecure`` allows listening on a non-loopback address without any credential (``server.serve`` refuses
    otherwise) and then takes requests from any address.
    """

    project_path: str
    host: str = "127.0.0.1"
    port: int = 9090
    max_body_bytes: int = 4 * 1024 * 1024
    basic_auth: tuple[str, str] | None = field(default=None, repr=False)
    webhook_secret: str | None = field(default=None, repr=False)
    streaming: int = 0  # 0: batch mode; N > 0: keep N HITs open
    reconcile_interval_s: float = 60.0
    ack_timeout_s: float = 5.0
    api_key: str | None = field(default=None, repr=False)
    ls_url: str | None = None
    insecure: bool = False
    max_connections: int = 2048  # uvicorn answers 503 beyond this many concurrent connections

    @property
    def has_credentials(self) -> bool:
        """Whether ``/webhook`` requires anything (basic auth or the shared secret)."""
        return bool(self.basic_auth) or bool(self.webhook_secret)
