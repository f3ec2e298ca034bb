"""Run private-pgm's MST or AIM on a table of integer codes (run in the peers' own Python).

Usage: python pgm_peer.py PGM_MECHANISMS_DIR {mst,aim} CODES.csv DOMAIN.json EPSILON SEED OUT.csv

CODES.csv holds one integer code per cell (a missing cell is its attribute's last code, as the
peers are run on incomplete data: missingness as one more category); DOMAIN.json maps each column
to its number of codes. Prints the seconds that fit + sample took. private-pgm is not part of
dpknn: point PGM_MECHANISMS_DIR at the ``mechanisms`` folder of a private-pgm checkout, and install
``mbi`` (2.x, JAX) in the peers' environment (benchmarks/README.md).
"""

import json
import sys
import time

import numpy as np
import pandas as pd

mech_dir, which, codes_path, domain_path, eps, seed, out_path = sys.argv[1:8]
sys.path.insert(0, mech_dir)
from mbi import Dataset, Domain  # noqa: E402

df = pd.read_csv(codes_path)
dom = json.loads(open(domain_path).read())
data = Dataset(df, Domain(list(dom), [dom[c] for c in dom]))
np.random.seed(int(seed))  # noqa: NPY002 (the peers draw from numpy's global state)
t = time.perf_counter()
if which == "mst":
    import mst
    # Workaround: private-pgm's domain compression builds measurements whose custom query fails
    # under JAX tracing in mbi 1.x/2.x; the tables here have at most a few dozen codes per
    # attribute, so MST runs without it (noted in benchmarks/README.md).
    mst.compress_domain = lambda data, log: (data, log, lambda d: d)
    synth = mst.MST(data, float(eps), 1e-9)
else:
    import itertools

    from aim import AIM
    workload = [(cl, 1.0) for cl in itertools.combinations(data.domain, 2)]  # AIM takes (clique, weight) pairs
    _, synth = AIM(float(eps), 1e-9, max_model_size=float(sys.argv[8]) if len(sys.argv) > 8 else 80).run(
        data, workload, num_synth_rows=len(df))  # run returns (model, synthetic data)
print(time.perf_counter() - t)
synth.df.to_csv(out_path, index=False)
