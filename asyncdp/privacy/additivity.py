"""Is every release its noise-free value plus the declared noise? :class:`AdditivityProbe`.

The exact replay (:mod:`accounting.scheduled_replay`), the noise
conformance test, the prober and the worst-case search all read a rule the
same way: a release is ``y = mu + s_t z``, its noise-free value ``mu`` (the R
step with zero noise) plus the declared scale ``s_t`` times the standard
noise ``z`` the engine hands the rule, drawn afresh and independent of
everything else. Nothing the rule declares says that it does so: a rule can
use its noise in any way it likes. One that, say, flips the sign of one
coordinate's noise according to its private data and another coordinate's
noise releases values whose marginals are exactly the declared Laplace
noise, uncorrelated across coordinates, rounds and agents, with a noise-free
value that does not move, and yet its data can be read off every release.
The conformance and dependence tests cannot see it, and the replay computes
a loss of 0.

So the check asks the rule itself, on the states the replay visits (the
engine's realized runs, under both problems): with fresh standard noise ``z``
drawn from the check's seed, is ``message(state, z) - message(state, 0)``
exactly ``sigma s_t z`` on every noisy channel, and 0 on every noise-free
channel (and on a noisy channel's round released with scale 0)? ``sigma``
is one sign per channel, fixed for the whole check (the first probe's): a
rule may release ``mu - s_t z`` (e.g. Wang and Başar, Automatica 2023,
Algorithm 2), since the declared noise is symmetric. Anything else (another
linear map of the noise, a data- or noise-dependent sign or magnitude, noise
leaking into another channel) is not the noise the replay's densities
assume: the bounds are not trusted (a doubt, never ``pass``), and the report
names the channel, round, agent and coordinate.

The probe calls the R step on a copy of the state, so a rule that writes to
its state inside ``message`` does not change the replay. Its draws come from
``numpy.random.SeedSequence(seed, spawn_key=(ADDITIVITY_STREAM,))``.

On the engine's realized runs the probe draws one block of standard noise per
noisy channel's shape and probes every round (and both problems) with it
(``reuse``): drawing afresh each round cost as much as the engine's own
draws, twice. Nothing the replay computes depends on the probe's noise (the
R step gets a copy of the state, and the replay's states come from the
released messages), so the block is independent of every state it probes,
as a fresh draw is; what a round's probe tests, whether the rule's message
is its noise-free value plus ``sigma s_t z`` at an independent ``z``, is
unchanged. The probes of the worst-case search's candidates draw afresh.

Example:
    >>> from asyncdp.privacy.context import small_example
    >>> pair, ctx = small_example(runs=20)
    >>> _ = ctx.realized_replay()
    >>> ctx.cache["additivity"] is None
    True
"""

from __future__ import annotations

import copy
import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from accounting.replay_inputs import ChannelNoise

from .evidence import set_aside_witnesses

__all__ = ["ADDITIVITY_STREAM", "ADDITIVITY_RTOL", "AdditivityProbe", "UNMODELLED_KEPT", "probe_finding", "probe_moving_scale", "probe_nonlinear",
           "probe_pairs", "probe_wrapper", "rescaled_draw", "set_aside_not_additive"]

ADDITIVITY_STREAM = 1001
"""The spawn key of the probe's draws: above the engine runs' sides and the worst-case search's 1000."""

ADDITIVITY_RTOL = 1e-9
"""Relative tolerance of the comparison (of the values' magnitude): round-off only."""


class AdditivityProbe:
    """A replay rule (``asyncdp.privacy.behavior.AlgorithmChannelRule``) whose R step is also probed.

    It replays exactly as the rule it wraps (same states, same noise-free
    messages); in addition, while no probe has failed, every round's R step
    is called once more on a copy of the state with standard noise ``z`` and
    compared with ``mu + sigma s_t z`` (module docstring). The first failure
    is kept in ``finding``.

    Args:
        inner: the replay rule (``algorithm``, ``problem`` and ``message_means``, ``initial_state``,
            ``next_state``).
        noise: every channel's declared noise (``asyncdp.privacy.behavior.declared_noise``).
        rng: the probe's generator.
        signs: the sign of each noisy channel's noise, shared by the probes of one check
            (filled by the first probe of each channel: the sign of ``sum(diff * z)``).
        label: which problem's replay this is (named in the finding).
        reuse: ``None`` (each round draws afresh), or a dict shared by probes that draw one block per mechanism
            and shape, kept there read-only, and probe every round with it (module docstring).

    Attributes:
        finding: ``None`` while every probe agreed, else one sentence naming the release.
        finding_run: the run of that release (``None`` while every probe agreed).
        nonlinear: the first finding where a release does not move by one factor times ``z`` (``rescaled_draw``;
            on any channel, also one after a rescaled channel), else ``None``: the released noise is then not of the
            declared family at any scale, and witnesses computed from its densities are no evidence
            (``set_aside_not_additive``).
        moving_scale: the first finding where a release is a rescaled draw whose factor moves from run to run (one
            factor per run and agent, not one per agent: ``rescaled_draw`` with ``doubled``), else ``None``: the
            declared family at a scale that is no one scale per channel, round and agent
            (``asyncdp.privacy.released_scale`` assumes one).
    """

    def __init__(self, inner: Any, noise: Mapping[str, ChannelNoise], rng: np.random.Generator,
                 signs: dict[str, float], label: str, reuse: dict[Any, np.ndarray] | None = None) -> None:
        self.inner, self.noise, self.rng, self.signs, self.label = inner, noise, rng, signs, label
        self.reuse = reuse
        self.finding: str | None = None
        self.finding_run: int | None = None
        self.nonlinear: str | None = None
        self.moving_scale: str | None = None
        self._other_use: str | None = None  # the last comparison's first release that is no rescaled draw

    def initial_state(self, runs: int) -> Any:
        return self.inner.initial_state(runs)

    def next_state(self, state: Any, mixed: Mapping[str, np.ndarray], t: int) -> Any:
        return self.inner.next_state(state, mixed, t)

    def message_means(self, state: Any, t: int) -> Mapping[str, np.ndarray]:
        mean = self.inner.message_means(state, t)
        if self.nonlinear is None:  # a rescaled draw is probed on: a later round may use its noise otherwise
            first, run = self.finding, self.finding_run
            found = self._probe(state, t, mean)
            if found is not None:
                if self._other_use is not None:
                    self.nonlinear = self._other_use
                if first is not None:
                    self.finding, self.finding_run = first, run
                else:
                    self.finding = found
        return mean

    def _draw(self, mechanism: str, shape: tuple[int, ...]) -> np.ndarray:
        if self.reuse is not None:
            z = self.reuse.get((mechanism, shape))
            if z is None:
                z = self.reuse[(mechanism, shape)] = self._fresh(mechanism, shape)
                z.setflags(write=False)
            return z
        return self._fresh(mechanism, shape)

    def _fresh(self, mechanism: str, shape: tuple[int, ...]) -> np.ndarray:
        if mechanism == "laplace":
            return self.rng.laplace(size=shape)
        return self.rng.standard_normal(size=shape)

    def _probe(self, state: Any, t: int, mean: Mapping[str, np.ndarray]) -> str | None:
        alg, problem = self.inner.algorithm, self.inner.problem
        lead = next(iter(state.values())).shape[:2] if isinstance(state, Mapping) else np.shape(state)[:2]
        z = _draws(alg, t, tuple(lead), self._draw)
        try:
            probed = alg.message(_state_copy(state), t, {k: v.copy() for k, v in z.items()},
                                 np.arange(problem.num_agents), problem)
        except Exception as exc:  # a rule that cannot take the noise it is given
            self._other_use = _raised(t, exc, self.label)
            return self._other_use

        def doubled(name: str) -> np.ndarray | None:  # the message moved by 2 z, less without (None: it raised)
            try:
                out = alg.message(_state_copy(state), t, {k: 2.0 * v for k, v in z.items()},
                                  np.arange(problem.num_agents), problem)
                return np.asarray(out[name], dtype=float) - np.asarray(mean[name], dtype=float)
            except Exception:  # noqa: BLE001 - then the factor is not shown to be the draw's own: no rescaled draw
                return None

        return self._compare(t, mean, probed, z, doubled)

    def _compare(self, t: int, mean: Mapping[str, np.ndarray], probed: Mapping[str, Any],
                 z: Mapping[str, np.ndarray], doubled: Callable[[str], np.ndarray | None] | None = None
                 ) -> str | None:
        """The finding of one probe: the R step's ``probed`` message with standard noise ``z`` against ``mean``
        (with zero noise), or ``None``.

        A channel whose release is a rescaled draw (:func:`rescaled_draw`, ``doubled(channel)`` its message moved
        by ``2 z``) is named, and the later channels are compared too: the first release that is no rescaled draw
        is kept in ``_other_use``."""
        self._other_use = None
        if set(probed) != set(mean):
            self._other_use = (f"round {t}: the R step sends channels {sorted(probed)} with noise but {sorted(mean)} "
                               f"without ({self.label})")
            return self._other_use
        first: str | None = None
        for name in mean:
            mu = np.asarray(mean[name], dtype=float)
            got = np.asarray(probed[name], dtype=float)
            ch = self.noise.get(name)
            scale = 0.0 if ch is None else ch.scale(t)
            if got.shape != mu.shape:
                self._other_use = f"round {t}, channel {name!r}: the R step's message has shape {got.shape} with " \
                                  f"noise, {mu.shape} without ({self.label})"
                return first or self._other_use
            diff = got - mu
            if scale > 0:
                zz = z[name]
                if zz.shape != diff.shape:
                    self._other_use = (f"round {t}, channel {name!r}: the declared noise has shape {zz.shape[2:]} "
                                       f"per agent but the message {diff.shape[2:]}: a release is not its noise-free "
                                       f"value plus the noise ({self.label})")
                    return first or self._other_use
                sign = self.signs.get(name)
                if sign is None:
                    sign = self.signs[name] = -1.0 if float(np.nansum(diff * zz)) < 0 else 1.0  # the majority's
                expected = sign * scale * zz
                what = f"{'-' if sign < 0 else ''}{scale:.6g} z"
            else:
                expected = np.zeros_like(diff)
                what = "0 (the channel is noise-free)" if ch is None or ch.mechanism is None else \
                    "0 (the round is released with scale 0)"
            if _within(diff, expected, mu, got):
                continue
            tol = ADDITIVITY_RTOL * (np.abs(mu) + np.abs(got) + 1.0)
            off = ~(np.abs(diff - expected) <= tol)  # NaN counts as off
            if off.any():
                flat = off.reshape(off.shape[0], off.shape[1], -1)  # its first entry off (argwhere's first row)
                r, i, k = (int(v) for v in np.unravel_index(int(np.argmax(flat)), flat.shape))
                noise_value = f"z = {_at(z[name], r, i, k):.6g}" if name in z and z[name].shape == diff.shape \
                    else "noise"
                found = (f"round {t}, channel {name!r}, agent {i}, coordinate {k} (run {r}, {self.label}): the R step "
                         f"with standard {noise_value} moves the message by {_at(diff, r, i, k):.6g}, not by {what} "
                         f"= {_at(expected, r, i, k):.6g}")
                if first is None:
                    first, self.finding_run = found, r
                again = None if doubled is None else (lambda name=name: doubled(name))
                factor = _rescaled(diff, z[name], tol, again) if scale > 0 else None
                if factor is None:
                    self._other_use = found
                    return first
                if self.moving_scale is None and factor == "run":  # no one factor per agent: a factor per run
                    self.moving_scale = found
        return first


def rescaled_draw(diff: np.ndarray, z: np.ndarray, tol: np.ndarray,
                  doubled: Callable[[], np.ndarray | None] | None = None) -> bool:
    """Whether ``diff`` (a probe's message with noise less without, ``(R, N, ...)``) is ``c z`` for one factor
    ``c`` per agent across runs and coordinates, or 0 (the draw dropped), within ``tol`` (the probe's tolerance);
    or else, for releases of several coordinates that move all together or not at all, ``c z`` for one factor per
    run and agent that is not the draw's (``doubled()``, the message moved by ``2 z`` less without, is ``2 diff``).

    Such a release carries the declared family's noise at another scale (``c`` for the declared ``s``; a scale
    that moves with the state is one scale per release), or none: the conformance tests measure that scale, or the
    atom of dropped draws. Any other use of the draw (rounded, clipped, transformed to another law, a factor that
    moves with the draw such as its norm) is not the declared family at all. (A release that moves on one
    coordinate only fits any factor of its own, as a rounded small noise does: it is read with its agent's.)

    Example:
        >>> z, tol = np.arange(1.0, 7.0).reshape(3, 1, 2), np.full((3, 1, 2), 1e-9)
        >>> rescaled_draw(0.5 * z, z, tol), rescaled_draw(np.round(0.3 * z), z, tol)
        (True, False)
        >>> rescaled_draw(np.where(z > 4, 0.0, z), z, tol)  # draws dropped on some releases
        True
        >>> by_state = np.array([0.2, 0.5, 0.9])[:, None, None] * z
        >>> rescaled_draw(by_state, z, tol, lambda: 2 * by_state), rescaled_draw(by_state, z, tol)
        (True, False)
        >>> by_norm = z / np.linalg.norm(z, axis=2, keepdims=True)  # 2 z moves it by the same
        >>> rescaled_draw(by_norm, z, tol, lambda: by_norm)
        False
        >>> rescaled_draw(np.array([[[0.0, 0.3]], [[0.0, 2.0]], [[5.0, 6.0]]]), z, tol, lambda: None)  # one moves
        False
    """
    return _rescaled(diff, z, tol, doubled) is not None


def _rescaled(diff: np.ndarray, z: np.ndarray, tol: np.ndarray,
              doubled: Callable[[], np.ndarray | None] | None = None) -> str | None:
    """:func:`rescaled_draw`, saying which factor fits: ``"agent"`` (one factor per agent), ``"run"`` (one factor per
    run and agent, not the draw's; only with ``doubled``) or ``None`` (no rescaled draw).

    Example:
        >>> z, tol = np.arange(1.0, 7.0).reshape(3, 1, 2), np.full((3, 1, 2), 1e-9)
        >>> by_state = np.array([0.2, 0.5, 0.9])[:, None, None] * z
        >>> _rescaled(0.5 * z, z, tol), _rescaled(by_state, z, tol, lambda: 2 * by_state), _rescaled(by_state, z, tol)
        ('agent', 'run', None)
    """
    flat_d, flat_z = diff.reshape(diff.shape[0], diff.shape[1], -1), z.reshape(z.shape[0], z.shape[1], -1)
    flat_t = tol.reshape(flat_d.shape)
    kept = np.abs(flat_d) > flat_t
    zk = np.where(kept, flat_z, 0.0)

    def one_factor(axes: tuple[int, ...]) -> bool:
        zz = (zk * zk).sum(axis=axes, keepdims=True)
        c = np.divide((flat_d * zk).sum(axis=axes, keepdims=True), zz, out=np.zeros_like(zz), where=zz > 0)
        return bool(((np.abs(flat_d - c * flat_z) <= flat_t) | ~kept).all())

    if one_factor((0, 2)):
        return "agent"
    moved = kept.sum(axis=2)
    if doubled is None or flat_d.shape[2] < 2 or not ((moved == 0) | (moved == flat_d.shape[2])).all() \
            or not one_factor((2,)):
        return None
    twice = doubled()
    if twice is None or np.shape(twice) != diff.shape:
        return None
    gap = np.abs(np.asarray(twice, dtype=float) - 2.0 * diff)  # the factor is the same at 2 z: not the draw's
    return "run" if bool((gap <= 3.0 * tol + ADDITIVITY_RTOL * np.abs(twice)).all()) else None


UNMODELLED_KEPT = ("blackbox", "dependence")
"""Witness kinds that certify from the engine's outputs alone, whatever law the released noise follows (the black-box
audit, the dependence audit's cancelling events): :func:`set_aside_not_additive` keeps them."""


def set_aside_not_additive(evidence: list[Any], nonlinear: str | None) -> list[Any]:
    """``evidence`` with every witness that reads the declared noise's law (an under-noised conformance test, an
    exact replay loss, a shift or a constructed loss of noise-free values) set aside as a doubt when the rule does
    not release the declared family at any scale (``nonlinear``: :attr:`AdditivityProbe.nonlinear`).

    A rule that rounds its noisy value (post-processing, as private as the value), adds rounded, clipped,
    uniform or Gaussian noise where Laplace noise is declared, releases a law those methods do not model: the
    one-sided conformance test rejects a discrete law for its atoms, the replay's densities and the noise-free
    values (the R step at zero noise) are not the mechanism's. A correct claim got ``violation`` from them. Only
    :data:`UNMODELLED_KEPT` witnesses stay; nothing can pass (the doubt).

    Args:
        evidence: every method's evidence, in order.
        nonlinear: the probe's sentence naming the release, or ``None`` (the list is returned as is).

    Returns:
        The same list, or a copy with those witnesses set aside.
    """
    if nonlinear is None:
        return evidence
    return set_aside_witnesses(
        evidence, lambda e: e.witness.get("kind") not in UNMODELLED_KEPT,
        lambda e: (f"{e.method}: its witness ({e.witness.get('kind')}) assumes the declared noise's law, but the rule "
                   f"does not release the declared family at any scale ({nonlinear}): this noise is not modelled, "
                   "the witness is set aside"))


def _within(diff: np.ndarray, expected: np.ndarray, mu: np.ndarray, got: np.ndarray) -> bool:
    """Whether ``|diff - expected| <= ADDITIVITY_RTOL (|mu| + |got| + 1)`` holds everywhere (NaN: it does not).

    The same operations in the same order as the comparison that names the first entry off, computed in
    place (the probe runs on every round of every run under both problems; the entries are looked up only
    when one is off). The tolerance is at least ``ADDITIVITY_RTOL`` (rounding is monotone), so gaps all within
    that hold without it.

    Example:
        >>> one = np.ones((2, 2))
        >>> _within(one, one, one, one), _within(one, 2 * one, one, one), _within(np.nan * one, one, one, one)
        (True, False, False)
    """
    gap = np.subtract(diff, expected)
    np.abs(gap, out=gap)
    if gap.size and float(gap.max()) <= ADDITIVITY_RTOL:  # (a NaN gap's max is NaN: the full comparison)
        return True
    tol = np.abs(mu)
    tol += np.abs(got)
    tol += 1.0
    tol *= ADDITIVITY_RTOL
    return bool(np.less_equal(gap, tol, out=np.empty(gap.shape, dtype=bool)).all())


def _state_copy(state: Any) -> Any:
    """A copy of a rule's state for the probe: ``copy.deepcopy``, with a dict of numeric arrays copied array by
    array (the usual state, the same copy in fewer steps; an array of objects is deep-copied).

    Example:
        >>> state = {"x": np.zeros(2)}
        >>> copied = _state_copy(state)
        >>> copied["x"][0] = 1.0
        >>> float(state["x"][0])
        0.0
    """
    if type(state) is dict and all(type(v) is np.ndarray and not v.dtype.hasobject for v in state.values()):
        return {k: v.copy() for k, v in state.items()}
    return copy.deepcopy(state)


def _draws(alg: Any, t: int, lead: tuple[int, ...], draw: Any) -> dict[str, np.ndarray]:
    """One probe's standard noise: per noisy channel of ``alg`` (in its order), ``draw(mechanism, lead + (d_t,))``."""
    return {c.name: draw(c.mechanism, tuple(lead) + (int(alg.noise(t, c.name).dimension),))
            for c in alg.noisy_channels()}


def _raised(t: int, exc: Exception, label: str) -> str:
    """The finding of an R step that raised on standard noise."""
    return f"round {t}: the R step raised {type(exc).__name__} on standard noise ({label}): {exc}"[:400]


def _at(a: np.ndarray, r: int, i: int, k: int) -> float:
    """Entry ``(run r, agent i, flat coordinate k)`` of an ``(R, N, ...)`` array."""
    return float(a.reshape(a.shape[0], a.shape[1], -1)[r, i, k])


def probe_nonlinear(probes: tuple[AdditivityProbe, ...]) -> str | None:
    """The first probe's :attr:`~AdditivityProbe.nonlinear` finding, or ``None``.

    Example:
        >>> probe_nonlinear(())
    """
    return next((p.nonlinear for p in probes if p.nonlinear is not None), None)


def probe_moving_scale(probes: tuple[AdditivityProbe, ...]) -> str | None:
    """The first probe's :attr:`~AdditivityProbe.moving_scale` finding, or ``None``.

    Example:
        >>> probe_moving_scale(())
    """
    return next((p.moving_scale for p in probes if p.moving_scale is not None), None)


def probe_finding(probes: tuple[AdditivityProbe, ...]) -> str | None:
    """The first failed probe's sentence, or ``None``.

    Example:
        >>> probe_finding(())
    """
    return next((p.finding for p in probes if p.finding is not None), None)


def probe_wrapper(probes: list[AdditivityProbe], noise: Mapping[str, ChannelNoise], rng: np.random.Generator,
                  signs: dict[str, float], prefix: str = "", reuse: dict[Any, np.ndarray] | None = None) -> Any:
    """The ``wrap`` of :func:`~asyncdp.privacy.behavior.replay_runs` that probes each replay rule, appending its
    :class:`AdditivityProbe` to ``probes`` (labelled ``prefix`` + the replay's label; ``reuse``: see
    :class:`AdditivityProbe`).

    Example:
        >>> probes = []
        >>> wrap = probe_wrapper(probes, {}, np.random.default_rng(0), {})
        >>> wrap(object(), "scenario").label, len(probes)
        ('scenario', 1)
    """
    def wrap(rule: Any, label: str) -> AdditivityProbe:
        probes.append(AdditivityProbe(rule, noise, rng, signs, prefix + label, reuse))
        return probes[-1]

    return wrap


def probe_pairs(runs: Any, pairs: Sequence[tuple[str, Any, Any]], algorithm: Any, seed: int) -> str | None:
    """Probe the R step on the states of ``runs`` replayed under each scenario pair, e.g. the worst-case search's
    candidates: the first finding, naming the pair, or ``None``.

    A rule may use its noise correctly for the user's costs and not for others of the adjacency class (say,
    only when its gradient points along one axis): the realized replay never visits those costs, the
    constructed transcripts of the worst-case search read only noise-free values. Each pair's two problems
    are replayed on the user's engine runs (states every problem reaches with positive probability, since the
    declared noise has full support), with one generator
    ``SeedSequence(seed, spawn_key=(ADDITIVITY_STREAM, 1))`` for all of them.

    Args:
        runs: engine runs (:class:`~asyncdp.privacy.behavior.EngineRuns`), e.g. a few of the user's.
        pairs: ``(label, scenario, adjacent)`` triples (the label names the pair in the finding; ``adjacent``
            may be ``None``: ``scenario``'s problem alone is probed; with ``adjacent`` ``None``, ``scenario`` may
            be a ``asyncdp.privacy.constructed.CandidateCosts``, whose first scenario is probed, built only
            if the probe needs more than its cost family).
        algorithm: the rule, bound to the user's problem (every candidate keeps it).
        seed: the check's seed.

    Returns:
        The first finding (naming the pair), or ``None``.

    Raises:
        AccountingError: a pair's runs cannot be replayed (passed through).

    The scenarios after the first pair (``adjacent`` ``None``, at least two of them) are replayed in one stacked
    replay (``_probe_stacked``), with the same draws; so are the first pair's two problems with them. Their
    own replay also computes the pair's losses, which the stacked one does not: those fail only on noise-free
    releases (one equal to neither problem's value, or a run that matches only one problem in one round and only
    the other in another), which the stacked replay checks with the replay's own functions, or on infinite
    log-densities, which cannot occur when every message and noise-free value is at most ``_PAIRED_BOUND``
    in magnitude and every positive noise scale at least ``_PAIRED_FLOOR`` (checked too); where a check
    fails, the pair is replayed on its own, which decides.

    Example:
        >>> from asyncdp.privacy.behavior import run_engine
        >>> from asyncdp.privacy.context import small_example
        >>> pair, ctx = small_example(runs=4)
        >>> probe_pairs(run_engine(pair.scenario, 4), [("user", pair.scenario, pair.adjacent)], ctx.algorithm,
        ...             0) is None
        True
    """
    from .behavior import declared_noise, replay_runs

    if not pairs:
        return None
    rng = np.random.default_rng(np.random.SeedSequence(int(seed), spawn_key=(ADDITIVITY_STREAM, 1)))
    signs: dict[str, float] = {}
    rest = len(pairs) > 2 and all(b is None for _, _, b in pairs[1:])
    name, p, q = pairs[0]
    if rest and q is not None and not hasattr(p, "scenarios"):
        kept = rng.bit_generator.state
        try:  # the first pair's two problems too, drawn round by round as their replay draws
            return _probe_stacked(runs, [(f"pair {name}, its scenario", p), (f"pair {name}, its adjacent", q)] +
                                  [(f"pair {n}, its scenario", c) for n, c, _ in pairs[1:]], algorithm, rng, signs,
                                  paired=True)
        except Exception:  # noqa: BLE001 - as below (the first pair's own replay raises what it raises)
            rng.bit_generator.state = kept
            signs.clear()
    for at, (name, p, q) in enumerate(pairs):
        if at == 1 and rest:
            kept, kept_signs = rng.bit_generator.state, dict(signs)
            try:  # the other scenarios in one stacked replay, with the same draws
                return _probe_stacked(runs, [(f"pair {n}, its scenario", c) for n, c, _ in pairs[1:]], algorithm,
                                      rng, signs)
            except Exception:  # noqa: BLE001 - one at a time (as drawn, raising what they raise)
                rng.bit_generator.state = kept
                signs.clear()
                signs.update(kept_signs)
        if hasattr(p, "scenarios"):  # a CandidateCosts: its first scenario
            p = p.scenarios()[0]
        noise = declared_noise(algorithm, p.horizon)
        probes: list[AdditivityProbe] = []

        replay_runs(runs, p, q, algorithm=algorithm,  # (q None: p's problem alone)
                    wrap=probe_wrapper(probes, noise, rng, signs, f"pair {name}, its "))
        found = probe_finding(tuple(probes))
        if found is not None:
            return found
    return None


def _probe_stacked(runs: Any, blocks: Sequence[tuple[str, Any]], algorithm: Any, rng: np.random.Generator,
                   signs: dict[str, float], paired: bool = False) -> str | None:
    """:func:`probe_pairs` of scenarios, each one's problem alone (``(label, scenario)``), their replays stacked
    into one.

    Each scenario's runs are a block of one replay (:class:`~asyncdp.privacy.stacked.Stacked`: each step of
    the algorithm taken once for every scenario, each block's values its own replay's), and each round's R step
    is probed once on the stacked state. What is compared, and with which noise, is what the replays one after
    another compare: each block gets the standard noise its own replay would draw from ``rng`` (drawn here in
    that order: scenario by scenario, round by round, channel by channel), and each round's blocks are
    compared in the scenarios' order with the shared ``signs`` (every channel's sign is fixed by the first
    scenario's first probe of it, as one after another). The first finding in the scenarios' order is that of
    the replays one after another: a scenario's probe only stops drawing after its finding, and no later
    scenario is reached then.

    ``paired``: the first two blocks are one pair's two problems, which one replay of both (``replay_runs``
    with ``adjacent``) probes round by round: their draws alternate so (round 1 of the first, of the second,
    round 2 ...), before the other scenarios'. A first problem's finding stops only its own draws, and is the
    finding; the second's draws are the replay's as long as the first has none. A noise-free release of the
    recorded runs that differs from either problem's noise-free value raises ``ValueError`` (the pair's own
    replay computes its losses: :func:`probe_pairs`).

    Raises:
        Exception: anything the stacked replay or probe raises (e.g. scenarios that do not share the domain
            or the initial points, a state not split by runs, a rule that raises): the caller then replays the
            scenarios one at a time, as drawn.
    """
    from accounting.replay import check_point_masses
    from accounting.scheduled_replay import scheduled_replay

    from .behavior import declared_noise
    from .stack_runs import Tiled
    from .stacked import Stacked

    from .constructed import CandidateCosts

    if paired and len(blocks) < 2:
        raise ValueError("a paired probe needs both problems of its first pair")
    bases: dict[int, tuple[Any, Any, np.ndarray]] = {}  # by identity: the candidates of a search share their base

    def parts(p: Any) -> tuple[Any, Any, np.ndarray, int]:
        """``(costs, domain, x0, horizon)`` of a scenario or of a CandidateCosts' first scenario (not built)."""
        base, costs = (p.base, p.costs) if isinstance(p, CandidateCosts) else (p, p.problem.costs)
        got = bases.get(id(base))
        if got is None or got[0] is not base:
            got = bases[id(base)] = (base, base.problem.domain, base.initial_points())
        return costs, got[1], got[2], base.horizon

    def problems() -> list[Any]:
        return [(p.scenarios()[0] if isinstance(p, CandidateCosts) else p).problem for _, p in blocks]

    got = [parts(p) for _, p in blocks]
    _, domain, x0, horizon = got[0]
    equal: dict[int, bool] = {}  # np.array_equal(x, x0), once per array (kept alive by ``got``)
    for _, d, x, h in got[1:]:
        if id(x) not in equal:
            equal[id(x)] = bool(np.array_equal(x, x0))
        if d is not domain or h != horizon or not equal[id(x)]:
            raise ValueError("the scenarios do not share the domain, horizon and initial points")
    noise = declared_noise(algorithm, horizon)
    size, count = runs.runs, len(got)
    rule = Stacked(algorithm, [g[0] for g in got], domain, problems, x0, size)
    probe = _StackedProbe(rule, [AdditivityProbe(None, noise, rng, signs, label) for label, _ in blocks], size,
                          horizon, paired)
    if paired:  # the pair's losses cannot fail where these hold (probe_pairs), checked before and during the replay
        if any(ch.scale(t) > 0 and ch.scale(t) < _PAIRED_FLOOR for ch in noise.values() for t in range(1, horizon + 1)):
            raise ValueError("a noise scale below the paired probe's floor")
        if not all(_bounded(m) for m in runs.messages.values()):
            raise ValueError("a message beyond the paired probe's bound")
        probe.recorded, probe.unicast = runs.messages, runs.unicast
        probe.points = np.zeros((size, horizon))
    messages = {c: np.concatenate([m] * count) for c, m in runs.messages.items()}
    schedules: Any = Tiled(runs.schedules, count) if hasattr(runs.schedules, "dense_runs") else \
        list(runs.schedules) * count
    scheduled_replay(messages, schedules, noise, probe, None, unicast=runs.unicast)
    if probe.points is not None:
        check_point_masses(probe.points, "run")  # what the pair's own replay checks last
    return probe_finding(tuple(probe.probes))


_PAIRED_BOUND = 1e60
"""The paired probe (:func:`probe_pairs`) stacks a pair's two problems only while every recorded message and noise-free
value is at most this in magnitude (with every positive scale at least :data:`_PAIRED_FLOOR`, a release's
log-density, a sum of at most ``1e60`` terms each at most ``4e240``, is finite)."""

_PAIRED_FLOOR = 1e-60
"""The smallest positive noise scale with which the paired probe stacks a pair's two problems."""


def _bounded(a: np.ndarray) -> bool:
    """Whether every entry of ``a`` is NaN or at most :data:`_PAIRED_BOUND` in magnitude.

    Example:
        >>> _bounded(np.array([np.nan, -1e59])), _bounded(np.array([np.inf]))
        (True, False)
    """
    return bool((np.isnan(a) | (np.abs(a) <= _PAIRED_BOUND)).all())


class _StackedProbe:
    """The replay rule of :func:`_probe_stacked`: a :class:`~asyncdp.privacy.stacked.Stacked` rule whose R step is
    probed once per round for every block (block ``k``: ``probes[k]``, on runs ``k size .. (k + 1) size - 1``;
    ``paired``: the first two blocks' draws alternate round by round)."""

    def __init__(self, rule: Any, probes: list[AdditivityProbe], size: int, horizon: int, paired: bool = False
                 ) -> None:
        self.rule, self.probes, self.size, self.horizon, self.paired = rule, probes, size, horizon, paired
        self.z: list[dict[int, dict[str, np.ndarray]]] | None = None
        self.lead: tuple[int, ...] | None = None
        self.recorded: Mapping[str, np.ndarray] | None = None  # paired: the runs' messages (_pair_losses)
        self.unicast = False
        self.points: np.ndarray | None = None  # paired: the pair's noise-free rounds' log-ratios per run and round

    def initial_state(self, runs: int) -> Any:
        return self.rule.initial_state(runs)

    def next_state(self, state: Any, mixed: Mapping[str, np.ndarray], t: int) -> Any:
        return self.rule.next_state(state, mixed, t)

    def message_means(self, state: Any, t: int) -> Mapping[str, np.ndarray]:
        mean = self.rule.message_means(state, t)
        if self.recorded is not None:
            self._pair_losses(mean, t)
        if any(p.finding is None for p in self.probes):
            self._probe(state, t, mean)
        return mean

    def _pair_losses(self, mean: Mapping[str, np.ndarray], t: int) -> None:
        """Round ``t`` of the checks that stand for the paired problems' losses (:func:`probe_pairs`): their noise-free
        values bounded (else ``ValueError``), and each noise-free release's log-ratio under them
        (``accounting.replay_densities._point_mass_ratio``, which raises what the pair's own replay raises there)
        added to :attr:`points`."""
        from accounting.replay_densities import _point_mass_ratio

        assert self.recorded is not None and self.points is not None
        n, noise = self.size, self.probes[0].noise
        for name, y in self.recorded.items():
            means = np.asarray(mean[name], dtype=float)
            mu, mu_p = means[:n], means[n:2 * n]
            if not (_bounded(mu) and _bounded(mu_p)):  # (a NaN value gives a NaN loss there, never an infinite one)
                raise ValueError(f"round {t}, channel {name!r}: a noise-free value beyond the paired probe's bound")
            if noise[name].scale(t) > 0:
                continue
            yt = y[:, t - 1]
            self.points[:, t - 1] += _point_mass_ratio(yt, mu[:, :, None, :] if self.unicast else mu,
                                                       mu_p[:, :, None, :] if self.unicast else mu_p, ~np.isnan(yt), t)

    def _blocks(self, state: Any) -> list[Any]:
        kind, inner = state
        return self.rule._split(inner) if kind == "one" else inner

    def _noise(self, state: Any, t: int) -> list[dict[str, np.ndarray]]:
        """Each block's standard noise of round ``t`` (every block's rounds drawn on the first call, in the order
        of the replays one after another)."""
        alg, n = self.rule.algorithm, self.size
        first = self._blocks(state)[0]
        lead = tuple(next(iter(first.values())).shape[:2]) if isinstance(first, Mapping) else np.shape(first)[:2]
        if self.lead is None:
            self.lead = lead
            draw = self.probes[0]._draw
            dims = {r: [(c, alg.noise(r, c.name).dimension) for c in alg.noisy_channels()]
                    for r in range(1, self.horizon + 1)}  # (the channels and dimensions each round's draws ask)
            mechanisms = {c.mechanism for r in dims for c, _ in dims[r]}
            # every draw in the order of the replays one after another: (block, round, channel, mechanism, shape)
            first = 2 if self.paired else 0
            order = [(k, r, c.name, c.mechanism, lead + (int(d),)) for r in dims for k in range(first)
                     for c, d in dims[r]]
            order += [(k, r, c.name, c.mechanism, lead + (int(d),)) for k in range(first, len(self.probes))
                      for r in dims for c, d in dims[r]]
            self.z = [{r: {} for r in dims} for _ in self.probes]
            if len(mechanisms) == 1:  # one generator call: the same stream as one call per draw
                sizes = [math.prod(shape) for *_, shape in order]  # (the shapes are tuples of ints)
                ends = np.cumsum(sizes).tolist()
                flat = draw(next(iter(mechanisms)), (ends[-1] if ends else 0,))
                for (k, r, name, _, shape), end, size in zip(order, ends, sizes):
                    self.z[k][r][name] = flat[end - size:end].reshape(shape)
            else:
                for k, r, name, mechanism, shape in order:
                    self.z[k][r][name] = draw(mechanism, shape)
        if lead != self.lead or lead[:1] != (n,):
            raise ValueError("the state's lead axes changed between rounds")
        assert self.z is not None
        return [z[t] for z in self.z]

    def _probe(self, state: Any, t: int, mean: Mapping[str, np.ndarray]) -> None:
        alg, n, count = self.rule.algorithm, self.size, len(self.probes)
        z = self._noise(state, t)
        agents = np.arange(self.rule.one.problem.num_agents)
        probed: list[Any] = []
        kind, inner = state
        try:
            if kind != "one":
                raise ValueError("the rules run block by block")
            stacked_z = {c: np.concatenate([zk[c] for zk in z]) for c in z[0]}
            whole = alg.message(copy.deepcopy(inner), t, stacked_z, agents, self.rule.one.problem)
            if set(whole) != set(mean):
                raise ValueError("another set of channels")
            arrays = {c: np.asarray(v, dtype=float) for c, v in whole.items()}
            if any(a.ndim < 1 or a.shape[0] != n * count for a in arrays.values()):
                raise ValueError("a message not split by runs")
            if self._agree(t, mean, arrays, stacked_z):  # what every block's comparison finds: nothing
                return
            probed = [{c: a[k * n:(k + 1) * n] for c, a in arrays.items()} for k in range(count)]
        except Exception:  # noqa: BLE001 - each block's R step with its own problem (raising what it raises)
            problems = self.rule.blocks.rules
            probed = []
            for k, block in enumerate(self._blocks(state)):
                try:
                    probed.append(alg.message(copy.deepcopy(block), t, {c: v.copy() for c, v in z[k].items()},
                                              agents, problems[k].problem))
                except Exception as exc:  # noqa: BLE001 - a rule that cannot take the noise it is given
                    probed.append(exc)
        for k, p in enumerate(self.probes):
            if p.finding is not None:
                continue
            if isinstance(probed[k], Exception):
                p.finding = _raised(t, probed[k], p.label)
                continue
            mine = {c: np.asarray(m, dtype=float)[k * n:(k + 1) * n] for c, m in mean.items()}
            p.finding = p._compare(t, mine, probed[k], z[k])

    def _agree(self, t: int, mean: Mapping[str, np.ndarray], probed: Mapping[str, np.ndarray],
               z: Mapping[str, np.ndarray]) -> bool:
        """Whether every block's comparison (:meth:`AdditivityProbe._compare`) would find nothing: the same
        elementwise test on the stacked arrays, when every noisy channel's sign is already fixed (a comparison
        that would fix one, or any mismatch, is left to the blocks' own comparisons, in order)."""
        first = self.probes[0]
        for name in mean:
            mu = np.asarray(mean[name], dtype=float)
            got = probed[name]
            ch = first.noise.get(name)
            scale = 0.0 if ch is None else ch.scale(t)
            if got.shape != mu.shape:
                return False
            diff = got - mu
            if scale > 0:
                sign = first.signs.get(name)
                if sign is None or name not in z or z[name].shape != diff.shape:
                    return False
                expected = sign * scale * z[name]
            else:
                expected = np.zeros_like(diff)
            if not _within(diff, expected, mu, got):
                return False
        return True
