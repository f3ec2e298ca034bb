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


def _formulaic_variables(text):
    from formulaic import Formula

    try:
        formula = Formula(text)
        return tuple(sorted(str(v) for v in side.required_variables) for side in (formula.lhs, formula.rhs))
    except Exception as err:   # Formulaic's parse errors have no common base; its message's first line says it
        raise ValueError(f"could not read the regression {text!r} as a formula: {str(err).splitlines()[0]}") from None


def _mentioned(side, names):
    """The ``names`` that ``side`` (one side of a formula) reads, by where they first appear: as an identifier (not
    inside a longer one, a string, or a function's or module's name) or in backquotes."""
    where = {}
    for n in names:
        spots = [m.start() for m in re.finditer(r"(?<![\w.'\"`])" + re.escape(n) + r"(?![\w(.'\"`])", side)]
        spots += [m.start() for m in re.finditer(re.escape(f"`{n}`"), side)]
        if spots:
            where[n] = min(spots)
    return sorted(where, key=lambda n: (where[n], n))


def formula_variables(text, names=None):
    """``(y, [x1, ...])``: the response variable and the covariates' variables the formula ``text`` reads (a variable
    inside a transform counts; ``y`` is left out of the covariates).

    With ``names`` (the attributes, or a table's columns) they are the names the formula mentions, in the order they
    first appear, which also finds those inside stateful transforms (``scale(age)``, ``poly(days, 2)``), whose
    variables Formulaic does not list; a name holding a formula's syntax (``age-group``) must then be written in
    backquotes, else it would be read as an expression of other names. A variable the formula reads that is not
    among ``names`` is returned too (the caller refuses it). Without ``names``, Formulaic's reading.
    """
    ys, xs = _formulaic_variables(text)
    if names is not None:
        left, right = text.split("~")
        for n in names:
            if FORMULA_SYNTAX.search(n) and n in text and f"`{n}`" not in text:
                raise ValueError(f"the formula {text!r} names {n!r}, which holds a formula's syntax: write it in "
                                 f"backquotes, `{n}`.")
        found_y, found_x = _mentioned(left, names), _mentioned(right, names)
        # Formulaic's variables the names do not explain (a dotted name in backquotes reads as its first part).
        ys = found_y + [v for v in ys if v not in names and not any(n.startswith(v + ".") for n in found_y)]
        xs = found_x + [v for v in xs if v not in names and not any(n.startswith(v + ".") for n in found_x)]
    else:
        right = text.split("~")[1]

        def first(v):   # where v first appears as a name, not inside a longer one
            m = re.search(r"(?<![\w.])`?" + re.escape(v) + r"`?(?!\w)", right)
            return m.start() if m else len(right)
        xs = sorted(xs, key=lambda x: (first(x), x))
    if len(ys) != 1 or not xs:
        raise ValueError(f"a regression must have one response variable and a covariate; {text!r} reads "
                         f"{list(ys)} ~ {list(xs)}.")
    return ys[0], [x for x in xs if x != ys[0]]


def formula_designs(real, released, text):
    """The design of the formula ``text`` on each table: ``{"real": (design, response, names), "released": ...}``.

    The rows are the complete cases of the variables the formula reads (:func:`formula_variables` with the real
    table's columns), less those where a transform is not finite (the log of 0), which no fit can use. The design's
    structure (the categories of each factor, the state of a stateful transform such as ``scale``) is learned from
    both tables together, so both fits have the same coefficients, as :func:`~dpknn.metrics.regression_comparison`
    codes a category on the union of both tables' categories.
    """
    from formulaic import model_matrix

    y, xs = formula_variables(text, [str(c) for c in real.columns])
    variables = [y, *xs]
    for df, which in ((real, "real"), (released, "released")):
        absent = [c for c in variables if c not in df.columns]
        if absent:
            raise ValueError(f"{which} lacks the columns {absent}, which the formula {text!r} reads.")
    complete = {which: df.loc[df[variables].notna().all(axis=1), variables]
                for which, df in (("real", real), ("released", released))}
    out = {}
    with np.errstate(divide="ignore", invalid="ignore"):
        try:
            spec = model_matrix(text, pd.concat(complete.values(), ignore_index=True)).model_spec
            matrices = {which: spec.get_model_matrix(df) for which, df in complete.items()}
        except Exception as err:   # Formulaic's evaluation errors (a transform of text, say) have no common base
            raise ValueError(f"could not evaluate the formula {text!r}: {str(err).splitlines()[0]}") from None
        for which, m in matrices.items():
            response, design = (np.asarray(side, dtype=np.float64) for side in (m.lhs, m.rhs))
            if response.ndim == 2 and response.shape[1] != 1:
                raise ValueError(f"the formula {text!r} has a response of {response.shape[1]} columns; a regression "
                                 "here has one numeric (or 0/1) response: for a logit on a category write it as "
                                 f"I({y} == 'level').")
            response = response.reshape(-1)
            finite = np.isfinite(response) & np.isfinite(design).all(axis=1)
            out[which] = design[finite], response[finite], [str(c) for c in m.rhs.columns]
    return out
