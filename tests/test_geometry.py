"""One meaning of a weight: it multiplies an attribute's part of the squared distance."""

import numpy as np
import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st
from reference_knn import squared_distance as reference_d2

from dpknn import Categorical, Continuous, Ordinal, Schema
from dpknn.schema._geometry import diameter, embed, one_hot, query_until_certified, scaled_column, squared_distance
from dpknn.sdc._neighbourhoods import _design


@settings(max_examples=300, deadline=None)
@given(st.data())
def test_squared_distance_and_embedding_agree_with_the_definition(data):
    p = data.draw(st.integers(1, 5))
    n_codes = np.array(data.draw(st.lists(st.integers(1, 30), min_size=p, max_size=p)), dtype=np.int64)
    is_cat = np.array(data.draw(st.lists(st.booleans(), min_size=p, max_size=p)))
    weights = np.array(data.draw(st.lists(st.integers(1, 50), min_size=p, max_size=p)), dtype=np.int64)
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    a = rng.integers(0, n_codes, (20, p))
    b = rng.integers(0, n_codes, (20, p))
    got = squared_distance(a, b, weights, is_cat)
    want = [reference_d2(x, y, weights, is_cat) for x, y in zip(a, b)]
    np.testing.assert_array_equal(got, want)
    ea, eb = embed(a, weights, is_cat, n_codes), embed(b, weights, is_cat, n_codes)
    np.testing.assert_allclose(((ea - eb) ** 2).sum(axis=1), want, rtol=1e-12, atol=1e-9)
    corner = np.where(is_cat, np.minimum(1, n_codes - 1), n_codes - 1)
    assert diameter(weights, is_cat, n_codes) == squared_distance(np.zeros(p, dtype=np.int64), corner, weights,
                                                                  is_cat)


def test_schema_uses_the_module():
    schema = Schema(known=[Ordinal("a", 0, 9, weight=3), Categorical("c", ["x", "y"], weight=5)],
                    imputed=[Continuous("v", 0, 1)])
    assert schema.squared_distance([0, 0], [2, 1]) == 3 * 4 + 2 * 5


def test_doubling_a_weight_doubles_the_squared_distance_in_rwn_too():
    # The same meaning as the lattice: RWN's weight w multiplies the squared distance by w
    # (it used to scale coordinates by w, multiplying it by w^2).
    df = pd.DataFrame({"x": [0.0, 1.0, 2.0, 3.0], "c": ["u", "v", "u", "v"]})
    plain = _design(df, ["x", "c"], {}, {})
    heavy = _design(df, ["x", "c"], {"x": 4.0, "c": 9.0}, {})
    d_plain = ((plain[:, None] - plain[None]) ** 2)
    d_heavy = ((heavy[:, None] - heavy[None]) ** 2)
    # Column blocks: x is one column, c two one-hot columns.
    np.testing.assert_allclose(d_heavy[..., 0], 4 * d_plain[..., 0])
    np.testing.assert_allclose(d_heavy[..., 1:].sum(-1), 9 * d_plain[..., 1:].sum(-1))
    np.testing.assert_allclose(one_hot([0, 1], 2, 9.0)[0] @ one_hot([0, 1], 2, 9.0)[0], 9.0)
    np.testing.assert_allclose(scaled_column([2.0], 4.0), [[4.0]])


def test_query_until_certified_doubles_until_resolved():
    from scipy.spatial import cKDTree

    pts = np.arange(10, dtype=float)[:, None]
    tree = cKDTree(pts)
    seen = []

    def resolve(rows, dist, idx, exhausted):
        seen.append(idx.shape[1])
        return np.full(rows.size, idx.shape[1] >= 8 or exhausted)

    query_until_certified(tree, pts[:3], 2, resolve)
    assert seen == [2, 4, 8]
