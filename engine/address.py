"""The address a watcher listens on (``--metrics HOST:PORT``): parsed once, shared by the
exporter that binds it and the watchers that start the exporter, so neither imports the other
for it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass


class AddressError(ValueError):
    """A ``--metrics`` address that cannot be bound."""


@dataclass(frozen=True)
class Address:
    host: str
    port: int

    def __str__(self) -> str:
        return f"{self.host}:{self.port}"


_ADDR = re.compile(r"^(?:(?P<host>\[[0-9a-fA-F:]+\]|[A-Za-z0-9.\-]*):)?(?P<port>[0-9]+)$")


def parse_address(text: str, default_host: str = "127.0.0.1") -> Address:
    """``HOST:PORT``, ``:PORT`` or ``PORT``; a missing host binds loopback only."""
    m = _ADDR.match(text.strip())
    if not m:
        raise AddressError(f"--metrics: expected HOST:PORT or PORT, got {text!r}")
    port = int(m.group("port"))
    if not 0 <= port <= 65535:
        raise AddressError(f"--metrics: port must be 0..65535, got {port}")
    host = (m.group("host") or default_host).strip("[]")
    return Address(host, port)
