"""Google Benchmark JSON as paradnn writes it, read one way by the bench
scripts that import it (PYTHONPATH=bench, PYTHONDONTWRITEBYTECODE=1:
nothing left in the source tree)."""
import json


def case_name(run_name):
    """The case's canonical name: its run name less Google Benchmark's
    suffixes (/iterations:N, /repeats:N, /real_time, /manual_time)."""
    return run_name.split("/iterations:")[0].removesuffix("/real_time")


def per_case(path):
    """(name, benchmark) per case: the median over its rounds
    (--paradnn_rounds), or its one run; a failed case once, with the
    first of its error rows (Google Benchmark writes one per round)."""
    failed = set()
    for b in json.load(open(path))["benchmarks"]:
        if "error_occurred" in b:
            name = case_name(b["run_name"])
            if name not in failed:
                failed.add(name)
                yield name, b
            continue
        if b.get("run_type") == "aggregate" and b.get("aggregate_name") != "median":
            continue
        if b.get("run_type") != "aggregate" and b.get("rounds", 1) > 1:
            continue
        yield case_name(b["run_name"]), b
