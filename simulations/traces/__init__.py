"""Trace readers: the Alibaba openb 2023 GPU trace and trainyard's own job CSV."""

from simulations.traces.jobcsv import JOB_CSV_COLUMNS, read_job_csv
from simulations.traces.openb import BUNDLED_OPENB_DIR, OpenbTrace, read_openb

__all__ = ["BUNDLED_OPENB_DIR", "JOB_CSV_COLUMNS", "OpenbTrace", "read_job_csv", "read_openb"]
