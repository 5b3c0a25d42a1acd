"""A timed batch's random draws: every run's clocks and links, in the SimPy or the vectorized stream layout.

Streams (:mod:`asyncdp.noise`): run 0 of every batch draws its clocks from
``(2, i)`` (``agent_clock_rng``) and its links from ``(1, i, j)``
(``link_rng``), in the SimPy engine's order, so run 0 is the SimPy run of the
scenario's seed and a one-run batch equals it bitwise. Run ``r >= 1`` draws
everything from one generator on ``(6, r)``, in this order: (deadline timing
only) the drifts ``timing.sample_drifts(rng, N)`` (``uniform(-drift, drift, N)``)
and the jitters ``timing.sample_jitters(rng, T * N)`` as a ``(T, N)`` array
(``uniform(0, jitter, (T, N))``; row ``t - 1``: round ``t``; a ``Deadline``
subclass's own ``sample_drift`` and ``sample_jitter`` calls, in this order, if
it overrides them); one loss uniform
``random(M)`` per message;
then the latencies, ``model.latency.sample(rng, m)`` for the ``m`` messages on
links with the default model, then for each overridden link in the order of
``Links.overrides`` (sorted by ``(sender, receiver)``). Messages are
numbered round by round, and within a round in the order of the round's
weight matrix entries (CSR order: by receiver row). Under async timing run
0 draws each agent's waits from ``(2, i)`` (``Async.sample_waits``, the
values of ``T`` calls of ``sample_wait``); run ``r >= 1`` draws them first on
``(6, r)``: ``timing.sample_waits(rng, T * N)`` as a ``(T, N)`` array (row
``t - 1``: the waits before wake-up ``t``), then the loss uniforms and
latencies as above. Since numpy fills arrays draw by draw, run ``r``'s values do not
depend on ``R``: run ``r`` of a batch of any size ``R > r`` is the same run.
Run ``r >= 1`` is a run of the same model (same distributions, streams
independent of run 0's and of each other) but not a run the SimPy engine can
reproduce: the SimPy engine draws per link and per agent, which is run 0's
layout and costs a generator per link.

Layouts of run 0 (``layout=`` of :func:`~asyncdp.engine.batch_engine.run_batch`):
``"simpy"`` is the layout above (run 0 is the SimPy run of the seed);
``"vectorized"`` draws run 0 from stream ``(6, 0)`` exactly as runs ``r >= 1``
draw from ``(6, r)``, so no generator per link is made and every draw is an
array draw. Both layouts draw the same distributions (one loss uniform and
one latency per message, each agent's drift and jitters or waits), so the
runs are runs of the same model; ``tests/asyncdp/engine/test_batch_layouts.py``
compares the distributions of final errors and lost-message counts with a
two-sample test. ``"auto"`` (the default) uses the SimPy layout up to
:data:`VECTORIZED_ABOVE_LINKS` links and the vectorized one above, with a
``UserWarning`` saying so; the result's ``metadata["stream_layout"]`` names the
layout used.

Cost: in the SimPy layout run 0 makes one generator per link ever used and draws its messages
one by one (the SimPy engine's per-message order, which interleaves the
loss uniform and a variable-length ziggurat latency draw; zero and constant
latencies draw the loss uniforms as one array), about 1 us per message and
15 us per link; runs ``r >= 1`` draw arrays.

The draws are checked before any state is computed: a timing subclass's
clock draws outside its support and a negative, NaN or infinite latency are
refused, naming the run (``_check_clock``, ``_check_delays``).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from topology.validation import check_integer

from ..errors import ScenarioError, TimingError
from ..noise import BATCH_RUN_KEY, stream
from .batch_plan import _BLOCK, _Plan
from .links import LINK_STREAM_KEY, LinkChannel, checked_delays
from .timing import Async, Deadline, agent_clock_rng, check_clock_draws

__all__ = ["run_rng", "LAYOUTS", "VECTORIZED_ABOVE_LINKS"]


LAYOUTS = ("auto", "simpy", "vectorized")
"""Random-stream layouts of a timed batch's run 0 (module docstring)."""


VECTORIZED_ABOVE_LINKS = 100_000
"""``layout="auto"`` draws run 0 in the vectorized layout when the scenario uses more links than this.

The SimPy layout costs one generator per link (about 15 us each) plus about
1 us per message drawn one by one; above 10^5 links that is seconds, and the
vectorized layout draws the same distributions as arrays (module docstring).
"""


def _resolve_layout(layout: str, plan: _Plan) -> str:
    """``"simpy"`` or ``"vectorized"``; ``"auto"`` decides by the number of links, with a warning if vectorized."""
    if layout != "auto":
        return layout
    if plan.L <= VECTORIZED_ABOVE_LINKS:
        return "simpy"
    import warnings

    warnings.warn(
        f"the batch engine draws run 0 in the vectorized stream layout ({plan.L} links > {VECTORIZED_ABOVE_LINKS}): "
        "every run draws its clocks and links from stream (6, r), so run 0 is a run of the same model but not the "
        "SimPy engine's run of this seed; pass layout='simpy' to reproduce it (one generator per link), or "
        "layout='vectorized' to silence this note", UserWarning, stacklevel=4)
    return "vectorized"


def run_rng(seed: int, run: int) -> np.random.Generator:
    """The clock-and-link generator of run ``run`` of a batch: stream ``(6, run)`` of the seed layout.

    Exactly ``numpy.random.default_rng(numpy.random.SeedSequence(seed, spawn_key=(6, run)))``; the
    draw order on it is in the module docstring. Every run ``r >= 1`` draws from it; run 0 does in the
    vectorized layout, and uses the SimPy engine's streams in the SimPy layout.

    Args:
        seed: the scenario's seed (>= 0).
        run: the run index (>= 0).

    Returns:
        A fresh generator.

    Raises:
        ScenarioError: ``seed`` or ``run`` is not an integer in range.

    Example:
        >>> run_rng(3, 1).random() == run_rng(3, 1).random()
        True
    """
    seed = check_integer(seed, "seed", minimum=0, error=ScenarioError, where="run_rng")
    run = check_integer(run, "run", minimum=0, error=ScenarioError, where="run_rng")
    return stream(seed, BATCH_RUN_KEY, run)


def _drawn(timing: Any, method: str, values: Any, count: int) -> np.ndarray:
    """A timing's ``sample_drifts`` / ``sample_jitters`` / ``sample_waits`` result, checked to hold ``count`` values.

    A subclass overriding one of them could return one value for all (numpy
    broadcast it: run 0 then silently differed from the SimPy run).
    """
    arr = np.asarray(values, dtype=float)
    if arr.shape != (count,):
        raise TimingError(f"{type(timing).__name__}.{method}(rng, {count}) returned shape {arr.shape}, "
                          f"expected ({count},)")
    return arr


def _draws_run0(scenario: Any, plan: _Plan) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Run 0: the SimPy engine's streams (per-agent clocks, per-link generators).

    Returns ``(drift (N,), per-round clock draws (T, N), lost (M,), delay (M,))``; the per-round clock
    draws are the jitters (deadline timing) or the waits before each wake-up (async timing).
    """
    timing = scenario.timing
    seed = scenario.seed
    drift = np.zeros(plan.N)
    jitter = np.zeros((plan.T, plan.N))
    if isinstance(timing, Deadline):  # a lockstep agent has no clock
        for i in range(plan.N):
            rng = agent_clock_rng(seed, i)
            drift[i] = timing.sample_drift(rng)
            jitter[:, i] = _drawn(timing, "sample_jitters", timing.sample_jitters(rng, plan.T), plan.T)
    elif isinstance(timing, Async):
        for i in range(plan.N):
            jitter[:, i] = _drawn(timing, "sample_waits", timing.sample_waits(agent_clock_rng(seed, i), plan.T), plan.T)
    lost = np.empty(plan.M, dtype=bool)
    delay = np.empty(plan.M)
    counts = plan.link_count.tolist()
    special = dict(plan.override_links)
    for k, (s, r) in enumerate(zip(plan.link_send.tolist(), plan.link_recv.tolist())):
        msgs = plan.messages_of(k)
        # the generator of Links.channel (link_rng(seed, s, r)), made without re-checking the indices
        rng = np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(LINK_STREAM_KEY, s, r)))
        lost[msgs], delay[msgs] = LinkChannel(special.get(k, plan.default), rng, link=(s, r)).draws(counts[k])
    return drift, jitter, lost, delay


def _draws_run(scenario: Any, plan: _Plan, run: int, out: tuple[Any, ...],
               loss: np.ndarray | float | None = None) -> np.ndarray:
    """Run ``run``'s draws from one generator on ``(6, run)`` (module docstring), into row ``run`` of ``out``.

    ``loss``: ``_Plan.msg_loss()``, when the caller computed it once for all runs. The loss
    uniforms are drawn in blocks (the same values: the generator fills an array draw by draw).
    ``out``'s latency array may be ``None`` for a one-run batch whose links all have the default
    model: the latencies are then the model's own array (no copy).

    Returns:
        The latency array ``(R, M)``.
    """
    timing = scenario.timing
    drift, jitter, lost, delay = out
    if loss is None:
        loss = plan.msg_loss()
    rng = np.random.default_rng(np.random.SeedSequence(scenario.seed, spawn_key=(BATCH_RUN_KEY, run)))  # run_rng
    if isinstance(timing, Deadline):  # lockstep: no clock draws
        drift[run] = _drawn(timing, "sample_drifts", timing.sample_drifts(rng, plan.N), plan.N)  # a subclass's own
        jitter[run] = _drawn(timing, "sample_jitters", timing.sample_jitters(rng, plan.T * plan.N),
                             plan.T * plan.N).reshape(plan.T, plan.N)
    elif isinstance(timing, Async):  # the waits, row t - 1: before wake-up t
        jitter[run] = _drawn(timing, "sample_waits", timing.sample_waits(rng, plan.T * plan.N),
                             plan.T * plan.N).reshape(plan.T, plan.N)
    for lo in range(0, plan.M, _BLOCK):  # in blocks (memory of large runs)
        hi = min(lo + _BLOCK, plan.M)
        np.less(rng.random(hi - lo), loss if np.ndim(loss) == 0 else loss[lo:hi], out=lost[run, lo:hi])
    for model, idx in plan.groups:  # idx None: every link has the default model, the messages in order
        count = plan.M if idx is None else idx.size
        drawn = model.latency.sample(rng, count)
        if np.shape(drawn) != (count,):  # the values are checked for all runs at once (_check_delays)
            checked_delays(model.latency, drawn, count, f"run {run}, " + (
                "the links of the default model" if idx is None or model is plan.default
                else f"link {int(plan.m_send[idx[0]])} -> {int(plan.m_recv[idx[0]])}"))
        if idx is None and delay is None:
            delay = np.require(drawn, dtype=float, requirements=["C", "W"]).reshape(1, plan.M)  # float64 sums
        elif idx is None:
            delay[run] = drawn
        else:
            delay[run, idx] = drawn
    return delay


def _check_delays(plan: _Plan, links: Any, delay: np.ndarray) -> None:
    """Refuse a sampled delay that is negative, NaN or infinite (``checked_delays``), naming its run and link."""
    if delay.size == 0 or (delay.min() >= 0.0 and delay.max() < np.inf):  # NaN fails both
        return
    r, m = (int(k) for k in np.argwhere(~((delay >= 0.0) & (delay < np.inf)))[0])
    s, v = int(plan.m_send[m]), int(plan.m_recv[m])
    model = links.overrides.get((s, v), links.default)
    checked_delays(model.latency, delay[r, m:m + 1], 1, f"run {r}, link {s} -> {v}")


def _check_clock(timing: Any, drift: np.ndarray, jitter: np.ndarray) -> None:
    """Refuse a subclass's clock draws outside the timing's support (``check_clock_draws``), naming the run."""
    methods = (("sample_drift", drift), ("sample_jitter", jitter)) if isinstance(timing, Deadline) else (
        (("sample_wait", jitter),) if isinstance(timing, Async) else ())
    for method, values in methods:
        try:
            check_clock_draws(timing, method, values.ravel())  # all runs at once; the run is found on failure
        except TimingError:
            for r in range(values.shape[0]):
                check_clock_draws(timing, method, values[r], run=r)
