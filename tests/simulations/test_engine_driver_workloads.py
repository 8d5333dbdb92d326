"""The driver's Workloads: one validated template per job shape, renamed per job, exactly as
pydantic's own ``model_copy`` would rename it and as validating the job's own document would."""

from __future__ import annotations

import dataclasses

from scheduler.api.kueue import Workload
from simulations.engine_driver import EngineDriver, renamed, workload_document
from simulations.workloads import JobSpec

JOB = JobSpec("job-7", "team-b", 0.0, 4, 8, 600.0, "high", 128000, 1048576, "preferred", "block", ("H100",))


def test_renamed_workload_is_what_model_copy_makes() -> None:
    template = EngineDriver().workload(JOB)
    copied = renamed(template, "job-8", "team-c")
    metadata = template.metadata.model_copy(update={"name": "job-8", "namespace": "team-c"})
    expected = template.model_copy(update={"metadata": metadata})
    assert copied.model_dump(by_alias=True) == expected.model_dump(by_alias=True)
    assert copied.model_fields_set == expected.model_fields_set
    assert copied.metadata.model_fields_set == expected.metadata.model_fields_set
    # the template itself is untouched, and the spec is shared (read-only), as model_copy shares it
    assert template.metadata.name == "job-7"
    assert template.metadata.namespace == "team-b"
    assert copied.spec is template.spec


def test_a_second_job_of_one_shape_is_its_own_document() -> None:
    """The second job reuses the first one's template: what it gets equals its own document validated."""
    driver = EngineDriver()
    driver.workload(JOB)
    second = dataclasses.replace(JOB, name="job-9", team="team-d")
    reused = driver.workload(second)
    validated = Workload.model_validate(workload_document(second))
    assert reused.model_dump(by_alias=True) == validated.model_dump(by_alias=True)
