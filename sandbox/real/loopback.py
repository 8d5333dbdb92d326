"""Reaching servers on 127.0.0.1: readiness probes, and webhook configurations pointed at a URL.

With no Service network on one machine, a webhook configuration's Service reference is
replaced by the URL of the server on loopback, as envtest does; everything else in the
configuration (rules, failurePolicy, timeouts, selectors) is kept as shipped.
"""

from __future__ import annotations

import base64
import copy
import ssl
import urllib.error
import urllib.request
from typing import Any


def webhook_to_url(document: dict[str, Any], owner: str, port: int, ca_pem: bytes) -> dict[str, Any]:
    """A webhook configuration with each Service reference made a URL on loopback, named for ``owner``."""
    document = copy.deepcopy(document)
    name = document["metadata"]["name"]
    if not name.startswith(owner):
        document["metadata"]["name"] = f"{owner}-{name}"
    bundle = base64.b64encode(ca_pem).decode("ascii")
    for webhook in document.get("webhooks") or ():
        client = webhook.setdefault("clientConfig", {})
        service = client.pop("service", None)
        if service is not None:
            client["url"] = f"https://127.0.0.1:{port}{service.get('path', '/')}"
        client["caBundle"] = bundle
    return document


def http_ok(url: str) -> bool:
    """Whether ``url`` answers 200 (a readiness probe: the server's certificate is not checked)."""
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE  # a readiness probe on loopback, before any CA is known
    try:
        with urllib.request.urlopen(url, timeout=2, context=context) as response:
            return bool(response.status == 200)
    except (urllib.error.URLError, OSError, ValueError):
        return False
