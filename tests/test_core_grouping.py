import numpy as np
from dpknn._core._grouping import pack_cells, unpack_keys
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays


@settings(max_examples=200, deadline=None)
@given(st.data())
def test_pack_round_trip_and_lexicographic_order(data):
    p = data.draw(st.integers(1, 5))
    radices = np.array(data.draw(st.lists(st.integers(1, 120), min_size=p, max_size=p)), dtype=np.int64)
    n = data.draw(st.integers(0, 40))
    cols = [data.draw(arrays(np.int8, n, elements=st.integers(0, int(r) - 1))) for r in radices]
    cells = np.ascontiguousarray(np.stack(cols, axis=1) if n else np.zeros((0, p), np.int8))
    keys = pack_cells(cells, radices)
    np.testing.assert_array_equal(unpack_keys(keys, radices), cells.astype(np.int64))
    # Key order is the lexicographic order of the cells.
    lex = sorted(range(n), key=lambda i: tuple(cells[i]))
    assert [tuple(cells[i]) for i in np.argsort(keys, kind="stable")] == [tuple(cells[i]) for i in lex]
