"""Progress reporting for long jobs (tqdm), switched by a ``progress=`` parameter."""

from tqdm.auto import tqdm

__all__ = ["progress_bar"]


def progress_bar(iterable=None, *, progress=False, total=None, desc=None, unit="it"):
    """Wrap ``iterable`` in a tqdm bar when ``progress`` is true.

    Returns a tqdm object either way, disabled when ``progress`` is false, so that callers can
    use ``update``/``set_postfix`` without checking the switch themselves.
    """
    return tqdm(iterable, total=total, desc=desc, unit=unit, disable=not progress, leave=False)
