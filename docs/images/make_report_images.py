"""Regenerate the example curator's report shown in docs/report.md (synthetic data, seeded).

Run from the repository root: ``python docs/images/make_report_images.py``. It builds the
walk-through's survey (docs/walkthrough.md: wages with a universe, ages 16 and over), fits the
imputation, rehearses three planned releases and writes the report's PNGs here as
``report-*.png`` (and the Markdown as ``report-example.md``).
"""

from pathlib import Path

import numpy as np

from dpknn import Continuous, KNNImputer, Ordinal, Schema, curator_report
from dpknn.datasets._census import make_census
from dpknn.schema._attributes import Categorical

HERE = Path(__file__).resolve().parent

df = make_census(3000, rng=7)[["AGE", "SEX", "SCHOOL", "INCWAGE"]]
df.insert(0, "SERIAL", np.arange(100_000, 100_000 + len(df)))
df.loc[df.AGE < 16, "INCWAGE"] = np.nan
schema = Schema(known=[Ordinal("AGE", 0, 99), Categorical("SEX", [1, 2]), Ordinal("SCHOOL", 0, 17)],
                imputed=[Continuous("INCWAGE", 0, 5001, universe={"AGE": (16, None)})], label="SERIAL")
imputer = KNNImputer(schema).fit(df)
queries = [
    {"name": "mean wage, ages 20-59", "type": "mean", "column": "INCWAGE", "where": {"AGE": (20, 59)},
     "epsilon": 4.2, "count_epsilon": 0.7},
    {"name": "share of adults earning over 1000", "type": "proportion", "where": {"INCWAGE": (1000, None)},
     "within": {"AGE": (16, None)}, "epsilon": 4.2, "denominator_epsilon": 0.7},
    {"name": "mean wage, ages 90+", "type": "mean", "column": "INCWAGE", "where": {"AGE": (90, None)},
     "epsilon": 1.5, "count_epsilon": 0.5},
]
report = curator_report(imputer, df, queries=queries, draws=1000, rng=1)
for name, fig in report.figures():
    fig.savefig(HERE / f"report-{name}", dpi=100)
(HERE / "report-example.md").write_text(report.to_markdown().replace("](", "](report-") + "\n")
