#!/usr/bin/env python3
"""Times HTA on one trace folder: TraceAnalysis(trace_dir) (load), then get_temporal_breakdown
and get_comm_comp_overlap; prints one JSON line with the seconds and the headline figures.

usage: hta_time.py TRACE_DIR   (run with the bench venv's python)
"""
import json
import logging
import sys
import time
import warnings

warnings.filterwarnings("ignore")
T0 = time.perf_counter()
from hta.configs.config import logger  # noqa: E402
from hta.trace_analysis import TraceAnalysis  # noqa: E402

logger.setLevel(logging.ERROR)
T1 = time.perf_counter()
ta = TraceAnalysis(trace_dir=sys.argv[1])
T2 = time.perf_counter()
tb = ta.get_temporal_breakdown(visualize=False)
ov = ta.get_comm_comp_overlap(visualize=False)
T3 = time.perf_counter()
print(json.dumps({
    "import_s": T1 - T0,
    "load_s": T2 - T1,
    "analysis_s": T3 - T2,
    "ranks": tb["rank"].tolist(),
    "idle_time_pctg": tb["idle_time_pctg"].tolist(),
    "compute_time_pctg": tb["compute_time_pctg"].tolist(),
    "comp_comm_overlap_pctg": ov["comp_comm_overlap_pctg"].tolist(),
}))
