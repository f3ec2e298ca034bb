"""DP synthesis of a folder of Parquet partitions on Dask, out of core: a synthetic census.

A marginal synthesiser reads its data only as sums over records (:mod:`dpknn.synth._data`), so the table never
has to sit in one process. :func:`synthesize_parquet` fits :class:`~dpknn.synth.AutoSynthesizer`,
:class:`~dpknn.synth.MSTSynthesizer` or :class:`~dpknn.synth.AIMSynthesizer` on the folder in two passes and
writes the synthetic rows in a third:

1. **Scan** (one task per input partition): the domain checks and the ``never_missing`` refusal, the row count,
   the values outside their universes, and each released amount's histogram on its public candidate grid
   (:class:`~dpknn.synth._bins.ValueHistogram`), merged on the client. The client then releases the row count
   (``AutoSynthesizer``), the point masses and the DP quantiles from the merged histograms: the model's bins.
2. **Count** (one task per input partition): every table the method may read, listed from public facts before
   the pass (:meth:`~dpknn.synth._marginal.MarginalSynthesizer.candidate_sets`: for MST every one- and two-way
   table, for AIM every set of its workload and analyses, three-way ones included, whatever the rounds will
   afford), and the analyses' within-bin rank sums; merged on the client, where MST's tree or AIM's rounds read
   them. A round that asked for a table no pass counted would get one more pass (:class:`FolderCounts`); with
   the candidates listed that does not happen.
3. **Sample** (one task per output partition): rows drawn from the fitted model with the partition's own stream
   (child ``i`` of one :class:`numpy.random.SeedSequence`, from the seed or the OS entropy), written under a
   hidden name and renamed when complete. A partition's rows are a function of the model and its stream, so an
   interrupted run resumes (``resume=True``) with the model it saved, spending no budget again, and writes what
   is missing: the same rows an uninterrupted run writes.

**Same as in memory.** Every sum is an integer sum over records, so the merged sums are those of the
concatenated partitions, and the fit that reads them is the in-memory code: for the same ``rng`` of the
synthesiser it releases the same quantiles, tables and choices, fits the same model and publishes the same
record (``tests/test_synth_distributed.py``; ``benchmarks/census_synth.py`` checks a 10^7-row prefix). The
privacy guarantee is the synthesiser's own (its module docstring): nothing else reads the data.

**Memory.** A worker holds one partition (its attribute columns) and its tables; the client holds the merged
tables (for ten census attributes about 60 KiB), the model, and no record. Nothing is staged on disk: the only
files written are the synthetic partitions and, while the run lasts, the fitted model and the sampling seed in
a hidden folder beside the output (public: post-processing of released tables).
"""

from __future__ import annotations

import copy
import logging
import os
import pickle
import secrets
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from dpknn.exceptions import DomainError
from dpknn.schema._discretization import check_attributes
from dpknn.schema._flags import check_path_not_imputed
from dpknn.synth._auto import AutoSynthesizer
from dpknn.synth._data import Counts, RankPlan, TableData, partition_counts, partition_scan
from dpknn.synth._marginal import MarginalSynthesizer
from dpknn.utils._cluster import completed_results, dask_client, parquet_partitions
from dpknn.utils._io import check_not_inside, remove_tree
from dpknn.utils._validation import check_positive_int

__all__ = ["PARTITION_ROWS", "FolderCounts", "ParquetData", "ParquetSynthesis", "SamplingPlan", "synthesize_parquet"]

logger = logging.getLogger(__name__)

#: Synthetic rows per output partition by default: a task then holds about 0.3 GiB for ten census attributes.
PARTITION_ROWS = 1_000_000
_STATE = "_state"
_PLAN = "plan.pkl"
_PART = "part.{:05d}.parquet"


def _read(path, names):
    """The attribute columns ``names`` of one partition, refusing a partition that lacks one."""
    import pyarrow.parquet as pq

    absent = [n for n in names if n not in pq.read_schema(path).names]
    if absent:
        raise ValueError(f"it lacks the attribute columns {absent}; every partition holds every attribute.")
    return pd.read_parquet(path, columns=list(names))


def _scan_task(path, names, plan):
    """Pass 1 on one partition: its :class:`~dpknn.synth._data.Scan`; a refusal names the partition."""
    try:
        return partition_scan(_read(path, names), plan)
    except (DomainError, ValueError) as exc:
        try:
            named = type(exc)(f"partition {str(path)!r}: {exc}")
        except TypeError:   # an error class that takes more than a message: kept, with a note naming the partition
            exc.add_note(f"in partition {str(path)!r}")
            raise
        raise named from None


def _count_task(path, names, disc, ext_sizes, sets, ranks):
    """Pass 2 on one partition: its tables and rank tables (:func:`~dpknn.synth._data.partition_counts`)."""
    return partition_counts(_read(path, names), disc, ext_sizes, sets, ranks)


def _add(total, part):
    """Add the arrays of ``part`` into ``total`` (by key), in place: the merge of two partitions' sums."""
    for k, v in part.items():
        total[k] = total[k] + v if k in total else v
    return total


class ParquetData(TableData):
    """A folder of Parquet partitions read as sums over records, one Dask task per partition and pass
    (:mod:`dpknn.synth._data`; module docstring). The row count comes from the files' metadata.

    Parameters
    ----------
    files : list of Path
        The partitions (:func:`~dpknn.utils._cluster.parquet_partitions`); each holds the attribute columns.
    names : list of str
        The attribute columns to read.
    client : dask.distributed.Client
    progress : bool
    """

    def __init__(self, files, names, client, *, progress=False):
        import pyarrow.parquet as pq

        super().__init__()
        self.files, self.names, self.client, self.progress = list(files), list(names), client, progress
        self._rows = sum(pq.read_metadata(f).num_rows for f in self.files)
        #: Wall time of each pass (curator diagnostics).
        self.seconds = {}

    @property
    def rows(self):
        return self._rows

    def _pass(self, name, task, *args):
        t0 = time.perf_counter()
        futures = [self.client.submit(task, str(f), self.names, *args, pure=False) for f in self.files]
        yield from completed_results(futures, self.progress, name)
        self.seconds[name] = self.seconds.get(name, 0.0) + time.perf_counter() - t0

    def read_scan(self, plan):
        held = None
        for part in self._pass("scan", _scan_task, plan):
            held = part if held is None else held.merged(part)
        return held

    def count(self, disc, ext_sizes, sets, ranks, *, n_jobs=2):
        sets = list(dict.fromkeys(tuple(sorted(s)) for s in sets))
        tables, rank_tables = {}, {}
        for part_tables, part_ranks in self._pass("count", _count_task, disc, ext_sizes, sets, ranks):
            _add(tables, part_tables)
            _add(rank_tables, part_ranks)
        return FolderCounts(self, disc, ext_sizes, tables), rank_tables


class FolderCounts(Counts):
    """The tables one pass over a folder counted (:class:`ParquetData`); a table asked for beyond them costs one
    more pass over the folder (logged)."""

    def __init__(self, data, disc, ext_sizes, tables):
        super().__init__(None, disc.sizes, ext_sizes, tables=tables)
        self.data, self.disc, self.further_passes = data, disc, 0

    def count(self, sets):
        logger.warning("synthesis on a folder: %d table(s) no pass counted (%s); one more pass over the folder",
                       len(sets), sets[:3])
        self.further_passes += 1
        # Cut already: Counts.tables cuts them to the same sizes again, which leaves them as they are.
        counted, _ = self.data.count(self.disc, self.ext_sizes, sets, RankPlan((), ()))
        return counted.tables(sets)


@dataclass(frozen=True)
class ParquetSynthesis:
    """What :func:`synthesize_parquet` did.

    Attributes
    ----------
    synthesizer : AutoSynthesizer, MSTSynthesizer or AIMSynthesizer
        The fitted synthesiser: its ``public_params()`` is the published record.
    output_dir : str
    rows : int
        Synthetic rows written.
    partitions : int
        Output partitions.
    resumed : bool
        Whether an interrupted run was finished (with its saved model: no budget spent in this call).
    seeded : bool
        Whether the fit's noise came from a seed (reproducible, not for publication).
    input_rows : int or None
        CONFIDENTIAL: the rows read (None when resumed: nothing was read).
    outside_universe : dict
        CONFIDENTIAL: observed values outside their universe, by attribute (read as not applicable).
    seconds : dict
        Wall time of each pass ("scan", "count", "fit" on the client, "sample").
    """

    synthesizer: object
    output_dir: str
    rows: int
    partitions: int
    resumed: bool
    seeded: bool = False
    input_rows: int | None = None
    outside_universe: dict = field(default_factory=dict)
    seconds: dict = field(default_factory=dict)

    def curator_dict(self):
        """CONFIDENTIAL diagnostics for the curator (``dpknn synth --diagnostics``): never published."""
        return {"output": self.output_dir, "input_rows": self.input_rows, "outside_universe": self.outside_universe,
                "rows": self.rows, "partitions": self.partitions, "resumed": self.resumed, "seeded": self.seeded,
                "seconds": {k: round(v, 3) for k, v in self.seconds.items()}}


def _sample_task(model, rows, entropy, index, folder):
    """Write output partition ``index``: ``rows`` rows of ``model`` drawn with child ``index`` of the run's seed
    sequence, under a hidden name, then renamed. Returns the rows written (0 when it was there already)."""
    target = Path(folder) / _PART.format(index)
    if target.exists():
        return 0
    gen = np.random.Generator(np.random.PCG64(np.random.SeedSequence(entropy, spawn_key=(index,))))
    df = model.sample(rows, rng=gen)
    # A name of its own: two attempts at one partition (a task Dask runs again) may run in one process.
    tmp = Path(folder) / f".{target.name}.{uuid.uuid4().hex}.tmp"
    try:
        df.to_parquet(tmp, index=False)
        os.replace(tmp, target)
    finally:
        if tmp.exists():
            tmp.unlink()
    return rows


def _public_copy(synth):
    """The fitted synthesiser less its curator diagnostics (the values outside universes) and its noise source (a
    seeded source's state would give back every noise it drew), to be saved beside the output while a run lasts:
    everything left is public or released."""
    out = copy.copy(synth)
    if hasattr(out, "synthesizer_"):
        out.synthesizer_ = copy.copy(out.synthesizer_)
    for obj in (out, getattr(out, "synthesizer_", None)):
        if obj is not None:
            obj.rng = None
            if hasattr(obj, "n_outside_universe_"):
                del obj.n_outside_universe_
    return out


def _public_params(synth):
    """The parameters a resumed run must share with the interrupted one (all but the noise source and the
    run's own settings)."""
    return {k: v for k, v in synth.get_params(deep=False).items() if k not in ("rng", "progress", "n_jobs")}


def synthesize_parquet(input_dir, output_dir, synthesizer, *, rows, rows_per_partition=PARTITION_ROWS, client=None,
                       rng=None, resume=False, accountant=None, progress=False):
    """Fit ``synthesizer`` on a folder of Parquet partitions and write ``rows`` synthetic rows as a folder of
    Parquet partitions, on Dask, out of core (module docstring).

    Parameters
    ----------
    input_dir : str or Path
        The partitions (files ending in .parquet, in the natural order of their paths; names starting with '.'
        or '_' are skipped), each holding the attribute columns. Not modified.
    output_dir : str or Path
        Must not exist (nor lie inside ``input_dir``); written under a hidden name beside it and renamed when
        every partition is complete.
    synthesizer : AutoSynthesizer, MSTSynthesizer or AIMSynthesizer
        Unfitted; fitted here with its own parameters and ``rng`` (so a seed gives the in-memory fit's releases).
    rows : int
        Synthetic rows to write (public).
    rows_per_partition : int, default 1,000,000
        The most rows of an output partition (a sampling task's memory): the rows are split evenly over
        ⌈rows / rows_per_partition⌉ partitions, the first ones holding one more where they do not divide.
    client : dask.distributed.Client or None
        None: a LocalCluster with one single-threaded worker process per core, closed afterwards.
    rng : int or None
        The sampling streams' seed (None: OS entropy); post-processing, so no privacy cost either way.
    resume : bool, default False
        Finish an interrupted run with the same ``output_dir``: its saved model samples the partitions not yet
        written (no fit, no budget spent; ``synthesizer`` and ``accountant`` are not used). Without it, a
        left-over run is refused.
    accountant : BudgetAccountant or None
        Charged by the fit before the data are read (None: :func:`~dpknn.accounting.charge`'s rule).
    progress : bool, default False
        Progress bars for each pass.

    Returns
    -------
    ParquetSynthesis

    Raises
    ------
    FileExistsError
        ``output_dir`` exists, or an interrupted run left its hidden folder and ``resume`` is False.
    ImputedDataError
        The folder holds imputed data.
    DomainError, ValueError
        A value outside its domain or a gap in a ``never_missing`` attribute (naming the partition).
    """
    rows = check_positive_int(rows, "rows")
    per = check_positive_int(rows_per_partition, "rows_per_partition")
    output_dir = Path(output_dir)
    partial, resumed = _check_run(input_dir, output_dir, synthesizer, resume)
    files = None if resumed else parquet_partitions(input_dir)
    with dask_client(client) as dc:
        if resumed:
            plan = SamplingPlan.load(partial, rows, per, synthesizer)
            seconds, data = {}, None
            logger.info("synthesize_parquet: resuming %s with its saved model", partial)
        else:
            data = ParquetData(files, [a.name for a in check_attributes(synthesizer.attributes)], dc,
                               progress=progress)
            seconds, plan = _fit_and_save(data, synthesizer, accountant, rng, rows, per, partial)
        t0 = time.perf_counter()
        _sample_partitions(dc, plan, partial, progress)
        seconds["sample"] = time.perf_counter() - t0
    for stale in partial.glob(".*.tmp"):   # a write whose worker died before it could remove it
        stale.unlink()
    # Renamed first: a crash before the state is removed leaves it in the finished folder, where its leading '_'
    # keeps Parquet readers off it (it is public), rather than a finished run that could not be resumed.
    os.replace(partial, output_dir)
    remove_tree(output_dir / _STATE)
    logger.info("synthesize_parquet: %d synthetic rows in %d partitions; %s", rows, len(plan.sizes),
                {k: round(v, 2) for k, v in seconds.items()})
    if resumed:
        return ParquetSynthesis(plan.model, str(output_dir), rows, len(plan.sizes), True, plan.seeded,
                                seconds=seconds)
    return ParquetSynthesis(synthesizer, str(output_dir), rows, len(plan.sizes), False, plan.seeded, data.rows,
                            dict(synthesizer.n_outside_universe_), seconds)


def _fit_and_save(data, synthesizer, accountant, rng, rows, per, partial):
    """Fit ``synthesizer`` on ``data`` (passes 1 and 2, then the client's fit) and save its :class:`SamplingPlan`
    in ``partial``; (seconds by pass, the plan)."""
    t0 = time.perf_counter()
    synthesizer.fit(data, accountant=accountant)
    seconds = {**data.seconds, "fit": time.perf_counter() - t0 - sum(data.seconds.values())}
    seed = rng if rng is not None else secrets.randbits(128)
    plan = SamplingPlan(_public_copy(synthesizer), np.random.SeedSequence(seed).entropy, rows, per,
                        synthesizer.rng is not None)
    partial.parent.mkdir(parents=True, exist_ok=True)
    plan.save(partial)
    return seconds, plan


def _check_run(input_dir, output_dir, synthesizer, resume):
    """(The hidden output folder, whether a run is resumed), refusing before any work what cannot run."""
    if output_dir.exists():
        raise FileExistsError(f"output_dir {str(output_dir)!r} exists; choose a new folder.")
    check_not_inside(output_dir, input_dir, "output_dir")
    partial = output_dir.parent / f".{output_dir.name}.partial"
    resumed = resume and (partial / _STATE / _PLAN).exists()
    if resume and not resumed:
        raise FileNotFoundError(f"nothing to resume for {str(output_dir)!r}: no interrupted run saved its model in "
                                f"{str(partial)!r} (a run saves it once its fit is done). Run again without resume "
                                "(a new fit, its own budget).")
    if partial.exists() and not resumed:
        raise FileExistsError(f"an interrupted run left {str(partial)!r}: resume=True (dpknn synth --resume) finishes "
                              "it with the model it saved, spending no budget again; or remove that folder.")
    if not resumed:
        if not isinstance(synthesizer, (MarginalSynthesizer, AutoSynthesizer)):
            raise TypeError("synthesize_parquet fits AutoSynthesizer, MSTSynthesizer or AIMSynthesizer (they read "
                            f"sums over records); got {type(synthesizer).__name__}, which needs the table in memory.")
        check_path_not_imputed(Path(input_dir), f"input folder {str(input_dir)!r}")
    return partial, resumed


@dataclass(frozen=True)
class SamplingPlan:
    """What the sampling pass needs, saved in the hidden output folder while the run lasts so that an interrupted
    run resumes with it: the fitted synthesiser less its curator diagnostics (:func:`_public_copy`), the entropy of
    the run's seed sequence, the rows and the rows per partition. Public: post-processing of released values."""

    model: object
    entropy: int
    rows: int
    per: int
    #: Whether the fit's noise came from a seed (the published record says so).
    seeded: bool = False

    @property
    def sizes(self):
        """The rows of each output partition (the first ones hold one more when they do not divide evenly)."""
        count = -(-self.rows // self.per)
        base, extra = divmod(self.rows, count)
        return [base + (i < extra) for i in range(count)]

    def save(self, partial):
        """Write the plan into ``partial``'s state folder, atomically (a resume finds the whole plan or none)."""
        (partial / _STATE).mkdir(parents=True)
        tmp = partial / _STATE / f".{_PLAN}.tmp"
        tmp.write_bytes(pickle.dumps(self))
        os.replace(tmp, partial / _STATE / _PLAN)

    @classmethod
    def load(cls, partial, rows, per, synthesizer=None):
        """The saved plan, refused unless it writes ``rows`` rows in partitions of ``per`` and, when
        ``synthesizer`` is given, was fitted by one of its class and parameters (the published record is the
        saved model's). The file is this package's own, written by :meth:`save`: the folder must be writable by
        the curator only, as the output is."""
        plan = pickle.loads((partial / _STATE / _PLAN).read_bytes())
        if (plan.rows, plan.per) != (rows, per):
            raise ValueError(f"the interrupted run in {str(partial)!r} was writing {plan.rows} rows in partitions of "
                             f"{plan.per}; resume it with the same rows and rows_per_partition.")
        if synthesizer is not None and (type(synthesizer) is not type(plan.model) or
                                        _public_params(synthesizer) != _public_params(plan.model)):
            raise ValueError(f"the interrupted run in {str(partial)!r} fitted {type(plan.model).__name__} with other "
                             "parameters; resume it with the method and options it was started with (the seed and "
                             "progress may differ).")
        return plan


def _sample_partitions(dc, plan, partial, progress):
    """The sampling pass: a task per output partition not written yet (module docstring), then a check that every
    partition is there."""
    shared = dc.scatter(plan.model, broadcast=True)
    futures = [dc.submit(_sample_task, shared, n, plan.entropy, i, str(partial), pure=False)
               for i, n in enumerate(plan.sizes)]
    try:
        for _ in completed_results(futures, progress, "sample"):
            pass
    except BaseException:
        dc.cancel(futures)
        logger.error("synthesize_parquet: sampling stopped; %s keeps the partitions written and the saved model: "
                     "resume=True (dpknn synth --resume, same options) finishes it without spending budget", partial)
        raise
    written = sorted(p.name for p in partial.glob("part.*.parquet"))
    if written != [_PART.format(i) for i in range(len(plan.sizes))]:
        raise RuntimeError(f"{str(partial)!r} holds {len(written)} partitions, {len(plan.sizes)} expected; resume "
                           "the run.")
