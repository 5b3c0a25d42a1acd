"""Noise that is reused across rounds (or agents) is named as dependence, never passed; when the reused
noise cancels, an audit of the engine's outputs refutes the claim.

The rules below are ``Huang2015`` (Huang, Mitra and Vaidya, ICDCN 2015) with the noise of eq. (5) reused:
``ReusesItsFirstDraw`` keeps each agent's round-1 standard draw in its state and releases it again, scaled
by that round's ``M_t``, every round; ``SharesOneDraw`` gives every agent agent 0's draw of the round. Each
release's noise is still Laplace(``M_t``), exactly as declared: only the independence the declarations
state is broken.
"""

from __future__ import annotations

import dataclasses
import json
import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from asyncdp.papers.huang2015.rule import Huang2015
from asyncdp.papers.showkatbakhsh.rule import Showkatbakhsh
from asyncdp.privacy import check_privacy
from asyncdp.privacy.context import small_example
from asyncdp.privacy.dependence import cancelling_audit, noise_dependence
from asyncdp.privacy.conformance import check_conformance


def _load_fixture():
    """``tests/fixtures/noise_reuse.py``, imported as a module (its rule classes pickle by that name)."""
    import importlib.util
    import sys

    name = "asyncdp_tests_noise_reuse"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, NOISE_REUSE_SCRIPT)
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


NOISE_REUSE_SCRIPT = Path(__file__).resolve().parents[2] / "fixtures" / "noise_reuse.py"
_fixture = _load_fixture()
_KeepsItsFirstDraw = _fixture.KeepsItsFirstDraw
ReusesItsFirstDraw = _fixture.ReusesItsFirstDraw


@dataclass(frozen=True)
class GaussianReuse(_KeepsItsFirstDraw, Showkatbakhsh):
    """The correctly calibrated two-stage Gaussian rule of Showkatbakhsh, Karakus and Diggavi (arXiv 2019),
    claim (1, 1e-3), releasing its first draw every round scaled by that round's declared std."""


@dataclass(frozen=True)
class SharesOneDraw(Huang2015):
    """Huang2015 whose agents all release agent 0's standard draw of the round (batch engine: all agents at once)."""

    def message(self, state, t, noise, agents, problem):
        w = np.asarray(noise["y"], dtype=float)
        if w.ndim >= 2:
            w = np.broadcast_to(w[..., :1, :], w.shape)
        return super().message(state, t, {"y": w}, agents, problem)


def _pair(rule):
    pair, _ = small_example()
    sc = pair.scenario
    alg = rule(**{f.name: getattr(sc.algorithm, f.name) for f in dataclasses.fields(Huang2015)})
    return sc.replace(algorithm=alg), pair.adjacent.replace(algorithm=alg)


def test_independent_laplace_noise_is_not_called_dependent():
    rng = np.random.default_rng(1)
    res = {"y": rng.laplace(size=(1000, 10, 4, 2))}
    assert noise_dependence(res, {"y": np.ones(10)}, 0.0125) is None


def test_one_draw_reused_in_every_round_is_found_with_its_rounds_and_agent():
    rng = np.random.default_rng(2)
    res = rng.laplace(size=(500, 6, 3, 2))
    res[:, 3] = res[:, 2]  # agent draws reused from round 3 to round 4
    out = noise_dependence({"y": res}, {"y": np.ones(6)}, 0.0125)
    assert out["across"] == "rounds" and out["rounds"] == [3, 4] and out["correlation"] > 0.99


def test_a_draw_shared_by_two_agents_is_found():
    rng = np.random.default_rng(3)
    res = rng.normal(size=(500, 4, 3, 1))
    res[:, 1, 2] = -res[:, 1, 1]  # noise that cancels between agents 1 and 2 in round 2
    out = noise_dependence({"y": res}, {"y": np.ones(4)}, 0.0125)
    assert out["across"] == "agents" and out["agents"] == [1, 2] and out["rounds"] == [2, 2]
    assert out["correlation"] < -0.99


def test_the_check_names_reused_noise_in_its_doubt_and_never_passes():
    pair, ctx = small_example(runs=300)
    replay = ctx.realized_replay()
    res = np.array(replay.residuals["y"])
    res[:, 1:] = res[:, :1]  # every round releases the first round's draw again (the means are unchanged)
    ctx.cache["replay"] = dataclasses.replace(replay, residuals={"y": res})
    ctx.cache.pop(("exact draws", 0))  # the replay compared the true residuals with their draws: compare the edited ones
    e = check_conformance(pair, ctx)
    assert e.doubt is not None and "correlated across rounds" in e.doubt
    # no pooled conformance witness under dependence (its test assumes independent draws); a witness is the
    # cancelling audit's, naming the two releases (here the edited scenario runs no longer match the adjacent ones)
    assert e.witness is None or (e.witness["kind"] == "dependence" and len(e.witness["rounds"]) == 2)


@pytest.mark.parametrize("rule, across", [(ReusesItsFirstDraw, "rounds"), (SharesOneDraw, "agents")])
def test_an_engine_rule_that_reuses_its_noise_is_refuted_by_the_cancelling_audit(rule, across):
    sc, adj = _pair(rule)
    report = check_privacy(sc, adj, runs=400, search_examples=0)
    assert report.verdict == "violation"
    w = report.witness
    assert w["kind"] == "dependence" and w["across"] == across, w
    assert w["epsilon_lower_bound"] > report.epsilon_claimed
    assert 0 < w["confidence"] < 1 and w["method"].startswith("cancelling audit")
    ta, tb = w["rounds"]
    ia, ib = w["agents"]
    if across == "rounds":
        assert tb == ta + 1 and ia == ib == 0  # agent 0 is the changed agent
    else:
        assert ta == tb and 0 in (ia, ib) and ia != ib
    assert all(v is not None for v in w.values()), w
    table = report.to_table()
    assert "cancelling audit" in table and "correlated across " + across in table
    data = json.loads(json.dumps(report.to_dict()))
    assert data["verdict"] == "violation" and data["witness"]["kind"] == "dependence"
    assert all(v is not None for v in data["witness"].values())


def test_a_gaussian_rule_that_reuses_its_noise_is_refuted_at_its_delta_claim():
    sc, adj = _gaussian_example().make(1e-3, None, GaussianReuse)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)  # the audit skips noise-free rounds quietly
        report = check_privacy(sc, adj, runs=400, search_examples=0)
    assert report.verdict == "violation" and report.witness["kind"] == "dependence", report.reasons
    w = report.witness
    assert w["across"] == "rounds" and w["agents"] == [0, 0] and w["delta_allowed"] == 1e-3
    assert w["delta_lower_bound"] > 1e-3 and w["method"].startswith("cancelling audit")


@pytest.mark.parametrize("timing", ["lockstep", "async"])
def test_reused_noise_on_the_simpy_engine_is_refuted_too(timing):
    from asyncdp import Async

    sc, adj = _pair(ReusesItsFirstDraw)
    if timing == "async":  # every agent on its own Poisson clock: the audited releases are what each run released
        sc, adj = sc.replace(timing=Async(rate=1.0)), adj.replace(timing=Async(rate=1.0))
    report = check_privacy(sc, adj, runs=200, search_examples=0, engine="simpy")
    assert report.verdict == "violation" and report.witness["kind"] == "dependence"
    assert report.witness["engine"] == "simpy" and report.witness["method"].startswith("cancelling audit")
    assert report.witness["epsilon_lower_bound"] > report.epsilon_claimed


def test_the_cancelling_audit_certifies_exposed_data_and_nothing_on_independent_noise():
    rng = np.random.default_rng(4)
    w = rng.laplace(size=(600, 1, 2, 1))
    res = np.concatenate([w, 0.8 * w], axis=1)  # round 2 re-releases 0.8 of round 1's draw
    shifts = np.zeros_like(res)
    shifts[:, 1, 0] = 0.3  # the data moves agent 0's round-2 release by 0.3 (0.3 of a noise scale)
    w_adj = rng.laplace(size=(600, 1, 2, 1))
    adjacent = np.concatenate([w_adj, 0.8 * w_adj], axis=1)
    adjacent[:, 1, 0] -= 0.3  # under P' the release sits 0.3 lower; its residual under P shows it
    out = cancelling_audit(res, shifts, adjacent, agents=[0], epsilon=1.0, delta=0.0, alpha=0.00125)
    assert out["violation"] and out["rounds"] == [1, 2] and out["agents"] == [0, 0]
    assert out["beta"] == pytest.approx(0.8) and out["epsilon_lower_bound"] > 3.0
    fresh = rng.laplace(size=(600, 2, 2, 1))
    adj_fresh = rng.laplace(size=(600, 2, 2, 1))
    adj_fresh[:, 1, 0] -= 0.3
    out = cancelling_audit(fresh, shifts, adj_fresh, agents=[0], epsilon=1.0, delta=0.0, alpha=0.00125)
    assert not out["violation"]  # Laplace(1) moved by 0.3 is 0.3-DP: nothing to certify above 1


CONFIDENCE = 0.999
"""Per-example confidence of the properties below: each false alarm has probability at most 0.001. They are
statistical tests, so their draws are fixed (derandomized in every profile): under random draws 100 examples
would fail about one run in ten by design (one did, Laplace at seed 4049228: p = 2.6e-5 below its threshold)."""


@settings(max_examples=100, deadline=None, derandomize=True)
@given(st.sampled_from(["laplace", "gaussian"]), st.integers(100, 600), st.integers(2, 5), st.integers(1, 4),
       st.integers(1, 2), st.lists(st.floats(0.05, 5.0), min_size=5, max_size=5),
       st.lists(st.floats(-2.0, 2.0), min_size=5, max_size=5), st.floats(-8.0, -2.0), st.integers(0, 2**31 - 1))
def test_correct_gaussian_and_laplace_releases_are_neither_dependent_nor_refuted(
        mechanism, runs, rounds, agents, dim, scales, shift, log_delta, seed):
    # independent draws per release, as declared; agent 0's releases move by `shift` under P'; the claim is the
    # pair's true guarantee (Laplace: sum |s| / b, pure; Gaussian: the exact profile of the composed shifts)
    from accounting.profiles import gaussian_profile_epsilon

    rng = np.random.default_rng(seed)
    b = np.array(scales[:rounds])
    draw = rng.laplace if mechanism == "laplace" else rng.normal
    noise = draw(size=(runs, rounds, agents, dim)) * b[None, :, None, None]
    shifts = np.zeros_like(noise)
    shifts[:, :, 0, :] = np.array(shift[:rounds])[None, :, None]
    if mechanism == "laplace":
        eps, delta = float(np.sum(np.abs(shifts[0, :, 0]) / b[:, None])) + 1e-9, 0.0
    else:
        mu = float(np.sqrt(np.sum((shifts[0, :, 0] / b[:, None]) ** 2)))
        delta = 10.0**log_delta
        eps = max(gaussian_profile_epsilon(mu, delta), 1e-9)
    alpha = 1.0 - CONFIDENCE
    assert noise_dependence({"y": noise}, {"y": b}, alpha) is None
    adjacent = draw(size=noise.shape) * b[None, :, None, None] - shifts  # residuals under P of runs of P'
    out = cancelling_audit(noise, shifts, adjacent, agents=[0], epsilon=eps, delta=delta, alpha=alpha)
    assert out is None or not out["violation"], out


@settings(max_examples=8, deadline=None, derandomize=True)
@given(st.sampled_from(["huang2015", "showkatbakhsh"]), st.integers(0, 10_000))
def test_correct_rules_on_the_engine_show_no_dependence(rule, seed):
    # the check's own level: the dependence test and the audit at a tenth of the conformance share each
    if rule == "huang2015":
        pair, ctx = small_example(runs=300, seed=seed)
    else:
        from asyncdp.papers.showkatbakhsh.rule import Showkatbakhsh
        from asyncdp.privacy.context import CheckOptions, ScenarioPair, prepare

        sc, adj = _gaussian_example().make(1e-3, None, Showkatbakhsh)
        pair = ScenarioPair(sc, adj)
        ctx = prepare(pair, CheckOptions(runs=300, seed=seed))
    e = check_conformance(pair, ctx)
    assert e.witness is None and "noise dependence" not in (e.doubt or ""), e.reasons


def _gaussian_example():
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[3] / "examples" / "privacy_check_gaussian_under_calibrated.py"
    spec = importlib.util.spec_from_file_location("gaussian_under_calibrated", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module




def test_reused_noise_is_a_violation_on_the_command_line_with_the_witness_in_the_json(tmp_path, capsys):
    from pathlib import Path

    from asyncdp.cli import main

    out = Path(tmp_path) / "report.json"
    code = main(["privacy", "check", str(NOISE_REUSE_SCRIPT), "--runs", "400", "--search-examples", "0", "--json", str(out)])
    text = capsys.readouterr().out
    assert code == 1 and "violation" in text and "cancelling audit" in text
    w = json.loads(out.read_text())["witness"]
    assert w["kind"] == "dependence" and w["across"] == "rounds" and w["confidence"] > 0.99
    assert all(v is not None for v in w.values())


def test_the_audit_finds_noise_cancelling_with_any_other_agent_not_only_a_neighbour():
    rng = np.random.default_rng(5)
    res = rng.normal(size=(400, 3, 12, 2))
    res[:, 2, 11] = -res[:, 2, 3]  # agents 3 and 11 add opposite draws in round 3 (their sum is noise-free)
    shifts = np.zeros_like(res)
    shifts[:, 2, 3] = 0.5  # the data moves the changed agent 3's round-3 release
    adjacent = rng.normal(size=res.shape)
    adjacent[:, 2, 11] = -adjacent[:, 2, 3]
    adjacent[:, 2, 3] -= 0.5
    out = cancelling_audit(res, shifts, adjacent, agents=[3], epsilon=1.0, delta=0.0, alpha=0.00125)
    assert out["violation"] and out["rounds"] == [3, 3] and out["agents"] == [3, 11]
    assert out["beta"] == pytest.approx(-1.0)


def _plain_dependence(residuals, scales, alpha):
    """One correlation per (pair of releases, agent, coordinate), in the test's documented order (reference)."""
    from scipy import stats

    found, tests = [], 0
    for c, r in residuals.items():
        noisy = scales[c] > 0
        horizon, agents, dim = r.shape[1:]
        pairs = [("rounds", t, i, t + 1, i) for t in range(horizon - 1) if noisy[t] and noisy[t + 1]
                 for i in range(agents)]
        pairs += [("agents", t, i, t, i + 1) for t in range(horizon) if noisy[t] for i in range(agents - 1)]
        for across, ta, ia, tb, ib in pairs:
            for k in range(dim):
                a, b = r[:, ta, ia, k], r[:, tb, ib, k]
                ok = np.isfinite(a) & np.isfinite(b)
                if ok.sum() < 50:
                    continue
                corr = np.corrcoef(a[ok], b[ok])[0, 1]
                tests += 1
                z = np.arctanh(min(max(corr, -1 + 1e-15), 1 - 1e-15)) * np.sqrt(ok.sum() - 3)
                found.append((2 * stats.norm.sf(abs(z)), (c, across, [ta + 1, tb + 1], [ia, ib], k, corr)))
    p, best = min(found, key=lambda x: x[0])
    return (p < alpha / tests), p, best, tests


@pytest.mark.parametrize("gap", [False, True])
@pytest.mark.parametrize("lost", [True, False])
@pytest.mark.parametrize("planted", ["rounds", "agents", "none"])
def test_vectorized_dependence_test_equals_one_correlation_per_pair(planted, lost, gap):
    """All pairs of one kind in one array operation give the plain per-pair test's decision, pair and p-value
    (with lost messages, and without: every run released every value, the unmasked path; with a noise-free
    round between noisy ones, whose pairs are left out)."""
    rng = np.random.default_rng(3)
    r = rng.laplace(size=(300, 5, 4, 2))
    if lost:
        r[rng.random(r.shape) < 0.1] = np.nan
    if planted == "rounds":
        r[:, 3, 2, 1] = 0.6 * r[:, 2, 2, 1] + 0.4 * r[:, 3, 2, 1]
    elif planted == "agents":
        r[:, 4, 1, 0] = r[:, 4, 0, 0]
    scales = {"y": np.array([1.0, 0.0, 1.0, 1.0, 1.0] if gap else [1.0, 1.0, 1.0, 1.0, 1.0])}
    plain_reject, p, (c, across, rounds, agents, k, corr), tests = _plain_dependence({"y": r}, scales, 0.01)
    got = noise_dependence({"y": r}, scales, 0.01)
    assert plain_reject == (got is not None) == (planted != "none")
    if got is not None:
        assert (got["channel"], got["across"], got["rounds"], got["agents"], got["coordinate"], got["tests"]) == (
            c, across, rounds, agents, k, tests)
        assert got["correlation"] == pytest.approx(corr, rel=1e-9)
        assert got["p_value"] == pytest.approx(p, rel=1e-6, abs=1e-300)


@given(seed=st.integers(0, 2**32 - 1), runs=st.integers(2, 120), horizon=st.integers(2, 6),
       agents=st.integers(2, 4), coords=st.integers(1, 3), reuse=st.booleans(), data=st.data())
def test_correlations_from_shared_centering_equal_each_pairs_own(seed, runs, horizon, agents, coords, reuse, data):
    """When every run released every tested release, the correlations read off the residuals centered once
    equal those computed pair by pair, for any set of tested rounds (consecutive or not): to rounding, as numpy
    sums some small blocks pairwise rather than run by run (bit for bit on the shipped examples)."""
    from asyncdp.privacy.dependence import _centered, _every_run_correlation, _masked_correlation, _rounds_index

    rng = np.random.default_rng(seed)
    r = rng.laplace(size=(runs, horizon, agents, coords)) * rng.uniform(0.1, 10, (1, horizon, 1, 1))
    if reuse:
        r[:, 1] = 0.5 * r[:, 0] + rng.normal(size=r[:, 0].shape)
    rounds = sorted(data.draw(st.sets(st.integers(0, horizon - 2), min_size=1)))
    idx, nxt = _rounds_index(rounds), _rounds_index([t + 1 for t in rounds])
    shared = _centered(r)
    for across, a, b in (("rounds", r[:, idx], r[:, nxt]), ("agents", r[:, idx, :-1], r[:, idx, 1:])):
        n, expected = _masked_correlation(a, b)
        assert (n == runs).all()
        got = _every_run_correlation(*shared, across, rounds)
        assert np.array_equal(np.isnan(got), np.isnan(expected))
        assert np.allclose(got, expected, rtol=1e-12, atol=1e-15, equal_nan=True)
