"""casu with 1,000,000 notify queries on the uniform stream (the issue's target size), the KLL
re-answer peer and GK alone on the same input; bench functions of vigil.bench.quantiles."""
import json, sys, time
import numpy as np
from vigil.bench.quantiles import run_processing, run_kll_reanswer, summary_seconds, EPS
from vigil.workloads.quantiles import data_stream, query_set
n_x = int(sys.argv[1]); nq = int(sys.argv[2]); kind = sys.argv[3]; out = sys.argv[4]
x = data_stream(kind, n_x, 0)
phi, eq = query_set(nq, "uniform", (0.005, 0.02), 1)
sec = summary_seconds(x, EPS)
sec4 = summary_seconds(x, EPS / 4)
r = run_processing("casu", x, phi, eq, summary_s=sec)
k = run_kll_reanswer(x, phi)
doc = {"elements": n_x, "queries": nq, "stream": kind, "summary_seconds": sec, "summary_seconds_eps4": sec4,
       "casu": {"seconds": r.seconds, **{a: b for a, b in r.extra.items() if a != "curve"}},
       "kll_reanswer": {"seconds": k.seconds, **k.extra}}
json.dump(doc, open(out, "w"), indent=1)
print(json.dumps(doc, indent=1))
