"""Progress reporting for long jobs (tqdm), switched by a ``progress=`` parameter."""

from tqdm.auto import tqdm

__all__ = ["progress_bar"]


def progress_bar(iterable=None, *, progress=False, total=None, desc=None, unit="it"):
    """Wrap ``iterable`` in a tqdm bar when ``progress`` is true.

    Returns a tqdm object either way, disabled when ``progress`` is false, so that callers can
    use ``update``/``set_postfix`` without checking the switch themselves. Counts are shown as whole
    numbers, also when a caller advances by fractions (a share of the budget in percent, say).
    """
    # tqdm's default prints the count as given ("69.44444444444446/100"): whole numbers read at a glance.
    fmt = None if total is None else "{l_bar}{bar}| {n:.0f}/{total:.0f} {unit} [{elapsed}<{remaining}{postfix}]"
    return tqdm(iterable, total=total, desc=desc, unit=unit, disable=not progress, leave=False, bar_format=fmt)
