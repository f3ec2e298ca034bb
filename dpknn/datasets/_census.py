"""Synthetic census extracts shaped like the 1940 U.S. census test data of Clifton et al. (2022).

The real 1940 extract (IPUMS) cannot be shipped, so :func:`make_census` draws a synthetic
population with the same columns, IPUMS-style integer codes, and the dependence that matters
for the paper's experiment: wages rise with age and schooling, differ by sex, race, urban
residence and class of worker, and wage income is missing more often for the groups that earn
more, so that ignoring missing data biases means and proportions downwards.

References
----------
.. [1] Clifton, Hanson, Kifer, Shamis, et al. (2022). "Differentially private k-nearest neighbor
   missing data imputation", §6 (1940 census experiment).
.. [2] Ruggles, S. et al. (2018). IPUMS USA: 1940 Census extract for disclosure avoidance research.
"""

from __future__ import annotations

import logging

import numpy as np
import pandas as pd

from dpknn.datasets._missingness import calibrate_intercept, sigmoid
from dpknn.schema._attributes import Categorical, Continuous, Ordinal, Schema
from dpknn.utils._validation import check_positive_int, check_rng

__all__ = ["CENSUS_CODEBOOK", "add_missingness", "census_schema", "make_census"]

logger = logging.getLogger(__name__)

#: Labels of the integer codes used by :func:`make_census` (IPUMS-style).
CENSUS_CODEBOOK = {
    "SEX": {1: "Male", 2: "Female"},
    "RACE": {1: "White", 2: "Black", 3: "American Indian", 4: "Chinese", 5: "Japanese", 6: "Other"},
    "RELATE": {1: "Head", 2: "Spouse", 3: "Child", 4: "Child-in-law", 5: "Parent or parent-in-law",
               6: "Other relative", 7: "Non-related adult", 8: "Group quarters"},
    "MARST": {1: "Married, spouse present", 2: "Married, spouse absent", 3: "Separated",
              4: "Divorced", 5: "Widowed", 6: "Never married"},
    "EMPSTAT": {0: "N/A (under 14)", 1: "Employed", 2: "Unemployed", 3: "Not in labor force"},
    "CLASSWKR": {0: "N/A", 1: "Self-employed", 2: "Works for wages"},
    "URBAN": {1: "Rural", 2: "Urban"},
}

#: Top code of INCWAGE: 5001 stands for "5000 or more", as in the 1940 extract.
INCWAGE_TOP = 5001

_MISSING = ("mar", "mnar", "mcar", "none")


def _check_missing(missing, missing_rate):
    if missing not in _MISSING:
        raise ValueError(f"missing must be one of {_MISSING}, got {missing!r}.")
    if not (isinstance(missing_rate, (int, float)) and 0.0 <= missing_rate < 0.7):
        raise ValueError(f"missing_rate must be a number in [0, 0.7), got {missing_rate!r}.")


def census_schema():
    """The :class:`~dpknn.Schema` matching :func:`make_census`.

    Known (matching) attributes: AGE grouped by decade (as in the paper, §6.2), SCHOOL, SEX,
    RACE, RELATE, MARST, EMPSTAT, CLASSWKR and URBAN; imputed attribute: INCWAGE on the public
    range [0, 5001]. Records are labelled by row position.
    """
    cats = {k: list(v) for k, v in CENSUS_CODEBOOK.items()}
    return Schema(
        known=[
            Ordinal("AGE", 0, 99, bin_width=10),
            Ordinal("SCHOOL", 0, 17),
            Categorical("SEX", cats["SEX"]),
            Categorical("RACE", cats["RACE"]),
            Categorical("RELATE", cats["RELATE"]),
            Categorical("MARST", cats["MARST"]),
            Categorical("EMPSTAT", cats["EMPSTAT"]),
            Categorical("CLASSWKR", cats["CLASSWKR"]),
            Categorical("URBAN", cats["URBAN"]),
        ],
        imputed=[Continuous("INCWAGE", 0, INCWAGE_TOP)],
    )


def _draw_by_group(rng, group, tables, out, codes):
    """For each group g, draw ``out[group == g]`` from ``codes`` with probabilities ``tables[g]``."""
    for g, probs in tables.items():
        idx = np.flatnonzero(group == g)
        if idx.size:
            out[idx] = rng.choice(codes, size=idx.size, p=np.asarray(probs) / np.sum(probs))


def _draw_family(rng, age, male):
    """Marital status and relationship to the household head (integer codes)."""
    n = age.size
    # Marital status by age: marriage after the early twenties, widowhood from the fifties.
    marst = np.full(n, 6, dtype=np.int8)
    adult = age >= 15
    p_wid = np.clip((age - 55) / 40.0, 0.0, 0.6)
    p_mar = sigmoid((age - 24) / 3.5) * 0.85
    u = rng.random(n)
    wid = adult & (u < p_wid)
    mar = adult & ~wid & (u < p_wid + p_mar * (1 - p_wid))
    marst[wid] = 5
    marst[mar] = rng.choice([1, 2, 3, 4], size=int(mar.sum()), p=[0.93, 0.03, 0.02, 0.02])

    # Relationship to household head, by age group, marital status and sex.
    relate = np.empty(n, dtype=np.int8)
    married = (marst >= 1) & (marst <= 3)
    group = np.select(
        [age < 18, married & male, married & ~male, age < 30, age < 55],
        [0, 1, 2, 3, 4], default=5,
    )
    _draw_by_group(rng, group, {
        0: [0, 0, 0.90, 0, 0, 0.07, 0.02, 0.01],
        1: [0.95, 0, 0.02, 0.01, 0, 0.01, 0.01, 0],
        2: [0, 0.93, 0.02, 0.03, 0, 0.01, 0.01, 0],
        3: [0.10, 0, 0.55, 0, 0, 0.12, 0.17, 0.06],
        4: [0.50, 0, 0.10, 0, 0.05, 0.15, 0.14, 0.06],
        5: [0.40, 0, 0, 0, 0.30, 0.12, 0.10, 0.08],
    }, relate, np.arange(1, 9))
    return marst, relate


def _draw_work(rng, age, male, married, urban_b):
    """Employment status, class of worker, and who is unemployed."""
    n = age.size
    # Employment: labour-force participation by age, sex and marital status; 1940 unemployment.
    p_lf = np.where(male,
                    np.select([age < 14, age < 20, age < 60, age < 70], [0.0, 0.5, 0.95, 0.55], 0.2),
                    np.select([age < 14, age < 20, age < 60, age < 70], [0.0, 0.25, 0.35, 0.1], 0.04))
    p_lf = np.where(~male & married, p_lf * 0.4, p_lf)
    in_lf = rng.random(n) < p_lf
    unemployed = in_lf & (rng.random(n) < 0.12)
    empstat = np.where(age < 14, 0, np.where(in_lf, np.where(unemployed, 2, 1), 3)).astype(np.int8)

    # Class of worker: farm self-employment is common in rural areas and at older ages.
    p_self = np.clip(np.where(urban_b, 0.10, 0.38) + 0.004 * (age - 40), 0.02, 0.8)
    worker = empstat == 1
    classwkr = np.where(worker, np.where(rng.random(n) < p_self, 1, 2), 0)
    classwkr = np.where(unemployed & (rng.random(n) < 0.85), 2, classwkr).astype(np.int8)
    return empstat, classwkr, unemployed


def _draw_wages(rng, age, school, male, urban_b, white, unemployed, classwkr):
    """Wage income of wage earners (0 for everyone else), top-coded."""
    n = age.size
    # Wages: a Mincer-type log-wage with a concave age profile.
    exp_years = np.maximum(age - 14, 0).astype(np.float64)
    log_wage = (4.3 + 0.09 * school + 0.075 * exp_years - 0.0011 * exp_years**2
                + 0.5 * male + 0.3 * urban_b - 0.35 * ~white - 1.0 * unemployed
                + 0.75 * rng.standard_normal(n))
    wage = np.minimum(np.rint(np.exp(log_wage)), INCWAGE_TOP)
    wage_earner = classwkr == 2
    return np.where(wage_earner, wage, 0).astype(np.int32)


def make_census(n, *, missing="mar", missing_rate=0.2, rng=None):
    """Draw a synthetic census extract with wage income partly missing.

    Parameters
    ----------
    n : int
        Number of person records.
    missing : {"mar", "mnar", "mcar", "none"}, default "mar"
        Missingness model of INCWAGE, which only persons aged 14 and over can have missing.
        ``"mar"``: the chance of a missing wage depends on known attributes that also predict
        high wages (wage workers, urban residents, men, ages 35-64, more schooling, non-related
        adults), so complete cases under-represent high earners, yet records alike in their
        known attributes are alike in their chance of being missing (imputation from them can
        remove the bias). ``"mnar"``: as "mar" plus a dependence on the wage itself (high
        earners within a cell are missing more often). ``"mcar"``: a constant chance.
        ``"none"``: nothing missing.
    missing_rate : float, default 0.2
        Expected fraction of all records whose INCWAGE is missing (ignored for "none"). It must
        stay below the share of persons aged 14 and over (about 0.75).
    rng : numpy.random.Generator, int or None
        Source of randomness (see :func:`dpknn.check_rng`).

    Returns
    -------
    pandas.DataFrame
        One row per person with columns AGE (0-99), SCHOOL (highest grade, 0-17), SEX, RACE,
        RELATE (8 categories), MARST, EMPSTAT, CLASSWKR, URBAN (integer codes, see
        :data:`CENSUS_CODEBOOK`), INCWAGE (float, wage income in dollars 0-5001 with 5001 the
        top code, NaN where missing) and INCWAGE_TRUE (int, the wage before missingness).
        Most persons have no wage income (children, the self-employed, persons out of the
        labour force), so INCWAGE has many zeros.

    Notes
    -----
    All draws are vectorised; 10^7 rows take a few seconds. The dependence structure is
    stylised after the 1940 census, not fitted to it.
    """
    n = check_positive_int(n, "n", minimum=0)
    _check_missing(missing, missing_rate)
    rng = check_rng(rng)

    ages = np.arange(100)
    age_w = (1.0 - ages / 100.0) ** 1.2 + 0.02
    age = rng.choice(ages, size=n, p=age_w / age_w.sum()).astype(np.int16)
    male = rng.random(n) < 0.5
    sex = np.where(male, 1, 2).astype(np.int8)
    urban_b = rng.random(n) < 0.5
    urban = np.where(urban_b, 2, 1).astype(np.int8)
    race = rng.choice(np.arange(1, 7), size=n, p=[0.90, 0.06, 0.02, 0.01, 0.005, 0.005]).astype(np.int8)
    white = race == 1

    # Schooling: older cohorts and rural, non-white persons had fewer grades; capped by age.
    mean_school = 9.5 - 0.05 * np.maximum(age - 25, 0) + 0.8 * urban_b - 1.5 * ~white
    school = np.rint(mean_school + 3.0 * rng.standard_normal(n))
    school = np.clip(school, 0, np.clip(age - 5, 0, 17)).astype(np.int8)

    marst, relate = _draw_family(rng, age, male)
    married = (marst >= 1) & (marst <= 3)
    empstat, classwkr, unemployed = _draw_work(rng, age, male, married, urban_b)
    true_wage = _draw_wages(rng, age, school, male, urban_b, white, unemployed, classwkr)

    df = pd.DataFrame({
        "AGE": age, "SCHOOL": school, "SEX": sex, "RACE": race, "RELATE": relate, "MARST": marst,
        "EMPSTAT": empstat, "CLASSWKR": classwkr, "URBAN": urban,
        "INCWAGE": true_wage.astype(np.float64), "INCWAGE_TRUE": true_wage,
    })
    return add_missingness(df, missing=missing, missing_rate=missing_rate, rng=rng, copy=False)


def add_missingness(df, *, missing="mar", missing_rate=0.2, rng=None, copy=True):
    """Set INCWAGE to NaN by a missingness model, from INCWAGE_TRUE and the known attributes.

    Used by :func:`make_census`, and by the census experiment to draw a new missingness
    realisation on each survey sample. The models are described in :func:`make_census`; the
    MNAR model depends on the log of the true wage of wage earners.

    Returns a DataFrame (a copy unless ``copy=False``); ``df`` is not modified when copying.

    Parameters
    ----------
    df : pandas.DataFrame
        A census extract with the columns of :func:`make_census` (INCWAGE_TRUE, AGE, CLASSWKR, and for
        ``"mar"``/``"mnar"`` URBAN, SEX, SCHOOL and RELATE).
    missing : {"mar", "mnar", "mcar", "none"}, default "mar"
        Missingness model of INCWAGE (see :func:`make_census`).
    missing_rate : float, default 0.2
        Expected fraction of all records whose INCWAGE is missing, in [0, 0.7) (ignored for "none").
    rng : numpy.random.Generator, int or None
        Source of randomness (see :func:`dpknn.check_rng`).
    copy : bool, default True
        Work on a copy of ``df``; False sets INCWAGE in ``df`` itself.
    """
    _check_missing(missing, missing_rate)
    rng = check_rng(rng)
    out = df.copy() if copy else df
    n = len(out)
    age = out["AGE"].to_numpy()
    true_wage = out["INCWAGE_TRUE"].to_numpy()
    wage_earner = out["CLASSWKR"].to_numpy() == 2
    asked = age >= 14
    if missing == "none" or missing_rate == 0 or n == 0:
        is_missing = np.zeros(n, dtype=bool)
    else:
        if missing == "mcar":
            eta = np.zeros(n)
        else:
            urban, male = out["URBAN"].to_numpy() == 2, out["SEX"].to_numpy() == 1
            eta = (0.9 * wage_earner + 0.5 * urban + 0.3 * male
                   + 0.6 * ((age >= 35) & (age < 65)) + 0.08 * out["SCHOOL"].to_numpy()
                   + 0.4 * (out["RELATE"].to_numpy() == 7))
            if missing == "mnar":
                eta = eta + 0.5 * np.where(wage_earner, np.log(np.maximum(true_wage, 1)) - 6.0, 0.0)
        share = asked.mean()
        target = missing_rate / share if share > 0 else 0.0
        if target >= 1.0:
            raise ValueError(
                f"missing_rate={missing_rate} is more than the share of persons aged 14+ ({share:.3f})."
            )
        b0 = calibrate_intercept(eta[asked], target, rng) if asked.any() else 0.0
        is_missing = asked & (rng.random(n) < sigmoid(b0 + eta))
    incwage = true_wage.astype(np.float64)
    incwage[is_missing] = np.nan
    out["INCWAGE"] = incwage
    logger.debug("add_missingness: %d rows, %d missing INCWAGE", n, int(is_missing.sum()))
    return out
