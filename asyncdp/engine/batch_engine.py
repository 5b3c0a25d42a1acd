"""The batch engine: ``R`` Monte-Carlo runs at once, round by round, as arrays.

States are arrays of shape ``(R, N, n)``; round ``t`` calls the *same*
algorithm rule objects as the SimPy engine (:mod:`asyncdp.algorithms.base`)
with ``agents = numpy.arange(N)``, and mixes each channel with the round's
weights as a sparse product (``scipy.sparse``), so memory grows as
``O(N n R)`` plus the weights, never ``O(N^2)``.

Scope:

* :class:`~asyncdp.engine.timing.Lockstep` broadcast rounds without loss or
  latency — the papers' model (this module). Fed the same noise, the two
  engines agree to round-off (a test enforces it for every registered
  algorithm). Lockstep rounds with loss (``missing`` None, ``"renormalize"``
  or ``"stale"``), latency or in unicast mode run on the timed path below.
* :class:`~asyncdp.engine.timing.Deadline` timing with lossy links (every
  latency model, per-link overrides, FIFO or reordering links), clock drift
  and jitter, ``missing="renormalize"`` or ``"stale"``, broadcast or unicast:
  :mod:`asyncdp.engine.batch_deadline` draws every run's realized schedule
  first and then runs the rounds as arrays; run 0 is the SimPy run of the
  scenario's seed, bitwise (module docstring there: seed layout of runs
  ``r >= 1``; stale messages of rounds ahead run in dependency order,
  :mod:`asyncdp.engine.batch_levels`).
* :class:`~asyncdp.engine.timing.Async` timing (Poisson wake-ups, or any
  ``Async`` subclass's waits, combining the freshest value of every
  neighbour; ``staleness`` limits) over the same links, broadcast or
  unicast: the schedule is drawn from the clock and link streams only, so
  :mod:`asyncdp.engine.batch_deadline` computes every run's wake-ups,
  deliveries and freshest messages first, and the combines then run in
  dependency order grouped by round (:mod:`asyncdp.engine.batch_levels`),
  vectorized across runs; run 0 is again the SimPy run, bitwise.

Every timing policy therefore runs here; the SimPy engine remains the
reference (and the engine of one-off runs with a progress bar). Speed
(BENCHMARKS.md, measured on 2 shared cores): ``R`` runs cost one rule call
per round (or per dependency level and round) plus array work linear in
``R``. For 10^4 runs of ``examples/async_lossy_links.py`` (10 agents, 60
rounds) a run costs about 0.3 ms of CPU under its deadline timing (50-70x
less than a SimPy run) and about 0.33 ms with ``Async(rate=1.0)`` (about 50x
less; about 0.37-0.39 ms and 42-46x with transcripts). One run of 10^6 agents in lockstep
rounds (T = 10) costs about 11 s of CPU and 1.4 GB; one deadline run on a
fresh random graph every round (the vectorized stream layout below) about
4 s and 0.9 GB at 10^4 agents (8·10^6 messages) and about 58 s of CPU and
7.9 GB at 10^5 agents (8·10^7 messages; 3 GB of it the graph sequence).
:meth:`BatchResult.schedules` gives every run's realized schedule as
columns for a fraction of the simulation's cost: what the privacy checker
reads (it never rebuilds runs' schedules one by one).

Random-stream layout of run 0 of a timed batch (``layout=``,
:mod:`asyncdp.engine.batch_draws`): ``"simpy"`` (the SimPy engine's
streams, so run 0 is the SimPy run), ``"vectorized"`` (stream ``(6, 0)`` like
every other run: no generator per link), or ``"auto"``: the SimPy layout up
to 10^5 links, the vectorized one above (with a warning).

Noise: round ``t``'s block for channel ``c`` is
``noise.broadcast(t, c, mechanism, (R, N, n))``; with the default
:class:`~asyncdp.noise.SeededNoise` and ``R = 1`` it is exactly the block the
SimPy engine draws, so a one-run batch reproduces a SimPy lockstep run.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import scipy.sparse as sp

from accounting.ledger import Ledger, Release
from topology.sequence import GraphSequence
from topology.validation import check_integer

from .. import metrics
from ..algorithms.base import claimed_pair, rule_messages, rule_noise, rule_update
from ..errors import ScenarioError
from ..metrics import MetricCurve
from ..noise import engine_noise
from ..result import Result, summary_json, summary_table
from .links import ZeroLatency
from .schedule import RealizedSchedule, RealizedSchedules, check_rows_nonempty
from .timing import Async, Deadline

__all__ = ["BatchResult", "run_batch", "KEEP"]

KEEP = ("all", "final")


def _mix(w: sp.csr_array, msg: np.ndarray) -> np.ndarray:
    """Row ``i`` of the result is ``sum_j W_ij msg[:, j]`` for ``msg`` of shape ``(R, N, d)``."""
    r, n_agents, d = msg.shape
    flat = np.moveaxis(msg, 1, 0).reshape(n_agents, r * d)
    return np.moveaxis((w @ flat).reshape(n_agents, r, d), 0, 1)


@dataclass
class BatchResult:
    """``R`` lockstep runs of one scenario: a :class:`~asyncdp.result.Result` with a leading run axis.

    It has :class:`~asyncdp.result.Result`'s metric API with the same names
    (``trajectory``, ``final``, ``optimum``, ``horizon``, ``optimality_error``,
    ``deviation``, ``consensus_error``, ``ledger``, ``claimed_epsilon``,
    ``claimed_delta``, ``metadata``), the per-run arrays with a leading axis of
    length ``R``; the metrics come from :mod:`asyncdp.metrics`, and
    :meth:`run` gives run ``r`` as a ``Result``. Metrics are
    :class:`~asyncdp.metrics.MetricCurve` arrays: ``batch.optimality_error()``
    and ``batch.optimality_error`` read the same numbers.

    Attributes:
        trajectory: ``x_i(t)`` of every run, ``(R, T + 1, N, n)``, or ``None``
            with ``keep="final"``.
        final: ``x_i(T)`` of every run, ``(R, N, n)``.
        optimality_error: ``||xbar(t) - x*||^2``, ``(R, T + 1)``.
        deviation: ``max_i ||x_i(t) - xbar(t)||``, ``(R, T + 1)`` (the consensus
            error lies between it and twice it).
        optimum: ``x*``.
        ledger: lockstep: the releases of one run (identical for every run:
            schedules do not depend on the noise; times are 0). Deadline
            timing: run 0's releases (``run(r).ledger``: run ``r``'s).
        messages: the messages per channel when transcripts were requested:
            ``(R, T, N, d)`` (broadcast) or ``(R, T, N, N, d)`` (unicast,
            ``[sender, receiver]``, NaN where no message was sent).
        claimed_epsilon, claimed_delta: the algorithm's claim.
        metadata: the scenario description plus ``runs``.
        times: timed runs (deadline, async, lossy lockstep) with ``keep="all"``: each agent's combine time
            per run and round, ``(R, T + 1, N)`` (else ``None``).
        staleness: timed runs with ``keep="all"``: the largest age of a
            message combined, ``(R, T, N)`` (else ``None``).
        messages_sent: transmissions per run (timed runs; the same in every run).
        messages_lost: lost transmissions of each run, ``(R,)`` (timed runs).
        detail: what :meth:`run` and :meth:`schedule` rebuild a deadline run from.
    """

    trajectory: np.ndarray | None
    final: np.ndarray
    optimality_error: np.ndarray
    deviation: np.ndarray
    optimum: np.ndarray
    ledger: Ledger
    messages: dict[str, np.ndarray] | None
    claimed_epsilon: float
    claimed_delta: float
    topology: GraphSequence
    metadata: dict[str, Any] = field(default_factory=dict)
    times: np.ndarray | None = None
    staleness: np.ndarray | None = None
    messages_sent: int = 0
    messages_lost: np.ndarray | None = None
    detail: Any = field(default=None, repr=False)

    def __post_init__(self) -> None:
        self.optimality_error = MetricCurve.of(self.optimality_error)
        self.deviation = MetricCurve.of(self.deviation)

    def __setstate__(self, state: dict[str, Any]) -> None:  # pickles of earlier versions hold plain arrays
        for name in ("times", "staleness", "messages_lost", "detail"):  # and lack the timed runs' fields
            state.setdefault(name, None)
        state.setdefault("messages_sent", 0)
        self.__dict__.update(state)
        self.__post_init__()

    @property
    def runs(self) -> int:
        """``R``, the number of runs."""
        return int(self.final.shape[0])

    @property
    def horizon(self) -> int:
        """``T``, the number of rounds."""
        return int(self.optimality_error.shape[1]) - 1

    @property
    def consensus_error(self) -> MetricCurve:
        """``max_ij ||x_i(t) - x_j(t)||`` of each run and round, ``(R, T + 1)`` (:func:`asyncdp.metrics.consensus_error`).

        With ``keep="final"`` only the final states were kept: it is then the
        final consensus error of each run, ``(R,)`` (``metrics.consensus_error(batch.final)``).
        """
        return MetricCurve.of(metrics.consensus_error(self.final if self.trajectory is None else self.trajectory))

    def run(self, r: int) -> Result:
        """Run ``r`` as a :class:`~asyncdp.result.Result` (needs ``keep="all"``).

        Its metrics equal row ``r`` of this batch's. The transcript is rebuilt
        from the recorded messages when they were kept; the realized mixing
        sequence is the topology's (lockstep, lossless). A timed run (deadline
        timing, lossy or unicast lockstep) comes back as the SimPy engine
        records it: times, ledger, transcript (send and receive times,
        losses), staleness, loss counts, realized mixing and schedule; run 0
        is the SimPy run of the scenario's seed.

        Args:
            r: the run, in ``[0, R)``.

        Returns:
            The run as a :class:`~asyncdp.result.Result`.

        Raises:
            ScenarioError: trajectories were not kept, or ``r`` is not an
                integer in ``[0, R)``.
        """
        if self.trajectory is None:
            raise ScenarioError("run(r) needs keep='all' (the trajectories were not stored)")
        r = self._run_index(r)
        traj = self.trajectory[r]
        horizon, n_agents = traj.shape[0] - 1, traj.shape[1]
        if self.detail is not None:
            return self._timed_run(r)
        transcript = None
        if self.messages is not None:
            from .transcript import Transcript

            transcript = Transcript()
            mid = 0
            for t in range(1, horizon + 1):
                w = self.topology.weights(t)
                wt = sp.csr_array(w.T)
                for i in range(n_agents):
                    receivers = [int(j) for j in wt.indices[wt.indptr[i]:wt.indptr[i + 1]] if j != i]
                    for j in receivers:
                        for name, arr in self.messages.items():
                            transcript.append(t, i, j, name, 0.0, 0.0, False, arr[r, t - 1, i], mid)
                    mid += 1
        return Result(
            trajectory=traj, times=np.zeros(traj.shape[:2]), optimum=self.optimum, ledger=self.ledger,
            transcript=transcript, realized=self.topology.take(horizon), staleness=np.zeros((horizon, n_agents),
                                                                                            dtype=np.int64),
            messages_sent=_transmissions(self.topology, horizon), messages_lost=0,
            claimed_epsilon=self.claimed_epsilon,
            claimed_delta=self.claimed_delta, metadata={**self.metadata, "run": int(r)},
            schedule=RealizedSchedule.lockstep(self.topology, horizon),
        )

    def _run_index(self, r: Any) -> int:
        r = check_integer(r, f"run index (in [0, {self.runs}))", minimum=0, error=ScenarioError)
        if r >= self.runs:
            raise ScenarioError(f"run index must be < {self.runs} (the number of runs), got {r!r}")
        return r

    def _timed_run(self, r: int) -> Result:
        """Run ``r`` of a timed batch as the SimPy engine's ``Result`` (times, ledger, transcript, schedule)."""
        from topology.sequence import generated

        from .batch_detail import run_ledger, run_schedule, run_transcript

        schedule = run_schedule(self.detail, r)
        transcript = None if self.messages is None else run_transcript(self.detail, r, self.messages)
        horizon, n_agents = self.horizon, self.trajectory.shape[2]
        assert self.times is not None and self.staleness is not None and self.messages_lost is not None
        return Result(
            trajectory=self.trajectory[r], times=self.times[r], optimum=self.optimum, ledger=run_ledger(self.detail, r),
            transcript=transcript,
            realized=generated(n_agents, schedule.matrix, length=horizon, description="realized mixing"),
            staleness=self.staleness[r], messages_sent=int(self.messages_sent),
            messages_lost=int(self.messages_lost[r]), claimed_epsilon=self.claimed_epsilon,
            claimed_delta=self.claimed_delta, metadata={**self.metadata, "run": int(r)}, schedule=schedule,
        )

    def schedule(self, r: int) -> RealizedSchedule:
        """Run ``r``'s realized schedule (:class:`~asyncdp.engine.schedule.RealizedSchedule`), as the SimPy engine records it.

        Lockstep lossless runs all mix the round's messages with the topology's weights; a
        deadline or lossy lockstep run's schedule is rebuilt from its recorded draws (needs ``keep="all"``).

        Raises:
            ScenarioError: ``r`` is not an integer in ``[0, R)``, or a deadline
                batch was run with ``keep="final"``.
        """
        r = self._run_index(r)
        if self.detail is not None and not self.detail.fixed:
            if self.trajectory is None:
                raise ScenarioError("schedule(r) of a timed batch needs keep='all' (the schedules were not stored)")
            from .batch_detail import run_schedule

            return run_schedule(self.detail, r)
        return RealizedSchedule.lockstep(self.topology, self.horizon)

    def schedules(self) -> RealizedSchedules:
        """Every run's realized schedule at once, as columns (:class:`~asyncdp.engine.schedule.RealizedSchedules`).

        ``batch.schedules()[r] == batch.schedule(r)`` for every run, but the
        columns of all runs are built with array operations over the whole
        batch (no per-run loop), for a cost of the order of a few passes over
        the batch's schedule arrays: well under the simulation of the runs
        (BENCHMARKS.md). Lockstep lossless runs all share the topology's
        schedule, which is repeated ``R`` times.

        Returns:
            The :class:`~asyncdp.engine.schedule.RealizedSchedules` of runs ``0 .. R - 1``.

        Raises:
            ScenarioError: a timed batch (deadline, async, lossy lockstep) run with ``keep="final"``.

        Example:
            >>> from asyncdp import Async, Huang2015, LinkModel, Links
            >>> sc = Huang2015.example_scenario(seed=1).replace(timing=Async(), links=Links(LinkModel(loss=0.2)))
            >>> batch = run_batch(sc, runs=3)
            >>> all(s == batch.schedule(r) for r, s in enumerate(batch.schedules()))
            True
        """
        if self.detail is not None and not self.detail.fixed:
            if self.trajectory is None:
                raise ScenarioError("schedules() of a timed batch needs keep='all' (the schedules were not stored)")
            from .batch_detail import run_schedules

            return run_schedules(self.detail)
        one = RealizedSchedule.lockstep(self.topology, self.horizon)
        reps = self.runs
        return RealizedSchedules(one.num_agents, one.horizon, np.arange(reps + 1) * len(one),
                                 *(np.tile(c, reps) for c in one._columns()))

    def summary(self) -> dict[str, Any]:
        """Means over runs of the final errors, and the claim (JSON-ready)."""
        opt = self.optimality_error[:, -1]
        return {
            "runs": self.runs,
            "optimality_error_mean": float(opt.mean()),
            "optimality_error_sem": float(opt.std(ddof=1) / np.sqrt(opt.size)) if opt.size > 1 else float("nan"),
            "deviation_mean": float(self.deviation[:, -1].mean()),
            "releases_per_run": len(self.ledger),
            "epsilon_claimed": self.claimed_epsilon,
        }

    def summary_table(self) -> str:
        """:meth:`summary` as aligned ``key  value`` lines (as :meth:`asyncdp.result.Result.summary_table`)."""
        return summary_table(self.summary())

    def to_json(self, indent: int | None = 2) -> str:
        """Summary plus metadata as JSON (as :meth:`asyncdp.result.Result.to_json`)."""
        return summary_json(self.summary(), self.metadata, indent)

    def __repr__(self) -> str:
        """One line: algorithm, runs, size, rounds and the mean final error (never the arrays)."""
        name = self.metadata.get("algorithm", "batch") if isinstance(self.metadata, dict) else "batch"
        shape = np.shape(self.final)
        return (f"BatchResult({name}: {self.runs} runs, {shape[1]} agents in {shape[-1]}-d, {self.horizon} rounds, "
                f"optimality_error mean={float(np.mean(self.optimality_error[:, -1])):.4g}, "
                f"epsilon={self.claimed_epsilon:g})")

    def __str__(self) -> str:
        """:meth:`__repr__`, then :meth:`summary_table` (``print(batch)``)."""
        return f"{self!r}\n{self.summary_table()}"


def _transmissions(topology: GraphSequence, horizon: int) -> int:
    """Messages sent in ``horizon`` lockstep broadcast rounds: one per off-diagonal weight entry (as the SimPy engine)."""
    total = 0
    for t in range(1, horizon + 1):
        w = sp.coo_array(topology.weights(t))
        total += int((w.row != w.col).sum())
    return total


@dataclass
class RunCurves:
    """The per-run records every batch keeps, filled round by round with :meth:`record`.

    Attributes:
        traj: states ``(R, T + 1, N, n)`` (``None`` with ``keep="final"``).
        opt_err, dev: optimality error and deviation ``(R, T + 1)``.
        optimum: ``x*``.
    """

    traj: np.ndarray | None
    opt_err: np.ndarray
    dev: np.ndarray
    optimum: np.ndarray

    def record(self, t: int, x: np.ndarray) -> None:
        """Round ``t``'s decisions ``x`` of every run, ``(R, N, n)``."""
        if self.traj is not None:
            self.traj[:, t] = x
        self.opt_err[:, t], self.dev[:, t] = metrics.optimality_error_and_deviation(x, self.optimum)

    def record_rounds(self, first: int, xs: np.ndarray, round_major: bool = False) -> None:
        """Rounds ``first, first + 1, ...``'s decisions ``xs`` ``(R, k, N, n)`` of every run at once.

        The same numbers as :meth:`record` round by round (the metrics reduce over the agents and the
        coordinates of each round alone), computed over blocks of rounds.

        Args:
            first: the first round.
            xs: the decisions, ``(R, k, N, n)``, or ``(k, R, N, n)`` with ``round_major``.
            round_major: ``xs`` has the rounds first (the metrics are then computed over contiguous blocks).
        """
        k = xs.shape[0] if round_major else xs.shape[1]
        if self.traj is not None:
            self.traj[:, first:first + k] = xs.swapaxes(0, 1) if round_major else xs
        one_round = xs[:1] if round_major else xs[:, :1]
        step = max(1, (1 << 22) // max(1, one_round.size))  # about 32 MB of float64 per block
        for lo in range(0, k, step):
            block = xs[lo:lo + step] if round_major else xs[:, lo:lo + step]
            opt, dev = metrics.optimality_error_and_deviation(block, self.optimum)
            width = opt.shape[0] if round_major else opt.shape[1]
            self.opt_err[:, first + lo:first + lo + width] = opt.T if round_major else opt
            self.dev[:, first + lo:first + lo + width] = dev.T if round_major else dev


def start_runs(scenario: Any, runs: int, keep: str) -> tuple[Any, Any, np.ndarray, Any, RunCurves]:
    """What both batch paths set up first: the bound rule, the noise, the initial states, the curves (round 0 recorded).

    Returns:
        ``(algorithm, noise source, agents, state, curves)``.
    """
    problem = scenario.problem
    alg = scenario.algorithm.bind(problem)
    noise = engine_noise(scenario.noise, scenario.seed)
    n_agents, horizon = problem.num_agents, scenario.horizon
    agents = np.arange(n_agents)
    x0 = np.broadcast_to(scenario.initial_points(), (runs, n_agents, problem.dim))
    state = alg.initial_state(np.array(x0), agents, problem)
    x = alg.decision(state)
    curves = RunCurves(np.empty((runs, horizon + 1) + x.shape[1:]) if keep == "all" else None,
                       np.empty((runs, horizon + 1)), np.empty((runs, horizon + 1)),
                       np.asarray(problem.optimum, dtype=float))
    curves.record(0, x)
    return alg, noise, agents, state, curves


def _check_batchable(scenario: Any) -> None:
    """Raise :class:`~asyncdp.errors.ScenarioError` if the batch engine does not run ``scenario``.

    It runs every timing; on the timed path only a rule whose every state entry has the leading axes (runs,
    agents) (:func:`~asyncdp.engine.batch_levels.check_per_agent_state`: a Python counter or a string in the state
    is refused there, the SimPy engine runs it).
    """
    if _timed(scenario):
        from .batch_levels import check_per_agent_state

        problem = scenario.problem
        alg = scenario.algorithm.bind(problem)
        x0 = np.broadcast_to(scenario.initial_points(), (1, problem.num_agents, problem.dim))
        check_per_agent_state(alg, alg.initial_state(np.array(x0), np.arange(problem.num_agents), problem), 1,
                              problem.num_agents)


def _timed(scenario: Any) -> bool:
    """Whether ``scenario`` runs on the timed path (:mod:`.batch_deadline`).

    Deadline and async timing, and lockstep rounds with a lossy link, a latency other
    than :class:`~asyncdp.engine.links.ZeroLatency` itself (a subclass may delay; the round times and
    release times depend on it) or in unicast mode, draw their links and run
    there; lockstep lossless zero-latency broadcast rounds (the papers' model,
    every time 0) run here.
    """
    if isinstance(scenario.timing, (Deadline, Async)):
        return True
    models = [scenario.links.default, *scenario.links.overrides.values()]
    return any(m.loss > 0 or type(m.latency) is not ZeroLatency for m in models) or scenario.mode != "broadcast"


def run_batch(scenario: Any, runs: int = 1, *, keep: str = "all", transcripts: bool = False,
              layout: str = "auto") -> BatchResult:
    """Run ``runs`` Monte-Carlo runs of ``scenario`` at once.

    Args:
        scenario: a :class:`~asyncdp.scenario.Scenario`: any timing
            (lockstep, :class:`~asyncdp.engine.timing.Deadline`,
            :class:`~asyncdp.engine.timing.Async`), any links, either mode
            (see the module docstring).
        runs: ``R``, the number of runs.
        keep: ``"all"`` stores trajectories ``(R, T + 1, N, n)`` (and, under
            timed runs, each run's times, staleness and schedule);
            ``"final"`` only the final states and per-round metrics
            (``O(N n R)`` memory).
        transcripts: also keep the messages per channel: ``(R, T, N, d)``
            (broadcast) or ``(R, T, N, N, d)`` (unicast, ``[sender, receiver]``,
            NaN where no message was sent).
        layout: random-stream layout of a timed batch's run 0 (lockstep
            lossless runs draw no clocks or links): ``"simpy"``, the SimPy
            engine's streams (run 0 is the SimPy run of the seed; one
            generator per link); ``"vectorized"``, stream ``(6, 0)`` drawn as
            arrays like every other run's (large runs); ``"auto"`` (default),
            ``"simpy"`` up to
            :data:`~asyncdp.engine.batch_draws.VECTORIZED_ABOVE_LINKS`
            links and ``"vectorized"`` above, with a ``UserWarning``. The
            layout used is ``metadata["stream_layout"]``.

    Returns:
        A :class:`BatchResult`. Under deadline or async timing its ``ledger`` is run
        0's (release times differ between runs; ``run(r).ledger`` is run ``r``'s).

    Raises:
        ScenarioError: a scenario outside the batch engine's scope, a bad
            ``runs`` or ``keep``.
        MessageLostError: an agent has nothing to combine (deadline or async timing:
            its row has no self weight and every message is missing).

    Example:
        >>> from asyncdp import Deadline, Huang2015, LinkModel, Links
        >>> sc = Huang2015.example_scenario(seed=1).replace(timing=Deadline(), links=Links(LinkModel(loss=0.2)))
        >>> batch = run_batch(sc, runs=3)
        >>> batch.trajectory.shape, batch.schedule(0) == sc.run().schedule
        ((3, 26, 6, 2), True)
    """
    runs = check_integer(runs, "runs", minimum=1, error=ScenarioError)
    if keep not in KEEP:
        raise ScenarioError(f"keep must be one of {KEEP}, got {keep!r}")
    from .batch_draws import LAYOUTS

    if not isinstance(layout, str) or layout not in LAYOUTS:
        raise ScenarioError(f"layout must be one of {LAYOUTS}, got {layout!r}")
    if _timed(scenario):
        from .batch_deadline import run_deadline_batch

        return run_deadline_batch(scenario, runs, keep, transcripts, BatchResult, layout)
    problem = scenario.problem
    n_agents, horizon = problem.num_agents, scenario.horizon
    alg, noise, agents, state, curves = start_runs(scenario, runs, keep)
    traj, opt_err, dev, optimum, record = curves.traj, curves.opt_err, curves.dev, curves.optimum, curves.record
    recorded: dict[str, np.ndarray] | None = {} if transcripts else None
    noisy = [(c, ch) for c, ch in enumerate(alg.channels) if ch.noisy]
    records: list[Release] = []  # one validated record per round and noisy channel
    rows: list[np.ndarray] = [np.zeros(0, dtype=np.intp)]  # per round: its record indices, agent by agent
    row_agents: list[np.ndarray] = [np.zeros(0, dtype=np.intp)]  # (the SimPy engine's order: agent, then channel)
    for t in range(1, horizon + 1):
        std = {}
        first = len(records)
        for c, ch in noisy:
            decl = rule_noise(alg, t, ch.name)
            std[ch.name] = noise.broadcast(t, c, ch.mechanism, (runs, n_agents, decl.dimension))
            released = decl.to_release(0, t, 0.0, ch.name)
            if released is not None:  # every agent releases once per round (rows stamped in from_columns)
                records.append(released)
        rows.append(np.tile(np.arange(first, len(records)), n_agents))
        row_agents.append(np.repeat(agents, len(records) - first))
        messages = rule_messages(alg, state, t, std, agents, problem)
        if recorded is not None:
            for name, arr in messages.items():
                recorded.setdefault(name, np.empty((runs, horizon) + arr.shape[1:]))[:, t - 1] = arr
        w = scenario.topology.weights(t)
        check_rows_nonempty(w, t)
        mixed = {name: _mix(w, arr) for name, arr in messages.items()}
        state = rule_update(alg, state, mixed, t, agents, problem)
        record(t, alg.decision(state))
    eps, delta = claimed_pair(alg, horizon)
    return BatchResult(
        trajectory=traj, final=np.array(alg.decision(state)), optimality_error=opt_err, deviation=dev,
        optimum=optimum, ledger=Ledger.from_columns(records, record=np.concatenate(rows), agent=np.concatenate(row_agents),
                                  time=np.zeros(sum(len(r) for r in rows))),
        messages=recorded, claimed_epsilon=eps, claimed_delta=delta,
        topology=scenario.topology, metadata={**scenario.describe(), "runs": int(runs), "engine": "batch"},
    )
