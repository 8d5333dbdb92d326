"""The base of every trainyard model of a Kubernetes object, and ObjectMeta / LabelSelector."""

from __future__ import annotations

from typing import Any, Self

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel


class KubeModel(BaseModel):
    """Kubernetes-shaped model: camelCase aliases, unknown fields kept, exact round trip.

    ``to_dict`` writes back only what was set, so an object read from YAML is written out as
    it came in (plus whatever the code changed), including fields this model does not know.
    """

    model_config = ConfigDict(
        alias_generator=to_camel,
        populate_by_name=True,
        extra="allow",
        validate_assignment=False,
        serialize_by_alias=True,
    )

    def to_dict(self) -> dict[str, Any]:
        return self.model_dump(by_alias=True, exclude_unset=True, mode="json")

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Self:
        return cls.model_validate(data)


class OwnerReference(KubeModel):
    api_version: str = ""
    kind: str = ""
    name: str = ""
    uid: str = ""
    controller: bool | None = None
    block_owner_deletion: bool | None = None


class ObjectMeta(KubeModel):
    name: str = ""
    generate_name: str | None = None
    namespace: str | None = None
    uid: str | None = None
    resource_version: str | None = None
    generation: int | None = None
    creation_timestamp: str | None = None
    deletion_timestamp: str | None = None
    labels: dict[str, str] = Field(default_factory=dict)
    annotations: dict[str, str] = Field(default_factory=dict)
    finalizers: list[str] = Field(default_factory=list)
    owner_references: list[OwnerReference] = Field(default_factory=list)


class LabelSelectorRequirement(KubeModel):
    key: str
    operator: str
    values: list[str] = Field(default_factory=list)


class LabelSelector(KubeModel):
    match_labels: dict[str, str] = Field(default_factory=dict)
    match_expressions: list[LabelSelectorRequirement] = Field(default_factory=list)

    def matches(self, labels: dict[str, str]) -> bool:
        """Kubernetes label-selector semantics; an empty selector matches everything."""
        for key, wanted in self.match_labels.items():
            if labels.get(key) != wanted:
                return False
        for requirement in self.match_expressions:
            present = requirement.key in labels
            found = labels.get(requirement.key)
            match requirement.operator:
                case "In":
                    ok = present and found in requirement.values
                case "NotIn":
                    ok = not present or found not in requirement.values
                case "Exists":
                    ok = present
                case "DoesNotExist":
                    ok = not present
                case _:
                    ok = False
            if not ok:
                return False
        return True


class Condition(KubeModel):
    """metav1.Condition: what TrainJob, JobSet and Kueue Workload statuses list."""

    type: str
    status: str
    reason: str | None = None
    message: str | None = None
    last_transition_time: str | None = None
    observed_generation: int | None = None


class Resource(KubeModel):
    """Common envelope of a top-level Kubernetes object."""

    api_version: str = ""
    kind: str = ""
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)

    def to_dict(self) -> dict[str, Any]:
        """The object as given, plus its apiVersion and kind when it was built in code without them."""
        data = super().to_dict()
        envelope = {key: value for key, value in (("apiVersion", self.api_version), ("kind", self.kind)) if value}
        return {**envelope, **data} if envelope.keys() - data.keys() else data

    @property
    def name(self) -> str:
        return self.metadata.name

    @property
    def namespace(self) -> str | None:
        return self.metadata.namespace

    @property
    def key(self) -> str:
        """``namespace/name`` for namespaced objects, ``name`` for cluster-scoped ones."""
        return f"{self.metadata.namespace}/{self.metadata.name}" if self.metadata.namespace else self.metadata.name
