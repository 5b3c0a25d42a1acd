"""What the engine actually released: ``R`` runs of a scenario, as the privacy checker reads them.

:func:`run_engine` runs the scenario ``R`` times on a real engine and keeps,
per run, every message on every channel and the realized schedule
(:class:`~asyncdp.engine.schedule.RealizedSchedule`). :class:`AlgorithmChannelRule`
is an algorithm's R and U steps as the :class:`accounting.replay_inputs.ChannelRule`
the accountant replays those runs with; :func:`replay_runs` does it.

What is observed: every release the ledger records, as in the papers'
observation maps (in Huang, Mitra and Vaidya, ICDCN 2015, the adversary sees every broadcast
``y_i(t)``),
including a broadcast that no link carries (an agent with no out-neighbour
that round): both engines record those (``Result.messages``,
``BatchResult.messages``), while the transcript holds transmissions on links.

Engines: ``engine="auto"`` uses the batch engine when it runs the scenario
(every timing, link model and mode) and the SimPy engine otherwise; both
record the same messages and schedule for the same draws (tests enforce it).
The engine used, and why, is recorded in :attr:`EngineRuns.engine`. On the
batch engine the schedules of all runs are taken at once as columns
(:meth:`~asyncdp.engine.batch_engine.BatchResult.schedules`), and
:func:`replay_runs` hands them to the replay as one batch, so no run's
schedule is rebuilt one by one.

Seeds: the runs of one side of a check (``side`` 0: the scenario, 1: the
adjacent one, further sides for other uses) have seeds
``numpy.random.SeedSequence(seed, spawn_key=(side,)).generate_state(R)``:
run ``r`` on the SimPy engine is ``scenario.replace(seed=seeds[r])``; the
batch engine runs all ``R`` at once with seed ``seeds[0]`` (its noise blocks
have a leading run axis). The worst-case search draws its candidate pairs from
``SeedSequence(seed, spawn_key=(1000,))``
(``asyncdp.privacy.pair_search.SEARCH_STREAM``); the probe of the rule's R
step (:mod:`asyncdp.privacy.additivity`) draws its standard noise from
``SeedSequence(seed, spawn_key=(1001,))`` on the realized replay and
``(1001, 1)`` on the worst-case candidates
(:data:`asyncdp.privacy.additivity.ADDITIVITY_STREAM`). Every random draw of a
check follows from its one ``seed``.

Example:
    >>> from asyncdp.privacy.context import small_example
    >>> runs = run_engine(small_example()[0].scenario, 4, seed=0)
    >>> runs.engine, runs.messages["y"].shape, len(runs.schedules)
    ('batch', (4, 5, 3, 2), 4)
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from accounting.replay_inputs import ChannelNoise
from accounting.scheduled_replay import ScheduledReplay, scheduled_replay
from accounting.shared_rounds import SharedRound, shared_round
from topology.validation import check_integer

from ..algorithms.base import Algorithm
from ..engine.schedule import RealizedSchedule
from ..errors import ScenarioError
from ..noise import NoiseSource, SeededNoise
from ..scenario import Scenario

__all__ = ["ENGINES", "EngineRuns", "RecordingNoise", "run_seeds", "run_origin", "run_engine", "ZeroNoise", "AlgorithmChannelRule", "DecisionRecorder", "recording_gradients",
           "SharedSchedule", "schedule_batch",
           "declared_noise", "replay_runs", "engine_disagreement", "engines_disagree", "simpy_run0",
           "seed_free_ledger"]

ENGINES = ("auto", "batch", "simpy")
"""The ``engine`` choices of :func:`run_engine`."""

_ZEROS: OrderedDict[int, Any] = OrderedDict()
"""The last algorithms' :class:`ZeroNoise` (:meth:`ZeroNoise.of`), most recently used last."""

_DECLARED: OrderedDict[tuple[int, int], tuple[Any, dict[str, ChannelNoise]]] = OrderedDict()
"""The last algorithms' declared noise (:func:`declared_noise`), most recently used last."""

_DECLARED_ENTRIES = 16
"""How many algorithms' declared noise and zero noise are kept."""

_KEPT_LOCK = threading.Lock()
"""Guards the two (checks may run in threads)."""


@dataclass(frozen=True)
class EngineRuns:
    """``R`` runs of one scenario as the eavesdropper and the schedule recorded them.

    Attributes:
        engine: ``"batch"`` or ``"simpy"``, and why (e.g. ``"simpy (batch engine: ...)"``).
        seeds: the run seeds (see the module docstring): run ``r`` is the SimPy run of ``seeds[r]``; on the
            batch engine ``seeds[r]`` is the seed of the batch that made run ``r``, as its row ``batch_rows[r]``.
        messages: per channel, ``(R, T, N, d)`` (unicast ``(R, T, N, N, d)``, ``[sender, receiver]``),
            NaN where nothing was sent.
        schedules: the realized schedules, a sequence of one
            :class:`~asyncdp.engine.schedule.RealizedSchedule` per run: on the
            batch engine every run's at once as columns
            (:class:`~asyncdp.engine.schedule.RealizedSchedules`, whose items are views
            of their slices; the exact replay reads its rounds for all runs at once),
            or one schedule object repeated when every run has the topology's
            (lockstep, lossless links); on the SimPy engine each run's.
        unicast: whether messages are per link.
        noise: per noisy channel, the *standard* noise draw the engine handed each release, in the layout of
            ``messages`` (NaN where no draw was handed out), recorded by :class:`RecordingNoise`; ``None``
            when not recorded (runs assembled by other means).
        disagreement: where the other engine's run of the first seed released something else
            (:func:`engine_disagreement`; the privacy check fills it in), or ``None`` (they agree, not
            compared, or only one engine runs the scenario).
        batch_rows: batch engine: each run's row in its batch (``None``: SimPy runs, one seed each).
    """

    engine: str
    seeds: tuple[int, ...]
    messages: dict[str, np.ndarray]
    schedules: Sequence[Any]
    unicast: bool
    noise: dict[str, np.ndarray] | None = None
    disagreement: str | None = None
    batch_rows: tuple[int, ...] | None = None

    @property
    def runs(self) -> int:
        """``R``."""
        return len(self.schedules)


def run_origin(runs: EngineRuns, r: int) -> dict[str, int]:
    """How to rerun run ``r`` of ``runs``, for a witness.

    Args:
        runs: the engine runs.
        r: the run's index in ``runs``.

    Returns:
        ``{"run_seed": s}`` (the SimPy run of seed ``s``: ``scenario.replace(seed=s).run()``), or
        ``{"run_seed": s, "batch_row": k}`` (row ``k`` of the batch engine's runs of seed ``s``:
        ``scenario.replace(seed=s).run("batch", runs=k + 1, transcripts=True)``, whose rows do not depend on the
        number of runs).

    Example:
        >>> from asyncdp.privacy.context import small_example
        >>> runs = run_engine(small_example()[0].scenario, 3, engine="batch")
        >>> run_origin(runs, 2) == {"run_seed": run_seeds(0, 0, 3)[0], "batch_row": 2}
        True
    """
    out = {"run_seed": int(runs.seeds[r])}
    rows = getattr(runs, "batch_rows", None)  # (runs assembled by other means name their seeds only)
    if rows is not None:
        out["batch_row"] = int(rows[r])
    return out


def run_seeds(seed: int, side: int, runs: int) -> tuple[int, ...]:
    """The seeds of ``runs`` runs of one side of a check (module docstring).

    Example:
        >>> run_seeds(0, 0, 2) == run_seeds(0, 0, 2) != run_seeds(0, 1, 2)
        True
    """
    state = np.random.SeedSequence(int(seed), spawn_key=(int(side),)).generate_state(int(runs))
    return tuple(int(s) for s in state)


class RecordingNoise(NoiseSource):
    """The seeded standard noise of one engine call (:class:`~asyncdp.noise.SeededNoise`), keeping a copy of
    every block it hands out, so that the check can compare each release's residual with the draw behind it.

    Args:
        seed: the engine call's seed.

    Example:
        >>> rec = RecordingNoise(3)
        >>> block = rec.broadcast(1, 0, "gaussian", (2, 2))
        >>> bool((rec.broadcast_blocks[(1, 0)] == block).all()), bool((block == SeededNoise(3).broadcast(
        ...     1, 0, "gaussian", (2, 2))).all())
        (True, True)
    """

    def __init__(self, seed: int) -> None:
        self.base = SeededNoise(seed)
        self.broadcast_blocks: dict[tuple[int, int], np.ndarray] = {}
        self.unicast_blocks: dict[tuple[int, int, int], np.ndarray] = {}

    def broadcast(self, t: int, channel: int, distribution: str, shape: tuple[int, ...]) -> np.ndarray:
        block = self.base.broadcast(t, channel, distribution, shape)
        self.broadcast_blocks[(int(t), int(channel))] = np.array(block, dtype=float, copy=True)
        return block

    def unicast(self, t: int, channel: int, distribution: str, sender: int, shape: tuple[int, ...]) -> np.ndarray:
        block = self.base.unicast(t, channel, distribution, sender, shape)
        self.unicast_blocks[(int(t), int(channel), int(sender))] = np.array(block, dtype=float, copy=True)
        return block


def _recorded_noise(recorders: Sequence[RecordingNoise], alg: Algorithm, messages: Mapping[str, np.ndarray],
                    unicast: bool) -> dict[str, np.ndarray]:
    """The standard draws behind every release, per noisy channel, in the layout of ``messages``.

    ``recorders`` is one recorder for all runs (batch engine: blocks with a leading run axis) or one per run
    (SimPy). Coordinates beyond a block's width (a message wider than its noise) stay NaN.
    """
    out: dict[str, np.ndarray] = {}
    batch = len(recorders) == 1  # one recorder: every run's draws in one block (a one-run SimPy call alike)
    for c, ch in enumerate(alg.channels):
        if not ch.noisy or ch.name not in messages:
            continue
        arr = np.full(messages[ch.name].shape, np.nan)
        horizon = arr.shape[1]
        for r, rec in enumerate(recorders):
            rows = slice(None) if batch else r
            for t in range(1, horizon + 1):
                if unicast:
                    for i in range(arr.shape[2]):
                        block = rec.unicast_blocks.get((t, c, i))
                        if block is not None:
                            width = min(block.shape[-1], arr.shape[-1])
                            arr[rows, t - 1, i, :, :width] = block[..., :width]
                else:
                    block = rec.broadcast_blocks.get((t, c))
                    if block is not None:
                        width = min(block.shape[-1], arr.shape[-1])
                        arr[rows, t - 1, :, :width] = block[..., :width]
        out[ch.name] = arr
    return out


def _messages_of(result: Any, alg: Algorithm, unicast: bool) -> dict[str, np.ndarray]:
    """One SimPy run's messages per channel (NaN where nothing was sent)."""
    horizon, n_agents = result.horizon, result.trajectory.shape[1]
    out = {}
    for ch in alg.channels:
        if unicast:
            obs = result.transcript.observations_by_link(ch.name)
            width = max((len(v) for v in obs.values()), default=0)
            arr = np.full((horizon, n_agents, n_agents, width), np.nan)
            for (t, i, j), payload in obs.items():
                arr[t - 1, i, j] = payload
        else:
            obs = result.transcript.observations(ch.name)
            width = max((len(v) for v in obs.values()), default=0)
            arr = np.full((horizon, n_agents, width), np.nan)
            for (t, i), payload in obs.items():
                arr[t - 1, i] = payload
        out[ch.name] = arr
    return out


def _lockstep_lossless(scenario: Scenario) -> bool:
    from ..engine.timing import Lockstep

    models = [scenario.links.default, *scenario.links.overrides.values()]
    return isinstance(scenario.timing, Lockstep) and all(m.loss == 0 for m in models)


def _batch_refusal(scenario: Scenario) -> str | None:
    from ..engine import batch_engine

    try:
        batch_engine._check_batchable(scenario)
    except ScenarioError as exc:
        return str(exc)
    return None


def run_engine(scenario: Scenario, runs: int, *, seed: int = 0, side: int = 0, engine: str = "auto",
               progress: bool | None = None) -> EngineRuns:
    """Run ``scenario`` ``runs`` times and keep its messages and realized schedules.

    Args:
        scenario: the scenario (its own seed is replaced by the run seeds).
        runs: ``R`` (>= 1).
        seed: the check's seed (>= 0); side: which side of the check (module docstring).
        engine: one of :data:`ENGINES`.
        progress: show a progress bar for SimPy runs (``None``: only on a terminal).

    Returns:
        The :class:`EngineRuns`.

    Raises:
        ScenarioError: bad ``runs``, ``seed`` or ``engine``, ``engine="batch"``
            for a scenario the batch engine does not run, or a scenario with its
            own noise source (``Scenario(noise=...)``: the runs draw from the seed layout).
    """
    runs = check_integer(runs, "runs", minimum=1, error=ScenarioError, where="run_engine")
    seed = check_integer(seed, "seed", minimum=0, error=ScenarioError, where="run_engine")
    if engine not in ENGINES:
        raise ScenarioError(f"run_engine: engine must be one of {ENGINES}, got {engine!r}")
    if scenario.noise is not None:
        raise ScenarioError(f"run_engine: the scenario's noise source {scenario.noise!r} cannot be used: the "
                            "runs draw their privacy noise from the seed layout of asyncdp.noise (one seed per "
                            "run) and verify every release against it; build the scenario without noise="[:400])
    seeds = run_seeds(seed, side, runs)
    unicast = scenario.mode == "unicast"
    alg = scenario.algorithm.bind(scenario.problem)
    refusal = _batch_refusal(scenario)
    if engine == "batch" and refusal is not None:
        raise ScenarioError(f"run_engine: engine='batch' refused: {refusal}")
    if engine != "simpy" and refusal is None:
        recorder = RecordingNoise(seeds[0])
        batch = scenario.replace(seed=seeds[0], noise=recorder).run("batch", runs=runs, keep="all", transcripts=True)
        messages = {name: np.array(arr, dtype=float) for name, arr in batch.messages.items()}
        schedules: Sequence[Any]
        if _lockstep_lossless(scenario):  # every run mixes with the topology's weights: one shared schedule
            schedules = (RealizedSchedule.lockstep(scenario.topology, scenario.horizon),) * runs
        else:  # every run's schedule as columns, built for all runs at once
            schedules = batch.schedules()
        return EngineRuns(engine="batch", seeds=(seeds[0],) * runs, messages=messages, schedules=schedules,
                          unicast=unicast, noise=_recorded_noise([recorder], alg, messages, unicast),
                          batch_rows=tuple(range(runs)))
    from tqdm.auto import tqdm

    per_run: list[dict[str, np.ndarray]] = []
    one_by_one: list[Any] = []
    recorders: list[RecordingNoise] = []
    for s in tqdm(seeds, desc="engine runs", unit="run", disable=(None if progress is None else not progress),
                  leave=False):
        recorders.append(RecordingNoise(s))
        res = scenario.replace(seed=s, noise=recorders[-1], record_transcript=True).run()
        per_run.append(res.messages if res.messages is not None else _messages_of(res, alg, unicast))
        one_by_one.append(res.schedule)
    names = list(per_run[0])
    messages = {}
    for name in names:
        width = max(m[name].shape[-1] for m in per_run)
        stacked = np.full((runs,) + per_run[0][name].shape[:-1] + (width,), np.nan)
        for r, m in enumerate(per_run):
            stacked[r, ..., :m[name].shape[-1]] = m[name]
        messages[name] = stacked
    why = "simpy" if engine == "simpy" else f"simpy (batch engine: {refusal})"
    return EngineRuns(engine=why, seeds=seeds, messages=messages, schedules=tuple(one_by_one), unicast=unicast,
                      noise=_recorded_noise(recorders, alg, messages, unicast))


def engine_disagreement(scenario: Scenario, runs: EngineRuns, simpy_run: Any = None) -> str | None:
    """Run 0 of ``runs`` against the other engine's run of its seed (:func:`engines_disagree`), or ``None``.

    The batch engine's run 0 is the SimPy engine's run of its seed, draw for draw: a rule that behaves otherwise
    on one engine (e.g. reads how the engine hands it the agents) runs a mechanism the runs do not show. Batch
    runs are compared with one SimPy run; SimPy runs with one batch run when the batch engine runs the scenario
    (else there is nothing to compare: ``None``).

    Args:
        scenario: the scenario ``runs`` ran.
        runs: its engine runs (:func:`run_engine`).
        simpy_run: the SimPy engine's result of ``scenario`` with the seed of run 0 and its transcript recorded
            (:func:`simpy_run0`), when the caller has it already (e.g. the privacy check's preparation, which
            reads its ledger); ``None``: run it here. Only read for batch runs.

    Raises:
        ScenarioError: ``simpy_run`` is not a SimPy result of run 0's seed with its transcript.

    Returns:
        One sentence naming the first release that differs, or ``None``.

    Example:
        >>> from asyncdp.privacy.context import small_example
        >>> pair, _ = small_example()
        >>> engine_disagreement(pair.scenario, run_engine(pair.scenario, 3)) is None
        True
    """
    s = runs.seeds[0]
    if runs.engine == "batch":
        alg = scenario.algorithm.bind(scenario.problem)
        if simpy_run is not None and (simpy_run.metadata.get("seed") != s or simpy_run.transcript is None):
            raise ScenarioError(f"engine_disagreement: simpy_run is not the SimPy run of seed {s} with its transcript")
        res = simpy_run if simpy_run is not None else simpy_run0(scenario, s)
        one = res.messages if res.messages is not None else _messages_of(res, alg, runs.unicast)
        return engines_disagree(runs.messages, {k: np.asarray(v, dtype=float)[None] for k, v in one.items()}, s)
    if _batch_refusal(scenario) is not None:
        return None
    other = scenario.replace(seed=s).run("batch", runs=1, keep="all", transcripts=True)
    return engines_disagree({k: np.array(v, dtype=float) for k, v in other.messages.items()}, runs.messages, s)


def simpy_run0(scenario: Scenario, seed: int) -> Any:
    """The SimPy engine's run of ``scenario`` with seed ``seed`` and its transcript recorded: what
    :func:`engine_disagreement` compares the batch engine's run 0 with (``seed``: that run's seed).

    Example:
        >>> from asyncdp.privacy.context import small_example
        >>> sc = small_example()[0].scenario
        >>> res = simpy_run0(sc, 5)
        >>> res.metadata["seed"], res.messages["y"].shape
        (5, (5, 3, 2))
    """
    return scenario.replace(seed=int(seed), record_transcript=True).run()


def seed_free_ledger(scenario: Scenario) -> bool:
    """Whether every run of ``scenario`` releases the same ledger whatever its seed: lockstep rounds on links that
    lose nothing and delay every message by a fixed latency (zero or constant).

    A release's record (agent, round, time, mechanism, scale, dimension, claimed sensitivity, channel, receiver)
    comes from the rule's declaration of its round and from the schedule; under lockstep the rounds start when
    the previous round's last message arrived, so with such links the schedule and the times draw nothing from
    the seed. The privacy check then reads its ledger from the SimPy run it compares the batch engine with.

    Example:
        >>> from asyncdp.privacy.context import small_example
        >>> seed_free_ledger(small_example()[0].scenario)
        True
    """
    from ..engine.links import ConstantLatency, ZeroLatency

    models = [scenario.links.default, *scenario.links.overrides.values()]
    return _lockstep_lossless(scenario) and all(type(m.latency) in (ZeroLatency, ConstantLatency) for m in models)


def engines_disagree(batch: Mapping[str, np.ndarray], simpy: Mapping[str, np.ndarray], seed: int) -> str | None:
    """Where the batch engine's run 0 releases other values than the SimPy engine's run of the same seed.

    The two engines run the same rule on the same draws (the batch engine's run 0 is the SimPy run of its seed),
    up to round-off; a rule that reads how an engine hands it the agents can run another mechanism on one of
    them, and the check's runs would then not show the mechanism the other engine runs.

    Args:
        batch, simpy: per channel, the messages of the runs, ``(R, T, ...)`` (run 0 is compared).
        seed: the runs' seed (named in the message).

    Returns:
        One sentence naming the channel, round and agent of the first release that differs, or ``None``.

    Example:
        >>> a = {"y": np.zeros((1, 2, 3, 1))}
        >>> engines_disagree(a, a, 7) is None
        True
        >>> print(engines_disagree(a, {"y": np.ones((1, 2, 3, 1))}, 7).split(":")[0])
        the rule releases other values on the batch engine than on the SimPy engine (seed 7, channel 'y', round 1, agent 0)
    """
    for name in sorted(set(batch) | set(simpy)):
        if name not in batch or name not in simpy:
            return (f"the batch and SimPy engines release different channels with seed {seed}: {sorted(batch)} vs "
                    f"{sorted(simpy)}")
        b, s = np.asarray(batch[name][0], dtype=float), np.asarray(simpy[name][0], dtype=float)
        width = max(b.shape[-1], s.shape[-1])
        b, s = (np.pad(v, [(0, 0)] * (v.ndim - 1) + [(0, width - v.shape[-1])], constant_values=np.nan) for v in (b, s))
        if b.shape != s.shape:
            return f"the batch and SimPy engines release channel {name!r} in different shapes: {b.shape} vs {s.shape}"
        scale = max(1.0, float(np.nanmax(np.abs(s), initial=0.0)))
        same = np.isclose(b, s, rtol=1e-9, atol=1e-9 * scale, equal_nan=True)
        if not same.all():
            t, i = (int(v) for v in np.argwhere(~same)[0][:2])
            return (f"the rule releases other values on the batch engine than on the SimPy engine (seed {seed}, "
                    f"channel {name!r}, round {t + 1}, agent {i}): the runs checked are not the runs of both engines; "
                    "a rule must be one per-agent rule on both")
    return None


class ZeroNoise:
    """Zero standard noise for every noisy channel of ``alg``: ``zero(t, lead)`` is ``{channel: zeros(lead + (d,))}``.

    A rule's noise-free messages are its messages with this noise. The
    channels' noise dimensions are read from the declarations
    (``alg.noise(t, channel)``) once per round and kept: the replays and the
    prober ask for the same rounds many times. Every call returns new
    arrays.

    Example:
        >>> from asyncdp.privacy.context import small_example
        >>> zero = ZeroNoise(small_example()[1].algorithm)
        >>> zero(1, (4, 3))["y"].shape
        (4, 3, 2)
    """

    def __init__(self, alg: Any) -> None:
        self.alg = alg
        self.dims: dict[int, tuple[tuple[str, int], ...]] = {}

    @classmethod
    def of(cls, alg: Any) -> ZeroNoise:
        """The zero noise of ``alg``, shared by the calls for the last few algorithms (their dimensions read once).

        Example:
            >>> from asyncdp.privacy.context import small_example
            >>> alg = small_example()[1].algorithm
            >>> ZeroNoise.of(alg) is ZeroNoise.of(alg)
            True
        """
        key = id(alg)
        with _KEPT_LOCK:
            got = _ZEROS.get(key)
            if got is None or got.alg is not alg:  # (an entry holds its algorithm, so its id is not reused)
                got = _ZEROS[key] = cls(alg)
                if len(_ZEROS) > _DECLARED_ENTRIES:
                    _ZEROS.popitem(last=False)
            else:
                _ZEROS.move_to_end(key)
        return got

    def __call__(self, t: int, lead: tuple[int, ...]) -> dict[str, np.ndarray]:
        dims = self.dims.get(t)
        if dims is None:
            dims = self.dims[t] = tuple((c.name, int(self.alg.noise(t, c.name).dimension))
                                        for c in self.alg.noisy_channels())
        return {name: np.zeros(lead + (d,)) for name, d in dims}


@dataclass(frozen=True)
class AlgorithmChannelRule:
    """An algorithm's R and U steps as an :class:`accounting.replay_inputs.ChannelRule`.

    The state is the algorithm's state dict for ``(R, N, ...)``; the message
    means are :meth:`~asyncdp.algorithms.base.Algorithm.message` with zero
    noise on every noisy channel (the noise-free value of each release), on
    every channel; the next state is :meth:`~asyncdp.algorithms.base.Algorithm.update`
    of the combinations. Only the rule interface is used, so an algorithm
    with no paper record is replayed the same way.

    Attributes:
        algorithm: the algorithm, bound to its problem.
        problem: the problem whose costs the U step uses.
        x0: the initial points ``(N, n)``.
    """

    algorithm: Algorithm
    problem: Any
    x0: np.ndarray
    _zero: ZeroNoise = field(init=False, repr=False, compare=False)
    _ids: np.ndarray = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_zero", ZeroNoise.of(self.algorithm))
        ids = np.arange(self.problem.num_agents)
        ids.flags.writeable = False  # one array for every step of the replay (a rule cannot change it)
        object.__setattr__(self, "_ids", ids)

    def _agents(self) -> np.ndarray:
        return self._ids

    def initial_state(self, runs: int) -> dict[str, np.ndarray]:
        x0 = np.array(np.broadcast_to(self.x0, (runs,) + np.shape(self.x0)), dtype=float)
        return self.algorithm.initial_state(x0, self._agents(), self.problem)

    def message_means(self, state: dict[str, np.ndarray], t: int) -> Mapping[str, np.ndarray]:
        lead = next(iter(state.values())).shape[:2]
        return self.algorithm.message(state, t, self._zero(t, lead), self._agents(), self.problem)

    def next_state(self, state: dict[str, np.ndarray], mixed: Mapping[str, np.ndarray], t: int
                   ) -> dict[str, np.ndarray]:
        return self.algorithm.update(state, dict(mixed), t, self._agents(), self.problem)


class _GradientPoints:
    """A cost family's stand-in that keeps the points at which one agent's gradient is evaluated
    (:func:`recording_gradients`); everything else, ``isinstance`` included, is the family's."""

    def __init__(self, costs: Any, agent: int, out: list[np.ndarray], known: list[np.ndarray] | None) -> None:
        self._costs, self._agent, self._out, self._known = costs, int(agent), out, known

    @property  # type: ignore[misc]
    def __class__(self) -> type:  # (a rule's isinstance check sees the family)
        return type(self._costs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._costs, name)

    def gradient(self, agents: Any, x: Any, **kwargs: Any) -> np.ndarray:
        try:
            a, pts = np.asarray(agents), np.asarray(x, dtype=float)
            shape = np.broadcast_shapes(a.shape, pts.shape[:-1]) if pts.ndim >= 1 else None
        except (TypeError, ValueError):  # (the family names what is wrong with the call)
            shape = None
        if shape is not None:
            mine = np.broadcast_to(a == self._agent, shape)
            if mine.any():
                got = np.broadcast_to(pts, shape + pts.shape[-1:])[mine].reshape(-1, pts.shape[-1])
                # (points kept already, the last ones recorded here or the last of ``known``: not again)
                if not any(kept and kept[-1].shape == got.shape and np.array_equal(kept[-1], got, equal_nan=True)
                           for kept in (self._out, self._known)):
                    self._out.append(got)
        return self._costs.gradient(agents, x, **kwargs)


class _RecordedProblem:
    """A problem whose ``costs`` is a :class:`_GradientPoints`; everything else is the problem's."""

    def __init__(self, problem: Any, costs: _GradientPoints) -> None:
        self._problem, self.costs = problem, costs

    @property  # type: ignore[misc]
    def __class__(self) -> type:
        return type(self._problem)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._problem, name)


def recording_gradients(rule: AlgorithmChannelRule, agent: int, out: list[np.ndarray],
                        known: list[np.ndarray] | None = None) -> AlgorithmChannelRule:
    """``rule`` whose problem keeps, in ``out``, the points at which the rule evaluates ``agent``'s gradient
    (``(k, n)`` arrays, one per call): where a relation of the agent's two costs must hold, whether or not they
    are released values or decisions (e.g. a step from the mixed point ``z``: ``x = z - a grad f(z)``).

    Args:
        rule: the replay rule of one problem.
        agent: the agent whose gradient's points are kept.
        out: the list they are appended to (copies).
        known: a list whose last array is not appended again when a call's points equal it (e.g. the decisions a
            :class:`DecisionRecorder` keeps: a rule evaluating its gradient at its decision, as Wang and Başar's).

    Returns:
        The same rule on the recording problem (the same values, step by step).

    Example:
        >>> from asyncdp.privacy.context import small_example
        >>> pair, ctx = small_example()
        >>> kept = []
        >>> _ = replay_runs(ctx.engine_runs(0), pair.scenario, algorithm=ctx.algorithm,
        ...                 wrap=lambda rule, label: recording_gradients(rule, 0, kept))
        >>> len(kept) > 0, kept[0].shape[1] == pair.scenario.problem.dim
        (True, True)
    """
    from dataclasses import replace

    problem = _RecordedProblem(rule.problem, _GradientPoints(rule.problem.costs, agent, out, known))
    return replace(rule, problem=problem)


class DecisionRecorder:
    """A replay rule (``initial_state``, ``message_means``, ``next_state``) that keeps one agent's decision
    (:meth:`~asyncdp.algorithms.base.Algorithm.decision`) at every state whose messages the replay reads: the
    points where that agent's cost is evaluated (where a rule evaluates it at its decision), which its releases,
    being noisy, need not come near.

    Args:
        inner: the replay rule (e.g. an :class:`AlgorithmChannelRule`, or a wrapper of one).
        algorithm: the bound algorithm (its ``decision``).
        agent: the agent whose decisions are kept.
        out: the list each round's ``(R, n)`` decisions are appended to.

    Example:
        >>> from asyncdp.privacy.context import small_example
        >>> pair, ctx = small_example()
        >>> kept = []
        >>> _ = replay_runs(ctx.engine_runs(0), pair.scenario, algorithm=ctx.algorithm,
        ...                 wrap=lambda rule, label: DecisionRecorder(rule, ctx.algorithm, 0, kept))
        >>> len(kept) == pair.scenario.horizon, kept[0].shape == (ctx.options.runs, pair.scenario.problem.dim)
        (True, True)
    """

    def __init__(self, inner: Any, algorithm: Algorithm, agent: int, out: list[np.ndarray]) -> None:
        self.inner, self.algorithm, self.agent, self.out = inner, algorithm, int(agent), out

    def initial_state(self, runs: int) -> Any:
        return self.inner.initial_state(runs)

    def message_means(self, state: Any, t: int) -> Mapping[str, np.ndarray]:
        decision = np.asarray(self.algorithm.decision(state), dtype=float)
        self.out.append(decision[..., self.agent, :].reshape(-1, decision.shape[-1]).copy())
        return self.inner.message_means(state, t)

    def next_state(self, state: Any, mixed: Mapping[str, np.ndarray], t: int) -> Any:
        return self.inner.next_state(state, mixed, t)


@dataclass(frozen=True)
class SharedSchedule:
    """``runs`` runs that all have one schedule object, as one batch of schedules
    (:class:`accounting.replay_inputs.ScheduleBatch`).

    Lockstep runs on lossless links share the topology's schedule. Read as a
    sequence, the replay looks every run's schedule up and stacks the ``R``
    copies of each round's ``(W, S)``, a Python loop over the runs in every
    round; as a batch, each round's ``(W, S)`` is computed once and repeated
    into the same ``(R, N, N)`` arrays, and the combinations gather every
    run's messages with one ``(N, N)`` index (:meth:`gather_index`; it has
    the attributes of :func:`accounting.round_gather.gather_index`'s
    index, which the tests compare it with).

    Attributes:
        schedule: the schedule (anything with ``dense(t) -> (W, S)``).
        runs: ``R``.

    Example:
        >>> from asyncdp.engine.schedule import RealizedSchedule
        >>> import topology
        >>> one = RealizedSchedule.lockstep(topology.static(np.full((2, 2), 0.5)), 3)
        >>> w, src = SharedSchedule(one, 4)[1:3].dense_runs(2)
        >>> w.shape, bool((src == one.dense(2)[1]).all())
        ((2, 2, 2), True)
    """

    schedule: Any
    runs: int
    _rounds: dict[Any, Any] = field(default_factory=dict, compare=False, repr=False)

    def __len__(self) -> int:
        return self.runs

    def __getitem__(self, runs: slice) -> SharedSchedule:
        return SharedSchedule(self.schedule, len(range(*runs.indices(self.runs))), self._rounds)

    def _dense(self, t: int) -> tuple[np.ndarray, np.ndarray]:
        """The schedule's round ``t`` (``dense(t)``), computed once for the runs and their slices."""
        got = self._rounds.get(t)
        if got is None:
            w, src = self.schedule.dense(t)
            got = self._rounds[t] = (np.asarray(w, dtype=float), np.asarray(src, dtype=np.int64))
        return got

    def dense_runs(self, t: int) -> tuple[np.ndarray, np.ndarray]:
        w, src = self._dense(t)
        return (np.ascontiguousarray(np.broadcast_to(w, (self.runs,) + w.shape)),
                np.ascontiguousarray(np.broadcast_to(src, (self.runs,) + src.shape)))

    def shared_round(self, t: int) -> SharedRound:
        """Round ``t``'s ``(W, S)``, the same for every run, as the replay's
        :class:`~accounting.shared_rounds.SharedRound` (:func:`~accounting.shared_rounds.shared_round`: kept
        by value, so the replays of a check prepare each distinct round once).

        Example:
            >>> from asyncdp.engine.schedule import RealizedSchedule
            >>> import topology
            >>> one = RealizedSchedule.lockstep(topology.static(np.full((2, 2), 0.5)), 3)
            >>> SharedSchedule(one, 4).shared_round(2) is SharedSchedule(one, 7)[2:5].shared_round(2)
            True
        """
        key = ("shared", t)
        got: Any = self._rounds.get(key)
        if got is None:
            got = self._rounds[key] = shared_round(*self._dense(t))
        return got

    def gather_index(self, t: int) -> _SharedGather:
        """What the replay's combinations of round ``t`` read, the same for every run: the replay's gather index
        (:func:`accounting.round_gather.gather_index`) with the run axis a plain slice."""
        return _SharedGather(self._dense(t)[1])


def schedule_batch(schedules: Any) -> Any:
    """Schedules as the replay reads them: a batch of every run's (``dense_runs``) as it is, one schedule object for
    every run (lockstep on lossless links) as a :class:`SharedSchedule` (the same rounds, computed once, and gathered
    with a plain run slice: the same values), any other sequence as a list of per-run schedules.

    Example:
        >>> from asyncdp.engine.schedule import RealizedSchedule
        >>> one = RealizedSchedule.from_dense([np.eye(2)], [np.eye(2, dtype=int)])
        >>> type(schedule_batch((one, one))).__name__, len(schedule_batch((one, one)))
        ('SharedSchedule', 2)
    """
    if hasattr(schedules, "dense_runs"):
        return schedules
    got = list(schedules)
    if got and len(set(map(id, got))) == 1:  # (the list keeps them alive: no id is reused)
        return SharedSchedule(got[0], len(got))
    return got


class _SharedGather:
    """:func:`accounting.round_gather.gather_index` of sender rounds that every run shares, ``src`` ``(N, N)``.

    The replay gathers ``y[r, src[r, i, j] - 1, j]`` for every run ``r``; when
    ``src`` is one ``(N, N)`` array for all runs, the run axis is a plain
    slice (``y[:, src - 1, j]``) instead of a third index array, which
    gathers the same values (the same copies, so the replay's results are
    the same to the bit) without building ``R * N * N`` indices.
    """

    __slots__ = ("rr", "idx", "jj", "ii", "used", "any_used")

    def __init__(self, src: np.ndarray) -> None:
        n_agents = src.shape[0]
        self.rr = slice(None)
        self.jj = np.arange(n_agents)[None, :]
        self.ii = np.arange(n_agents)[:, None]
        self.idx = np.maximum(src - 1, 0)
        used = src > 0
        used[np.arange(n_agents), np.arange(n_agents)] = False  # the self term is added separately
        self.used = used[..., None]
        self.any_used = bool(used.any())


def declared_noise(algorithm: Algorithm, horizon: int) -> dict[str, ChannelNoise]:
    """Every channel's declared noise over ``horizon`` rounds (``mechanism None`` for noise-free channels).

    A check reads the declaration of one algorithm many times (every replay
    and every step): the declarations of the last few algorithms are kept,
    and a call for one of them returns a new dict of the same (frozen)
    :class:`~accounting.replay_inputs.ChannelNoise` objects, whose scales
    are read-only.

    Example:
        >>> from asyncdp.privacy.context import small_example
        >>> sc = small_example()[0].scenario
        >>> declared_noise(sc.algorithm.bind(sc.problem), sc.horizon)["y"].scales.shape
        (5,)
    """
    key = (id(algorithm), int(horizon))
    with _KEPT_LOCK:
        hit = _DECLARED.get(key)
        if hit is not None and hit[0] is algorithm:  # (the entry holds the algorithm, so its id is not reused)
            _DECLARED.move_to_end(key)
            return dict(hit[1])
    out = {}
    for c in algorithm.channels:
        if c.noisy:
            scales = [algorithm.noise(t, c.name).scale for t in range(1, horizon + 1)]
            out[c.name] = ChannelNoise(c.mechanism, np.array(scales, dtype=float))
            out[c.name].scales.flags.writeable = False  # shared by the calls that read it from the cache
        else:
            out[c.name] = ChannelNoise(None)
    with _KEPT_LOCK:
        _DECLARED[key] = (algorithm, out)
        if len(_DECLARED) > _DECLARED_ENTRIES:
            _DECLARED.popitem(last=False)
    return dict(out)


def replay_runs(runs: EngineRuns, scenario: Scenario, adjacent: Scenario | None = None,
                algorithm: Algorithm | None = None, schedules: Sequence[Any] | None = None,
                messages: Mapping[str, np.ndarray] | None = None, pin_agent: int | None = None,
                wrap: Callable[[AlgorithmChannelRule, str], Any] | None = None, losses: bool = True
                ) -> ScheduledReplay:
    """Replay recorded runs on their realized schedules (:func:`accounting.scheduled_replay.scheduled_replay`).

    Args:
        runs: the recorded runs.
        scenario: the scenario ``P`` (its problem, initial points, algorithm).
        adjacent: the adjacent scenario ``P'`` (omit for residuals only).
        algorithm: the algorithm to replay both with (default ``scenario``'s, bound to its problem).
        schedules, messages: override the recorded ones.
        pin_agent: construct that agent's messages (see :func:`accounting.scheduled_replay.scheduled_replay`).
        wrap: ``(rule, label) -> rule``, applied to the replay rule of ``scenario`` (label ``"scenario"``) and
            of ``adjacent`` (``"adjacent"``) before replaying (e.g. an
            :class:`~asyncdp.privacy.additivity.AdditivityProbe`).
        losses: compute the runs' privacy losses (``False``: the residuals under both problems only, e.g. for
            the realized shifts; see :func:`accounting.scheduled_replay.scheduled_replay`).

    Returns:
        The :class:`~accounting.scheduled_replay.ScheduledReplay`.
    """
    alg = algorithm if algorithm is not None else scenario.algorithm.bind(scenario.problem)
    rule = AlgorithmChannelRule(alg, scenario.problem, scenario.initial_points())
    rule_p: Any = None if adjacent is None else AlgorithmChannelRule(alg, adjacent.problem, adjacent.initial_points())
    if wrap is not None:
        rule = wrap(rule, "scenario")
        rule_p = None if rule_p is None else wrap(rule_p, "adjacent")
    chosen = schedule_batch(runs.schedules if schedules is None else schedules)
    return scheduled_replay(runs.messages if messages is None else messages, chosen,
                            declared_noise(alg, scenario.horizon), rule, rule_p, unicast=runs.unicast,
                            pin_agent=pin_agent, losses=losses)
