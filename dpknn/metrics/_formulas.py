"""Regressions written as formulas: the variables a formula reads, and its design on two tables.

An analyst names the model she fits, often with transforms (``np.log(wage) ~ educ + exper + I(exper ** 2)``,
the wage equation of every labour survey), interactions and ``C()`` for categories coded as numbers. Such a
formula is read in Formulaic's grammar, the one statsmodels' formulas use, so that the text she fits is the text
she names: the synthesisers put the variables it reads in their workload (``analyses``), and
:func:`~dpknn.metrics.regression_comparison` fits it as written to the real and the released table.
"""

from __future__ import annotations

import re

import numpy as np
import pandas as pd

__all__ = ["formula_designs", "formula_variables", "names_its_variables"]

#: What a plain ``y ~ x1 + x2`` never holds: a term with one of these is read as a formula.
FORMULA_SYNTAX = re.compile(r"[()*:^/|`\-]")


def _sides(text):
    left, right = (s.strip() for s in text.split("~"))
    return left, [s.strip() for s in right.split("+") if s.strip()]


def names_its_variables(text, names=None):
    """Whether the regression ``text`` (one ``~``) names its variables as they are, ``y ~ x1 + x2``: every
    term is one of ``names`` (the attributes, when given) or holds no formula syntax."""
    left, xs = _sides(text)
    return all((names is not None and t in names) or not FORMULA_SYNTAX.search(t) for t in [left, *xs])


def _formula(text):
    from formulaic import Formula

    try:
        formula = Formula(text)
        ys, xs = (sorted(str(v) for v in side.required_variables) for side in (formula.lhs, formula.rhs))
    except Exception as err:   # Formulaic's parse errors have no common base; its message's first line says it
        raise ValueError(f"could not read the regression {text!r} as a formula: {str(err).splitlines()[0]}") from None
    if len(ys) != 1 or not xs:
        raise ValueError(f"a regression must have one response variable and a covariate; {text!r} reads "
                         f"{ys} ~ {xs}.")
    return ys[0], xs


def formula_variables(text):
    """``(y, [x1, ...])``: the response variable and the covariates' variables the formula ``text`` reads, the
    covariates in the order they first appear (a variable inside a transform counts; ``y`` is left out of them)."""
    y, xs = _formula(text)
    right = text.split("~")[1]

    def first(v):   # where v first appears as a name, not inside a longer one
        m = re.search(r"(?<![\w.])`?" + re.escape(v) + r"`?(?!\w)", right)
        return m.start() if m else len(right)
    return y, sorted((x for x in xs if x != y), key=lambda x: (first(x), x))


def formula_designs(real, released, text):
    """The design of the formula ``text`` on each table: ``{"real": (design, response, names), "released": ...}``.

    The rows are the complete cases of the variables the formula reads, less those where a transform is not finite
    (the log of 0), which no fit can use. The design's structure (the categories of each factor, the state of a
    stateful transform) is learned from both tables together, so both fits have the same coefficients, as
    :func:`~dpknn.metrics.regression_comparison` codes a category on the union of both tables' categories.
    """
    from formulaic import model_matrix

    y, xs = _formula(text)
    variables = [y, *(x for x in xs if x != y)]
    for df, which in ((real, "real"), (released, "released")):
        absent = [c for c in variables if c not in df.columns]
        if absent:
            raise ValueError(f"{which} lacks the columns {absent}, which the formula {text!r} reads.")
    complete = {which: df.loc[df[variables].notna().all(axis=1), variables]
                for which, df in (("real", real), ("released", released))}
    with np.errstate(divide="ignore", invalid="ignore"):
        spec = model_matrix(text, pd.concat(complete.values(), ignore_index=True)).model_spec
        out = {}
        for which, df in complete.items():
            m = spec.get_model_matrix(df)
            response, design = (np.asarray(side, dtype=np.float64) for side in (m.lhs, m.rhs))
            if response.ndim == 2 and response.shape[1] != 1:
                raise ValueError(f"the formula {text!r} has a response of {response.shape[1]} columns; a regression "
                                 "here has one numeric (or 0/1) response.")
            response = response.reshape(-1)
            finite = np.isfinite(response) & np.isfinite(design).all(axis=1)
            out[which] = design[finite], response[finite], [str(c) for c in m.rhs.columns]
    return out
