"""Sources of uniform random bits for the exact noise samplers.

Every sampler of :mod:`dpknn.mechanisms._noise` draws integers uniformly at random from a
:class:`RandomSource` and does all its arithmetic on integers and fractions, so that each
released number has exactly the distribution its privacy proof assumes.

``rng=None`` (the default everywhere) is the operating system's cryptographically secure
generator (:mod:`secrets`, i.e. ``os.urandom``). An int seed or a :class:`numpy.random.Generator`
gives a reproducible stream, for experiments and tests only: anyone who knows the seed can
remove the noise, and the same seed on two neighbouring data sets draws the same noise.
"""

from __future__ import annotations

import secrets

import numpy as np

from dpknn.utils._validation import check_rng

__all__ = ["RandomSource", "as_source"]


class RandomSource:
    """Uniform random integers from the OS CSPRNG (``generator=None``) or a numpy Generator.

    Parameters
    ----------
    generator : numpy.random.Generator or None
        None: :mod:`secrets` (cryptographically secure, not reproducible).
    """

    __slots__ = ("_buf", "_gen", "_pos")

    def __init__(self, generator=None):
        if generator is not None and not isinstance(generator, np.random.Generator):
            raise TypeError(f"generator must be a numpy.random.Generator or None, got {generator!r}.")
        self._gen = generator
        self._buf, self._pos = [], 0

    def _word(self):
        # Raw 64-bit words fetched in blocks: one numpy call per 512 words, not per draw.
        if self._pos == len(self._buf):
            self._buf = self._gen.integers(0, 2**64, size=512, dtype=np.uint64).tolist()
            self._pos = 0
        self._pos += 1
        return self._buf[self._pos - 1]

    @property
    def generator(self):
        """The numpy Generator the bits come from (None for the OS CSPRNG)."""
        return self._gen

    @property
    def secure(self):
        """True when the bits come from the operating system's CSPRNG."""
        return self._gen is None

    def randbits(self, k):
        """A uniform integer in [0, 2**k)."""
        if k <= 0:
            return 0
        if self._gen is None:
            return secrets.randbits(k)
        words = -(-k // 64)
        value = 0
        for _ in range(words):
            value = (value << 64) | self._word()
        return value >> (64 * words - k)

    def words(self, n):
        """``n`` uniform 64-bit words as a numpy uint64 array (for vectorised exact samplers)."""
        if self._gen is None:
            return np.frombuffer(secrets.token_bytes(8 * n), dtype=np.uint64).copy()
        return self._gen.integers(0, 2**64, size=n, dtype=np.uint64)

    def randbelow(self, n):
        """A uniform integer in [0, n), n >= 1 (rejection sampling: exact)."""
        if n <= 0:
            raise ValueError(f"n must be >= 1, got {n!r}.")
        if self._gen is None:
            return secrets.randbelow(n)
        k = n.bit_length()
        while True:
            v = self.randbits(k)
            if v < n:
                return v

    def __repr__(self):
        return "RandomSource(secrets)" if self._gen is None else f"RandomSource({self._gen!r})"


def as_source(rng):
    """Turn ``rng`` (None, int seed, Generator or RandomSource) into a :class:`RandomSource`.

    None is the OS CSPRNG; an int seeds a fresh numpy Generator; a Generator is used as it is
    (successive calls share its stream).

    Parameters
    ----------
    rng : RandomSource, numpy.random.Generator, int or None
        A RandomSource is returned as it is; the others as above (a RandomState is refused).
    """
    if rng is None:
        return RandomSource(None)
    if isinstance(rng, RandomSource):
        return rng
    return RandomSource(check_rng(rng))   # validates seeds and Generators (refuses RandomState)
