"""Issue 15 target (b), Spark side: ``vigil bench pipeline --preset throughput``'s threshold point at
1M-row micro-batches only (in-process replay and Spark driver mode in one run, ``auto``).

    python scripts/pipeline_threshold.py [--batch 1000000] [--out results/pipeline_threshold.json]
"""

from __future__ import annotations

import argparse
import json


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--batch", type=int, default=1_000_000)
    ap.add_argument("--algo", default="auto")
    ap.add_argument("--out", default="results/pipeline_threshold.json")
    a = ap.parse_args()
    from vigil.bench.pipeline import run_preset

    doc = run_preset("throughput", algos={"threshold": a.algo}, out=a.out, workloads=("threshold",),
                     batches=(a.batch,))
    for r in doc["results"]:
        print(json.dumps(r["extra"]))


if __name__ == "__main__":
    main()
