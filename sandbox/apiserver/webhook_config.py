"""Admission webhook configurations as the API server reads them, and which webhooks a request calls.

``admissionregistration.k8s.io/v1`` Mutating- and ValidatingWebhookConfiguration objects are read
from the store on every request (they are few and small): a webhook is called when one of its
``rules`` matches the request's operation, group, version, resource (``plural`` or
``plural/subresource``, with ``*`` wildcards) and scope, its ``namespaceSelector`` matches the
labels of the object's namespace (of the object itself for a Namespace; cluster-scoped objects
always match) and its ``objectSelector`` matches the new or the old object's labels. Mutating
webhooks run in configuration-name order, then in list order, as the real server orders them.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from runtimes.k8s.meta import LabelSelector

from .kinds import ResourceType

WebhookType = Literal["Mutating", "Validating"]
DEFAULT_TIMEOUT_SECONDS = 10.0  # the v1 default of timeoutSeconds
MAX_TIMEOUT_SECONDS = 30.0


class WebhookConfigError(ValueError):
    """A configuration that cannot be used; the message names the object and the field."""


@dataclass(frozen=True)
class Rule:
    operations: tuple[str, ...]
    api_groups: tuple[str, ...]
    api_versions: tuple[str, ...]
    resources: tuple[str, ...]
    scope: str

    def matches(self, operation: str, rtype: ResourceType, subresource: str | None) -> bool:
        if "*" not in self.operations and operation not in self.operations:
            return False
        if "*" not in self.api_groups and rtype.group not in self.api_groups:
            return False
        if "*" not in self.api_versions and rtype.version not in self.api_versions:
            return False
        if (self.scope == "Cluster" and rtype.namespaced) or (self.scope == "Namespaced" and not rtype.namespaced):
            return False
        wanted = rtype.plural if subresource is None else f"{rtype.plural}/{subresource}"
        for resource in self.resources:
            if resource == wanted or resource == "*/*":
                return True
            if resource == "*" and subresource is None:
                return True
            if subresource is not None and resource in (f"{rtype.plural}/*", f"*/{subresource}"):
                return True
        return False


@dataclass(frozen=True)
class Webhook:
    """One entry of a configuration's ``webhooks`` list."""

    configuration: str
    type: WebhookType
    name: str
    rules: tuple[Rule, ...]
    namespace_selector: LabelSelector
    object_selector: LabelSelector
    failure_policy: str  # Fail | Ignore
    timeout_seconds: float
    url: str | None
    service: tuple[str, str, int, str] | None  # namespace, name, port, path
    ca_bundle: bytes | None
    side_effects: str = "None"  # None | NoneOnDryRun | Some | Unknown

    def matches(
        self,
        operation: str,
        rtype: ResourceType,
        subresource: str | None,
        namespace_labels: Mapping[str, str] | None,
        labels: Sequence[Mapping[str, str]],
    ) -> bool:
        if not any(rule.matches(operation, rtype, subresource) for rule in self.rules):
            return False
        if namespace_labels is not None and not self.namespace_selector.matches(dict(namespace_labels)):
            return False
        return any(self.object_selector.matches(dict(found)) for found in labels)

    @property
    def where(self) -> str:
        return f"{self.type}WebhookConfiguration {self.configuration}, webhook {self.name}"


def _strings(value: Any, where: str, field: str) -> tuple[str, ...]:
    if value is None:
        return ()
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise WebhookConfigError(f"{where}: {field} must be a list of strings")
    return tuple(value)


def _selector(value: Any, where: str, field: str) -> LabelSelector:
    if value is None:
        return LabelSelector()
    try:
        return LabelSelector.model_validate(value)
    except ValueError as error:
        raise WebhookConfigError(f"{where}: {field} is not a label selector: {error}") from None


def _client_config(value: Any, where: str) -> tuple[str | None, tuple[str, str, int, str] | None, bytes | None]:
    if not isinstance(value, dict):
        raise WebhookConfigError(f"{where}: clientConfig is required (url or service)")
    bundle: bytes | None = None
    if value.get("caBundle"):
        try:
            bundle = base64.b64decode(str(value["caBundle"]), validate=True)
        except (binascii.Error, ValueError):
            raise WebhookConfigError(f"{where}: clientConfig.caBundle is not base64-encoded PEM") from None
    url, service = value.get("url"), value.get("service")
    if (url is None) == (service is None):
        raise WebhookConfigError(f"{where}: clientConfig needs exactly one of url and service")
    if url is not None:
        if not isinstance(url, str) or not url.startswith("https://"):
            raise WebhookConfigError(f"{where}: clientConfig.url must be an https:// URL, not {url!r}")
        return url, None, bundle
    if not isinstance(service, dict) or not service.get("name") or not service.get("namespace"):
        raise WebhookConfigError(f"{where}: clientConfig.service needs a name and a namespace")
    path = str(service.get("path") or "/")
    return None, (str(service["namespace"]), str(service["name"]), int(service.get("port", 443)), path), bundle


def parse_webhooks(kind: WebhookType, configuration: Mapping[str, Any]) -> list[Webhook]:
    """The webhooks of one configuration object (raises ``WebhookConfigError`` naming the field)."""
    name = str((configuration.get("metadata") or {}).get("name", "?"))
    found: list[Webhook] = []
    for index, entry in enumerate(configuration.get("webhooks") or []):
        where = f"{kind}WebhookConfiguration {name}: webhooks[{index}]"
        if not isinstance(entry, dict) or not entry.get("name"):
            raise WebhookConfigError(f"{where}: each webhook needs a name")
        where = f"{kind}WebhookConfiguration {name}: webhook {entry['name']}"
        rules = []
        for position, rule in enumerate(entry.get("rules") or []):
            if not isinstance(rule, dict):
                raise WebhookConfigError(f"{where}: rules[{position}] must be a mapping")
            rules.append(
                Rule(
                    _strings(rule.get("operations"), where, f"rules[{position}].operations"),
                    _strings(rule.get("apiGroups"), where, f"rules[{position}].apiGroups"),
                    _strings(rule.get("apiVersions"), where, f"rules[{position}].apiVersions"),
                    _strings(rule.get("resources"), where, f"rules[{position}].resources"),
                    str(rule.get("scope") or "*"),
                )
            )
        policy = str(entry.get("failurePolicy") or "Fail")
        if policy not in ("Fail", "Ignore"):
            raise WebhookConfigError(f"{where}: failurePolicy must be Fail or Ignore, not {policy!r}")
        timeout = float(entry.get("timeoutSeconds") or DEFAULT_TIMEOUT_SECONDS)
        if not 1 <= timeout <= MAX_TIMEOUT_SECONDS:
            raise WebhookConfigError(f"{where}: timeoutSeconds must be between 1 and 30, not {timeout:g}")
        url, service, bundle = _client_config(entry.get("clientConfig"), where)
        versions = _strings(entry.get("admissionReviewVersions"), where, "admissionReviewVersions")
        if "v1" not in versions:
            # this server speaks admission.k8s.io/v1 only, as kube-apiserver does since 1.22
            raise WebhookConfigError(f"{where}: admissionReviewVersions must include v1, got {list(versions)}")
        side_effects = str(entry.get("sideEffects") or "")
        if side_effects not in ("None", "NoneOnDryRun", "Some", "Unknown"):
            raise WebhookConfigError(f"{where}: sideEffects must be None or NoneOnDryRun, got {side_effects!r}")
        found.append(
            Webhook(
                configuration=name,
                type=kind,
                name=str(entry["name"]),
                rules=tuple(rules),
                namespace_selector=_selector(entry.get("namespaceSelector"), where, "namespaceSelector"),
                object_selector=_selector(entry.get("objectSelector"), where, "objectSelector"),
                failure_policy=policy,
                timeout_seconds=timeout,
                url=url,
                service=service,
                ca_bundle=bundle,
                side_effects=side_effects,
            )
        )
    return found
