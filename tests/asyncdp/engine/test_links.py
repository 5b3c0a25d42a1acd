"""Tests of asyncdp.engine.links: latency/loss models, FIFO channels and link streams.

Statistical tests use fixed seeds; each states its confidence level. With a
fixed seed the outcome is deterministic, so a failure means a changed
distribution or draw order, not bad luck (the level bounds how unlucky a
*correct* implementation could be on a fresh seed).
"""

from __future__ import annotations

import math
import pickle
from dataclasses import dataclass

import numpy as np
import pytest
from scipy import stats

from asyncdp.errors import LinkModelError, ScenarioError
from asyncdp.engine.links import (
    CallableLatency,
    ConstantLatency,
    ExponentialLatency,
    LatencyModel,
    LinkChannel,
    LinkModel,
    Links,
    LogNormalLatency,
    ZeroLatency,
    latency_from_dict,
    link_rng,
)

LEVEL = 0.999
Z = stats.norm.ppf(0.5 + LEVEL / 2)  # two-sided CLT quantile at LEVEL (about 3.29)


# --------------------------------------------------------------------------- statistics


def test_loss_rate_inside_exact_binomial_interval() -> None:
    n, p = 20_000, 0.1
    ch = LinkChannel(LinkModel(ExponentialLatency(0.3), loss=p), link_rng(11, 0, 1))
    out = [ch.transmit(float(k)) for k in range(n)]
    lost = sum(o is None for o in out)
    lo, hi = stats.binom.interval(LEVEL, n, p)
    assert lo <= lost <= hi, f"{lost} lost of {n}, {LEVEL} interval [{lo}, {hi}]"
    assert ch.lost == lost and ch.sent == n


@pytest.mark.parametrize(
    "latency", [ExponentialLatency(0.5), LogNormalLatency(median=1.0, sigma=0.5)], ids=["exp", "lognormal"]
)
def test_mean_latency_inside_clt_interval(latency) -> None:
    n = 20_000
    ch = LinkChannel(LinkModel(latency, reorder=True), link_rng(3, 2, 5))
    delays = np.array([ch.transmit(10.0) - 10.0 for _ in range(n)])
    half = Z * latency.std / math.sqrt(n)
    assert abs(delays.mean() - latency.mean) <= half, (delays.mean(), latency.mean, half)
    assert (delays >= 0).all()


def test_lognormal_analytic_moments() -> None:
    m = LogNormalLatency(median=2.0, sigma=0.8)
    assert m.mean == pytest.approx(2.0 * math.exp(0.32))
    assert m.std == pytest.approx(m.mean * math.sqrt(math.exp(0.64) - 1))
    # the median parametrization: half the draws fall below it (level 0.999 binomial interval)
    draws = m.sample(np.random.default_rng(0), size=20_000)
    lo, hi = stats.binom.interval(LEVEL, 20_000, 0.5)
    assert lo <= (draws < 2.0).sum() <= hi


def test_sample_scalar_and_vector_forms() -> None:
    rng = np.random.default_rng(0)
    for model in (ZeroLatency(), ConstantLatency(0.2), ExponentialLatency(1.0), LogNormalLatency(1.0, 0.3)):
        assert isinstance(model.sample(rng), float)
        arr = model.sample(rng, size=5)
        assert isinstance(arr, np.ndarray) and arr.shape == (5,) and (arr >= 0).all()
    assert ConstantLatency(0.2).sample(rng, size=3).tolist() == [0.2] * 3


# --------------------------------------------------------------------------- ordering


def _sends(n: int = 2000, gap: float = 0.1) -> list[float]:
    return [k * gap for k in range(n)]


@pytest.mark.parametrize("loss", [0.0, 0.2])
def test_fifo_delivery_is_running_max_of_independent_times(loss: float) -> None:
    lat = ExponentialLatency(1.0)
    fifo = LinkChannel(LinkModel(lat, loss=loss), link_rng(1, 0, 1))
    free = LinkChannel(LinkModel(lat, loss=loss, reorder=True), link_rng(1, 0, 1))
    a = [fifo.transmit(t) for t in _sends()]
    b = [free.transmit(t) for t in _sends()]
    assert [x is None for x in a] == [x is None for x in b]
    da = np.array([x for x in a if x is not None])
    db = np.array([x for x in b if x is not None])
    assert (np.diff(da) >= 0).all(), "FIFO link delivered out of order"
    np.testing.assert_array_equal(da, np.maximum.accumulate(db))
    assert (da > db).any(), "FIFO never had to hold a message back; test is vacuous"


def test_reorder_allows_overtaking() -> None:
    # Sends 0.1 apart, Exp(1) latency: a message overtakes its predecessor with
    # probability 0.5 * exp(-0.1) ~ 0.45 per pair, so among 1000 disjoint pairs
    # P(no overtake) < 0.55**1000 < 1e-250.
    ch = LinkChannel(LinkModel(ExponentialLatency(1.0), reorder=True), link_rng(2, 0, 1))
    d = np.array([ch.transmit(t) for t in _sends()])
    assert (np.diff(d) < 0).any()


def test_fifo_with_zero_latency_and_out_of_order_sends() -> None:
    ch = LinkChannel(LinkModel(ConstantLatency(1.0)), link_rng(0, 0, 1))
    assert ch.transmit(5.0) == 6.0
    assert ch.transmit(2.0) == 6.0  # an earlier-stamped send cannot overtake on a FIFO link
    assert ch.last_delivery == 6.0


# --------------------------------------------------------------------------- streams


def test_same_seed_same_sequence() -> None:
    model = LinkModel(LogNormalLatency(0.5, 1.0), loss=0.3)
    ch1, ch2 = LinkChannel(model, link_rng(42, 3, 4)), LinkChannel(model, link_rng(42, 3, 4))
    s1 = [ch1.transmit(float(t)) for t in range(500)]
    s2 = [ch2.transmit(float(t)) for t in range(500)]
    assert s1 == s2
    assert any(x is None for x in s1) and any(x is not None for x in s1)


def test_link_rng_is_the_documented_seed_sequence() -> None:
    expected = np.random.default_rng(np.random.SeedSequence(9, spawn_key=(1, 2, 3))).random(4)
    np.testing.assert_array_equal(link_rng(9, 2, 3).random(4), expected)


def test_link_rng_streams_differ_between_links_and_seeds() -> None:
    draws = {key: link_rng(*key).random(8).tobytes() for key in [(0, 0, 1), (0, 1, 0), (0, 0, 2), (1, 0, 1)]}
    assert len(set(draws.values())) == len(draws)


def test_draw_count_does_not_depend_on_loss_outcomes() -> None:
    lat = ExponentialLatency(0.7)
    lossless = LinkChannel(LinkModel(lat, loss=0.0, reorder=True), link_rng(5, 1, 2))
    lossy = LinkChannel(LinkModel(lat, loss=0.5, reorder=True), link_rng(5, 1, 2))
    raw_a = [lossless.draw() for _ in range(300)]
    raw_b = [lossy.draw() for _ in range(300)]
    assert [d for _, d in raw_a] == [d for _, d in raw_b]
    assert not any(lost for lost, _ in raw_a) and 0 < sum(lost for lost, _ in raw_b) < 300
    # the same holds through transmit(): every delivered message keeps its lossless time
    ta = [lossless.transmit(float(k)) for k in range(300)]
    tb = [lossy.transmit(float(k)) for k in range(300)]
    assert all(b is None or a == b for a, b in zip(ta, tb))
    assert lossless.rng.random() == lossy.rng.random()


def test_loss_one_and_zero_are_deterministic() -> None:
    always = LinkChannel(LinkModel(loss=1.0), link_rng(0, 0, 1))
    never = LinkChannel(LinkModel(loss=0.0), link_rng(0, 0, 1))
    assert all(always.transmit(float(t)) is None for t in range(200))
    assert all(never.transmit(float(t)) == float(t) for t in range(200))


# --------------------------------------------------------------------------- callable


def test_callable_latency_uses_given_rng_and_checks_values() -> None:
    model = CallableLatency(lambda rng: 0.5 + rng.random(), mean=1.0)
    ch = LinkChannel(LinkModel(model, reorder=True), link_rng(0, 0, 1))
    d = [ch.transmit(0.0) for _ in range(100)]
    assert all(0.5 <= x < 1.5 for x in d) and model.mean == 1.0
    bad = LinkChannel(LinkModel(lambda rng: -0.5), link_rng(0, 2, 3), link=(2, 3))
    with pytest.raises(LinkModelError, match=r"link 2 -> 3.*-0\.5"):
        bad.transmit(0.0)
    with pytest.raises(LinkModelError, match="invalid delay nan"):
        CallableLatency(lambda rng: float("nan")).sample(np.random.default_rng(0))
    with pytest.raises(LinkModelError, match="fn must be callable"):
        CallableLatency(3)


# --------------------------------------------------------------------------- validation


@pytest.mark.parametrize(
    ("build", "param"),
    [
        (lambda: ConstantLatency(-1.0), "delay"),
        (lambda: ConstantLatency(float("nan")), "delay"),
        (lambda: ConstantLatency(math.inf), "delay"),
        (lambda: ExponentialLatency(0.0), "mean"),
        (lambda: ExponentialLatency(-2.0), "mean"),
        (lambda: LogNormalLatency(0.0, 1.0), "median"),
        (lambda: LogNormalLatency(1.0, -0.1), "sigma"),
        (lambda: LinkModel(loss=1.5), "loss"),
        (lambda: LinkModel(loss=-0.1), "loss"),
        (lambda: LinkModel(loss=float("nan")), "loss"),
        (lambda: LinkModel(reorder="yes"), "reorder"),
        (lambda: LinkModel(latency="fast"), "latency"),
    ],
)
def test_invalid_parameters_raise_naming_parameter(build, param: str) -> None:
    with pytest.raises(LinkModelError, match=param):
        build()


def test_error_message_names_value() -> None:
    with pytest.raises(LinkModelError, match=r"delay must be >= 0, got -1\.0"):
        ConstantLatency(-1.0)
    with pytest.raises(ScenarioError, match=r"loss.*1\.5"):
        LinkModel(loss=1.5)
    assert issubclass(LinkModelError, ValueError)


def test_links_override_lookup_and_validation() -> None:
    fast, slow = LinkModel(ConstantLatency(0.1)), LinkModel(ConstantLatency(2.0), loss=0.5)
    links = Links(fast, {(0, 1): slow, (np.int64(2), 0): slow})
    assert links.model(0, 1) is slow and links.model(1, 0) is fast and links.model(2, 0) is slow
    links.validate(3)
    with pytest.raises(LinkModelError, match=r"2 -> 0.*0\.\.1"):
        links.validate(2)
    for key in [(0,), (0, -1), ("a", 1), (1, 1), 5]:
        with pytest.raises(LinkModelError, match="override"):
            Links(fast, {key: slow})
    with pytest.raises(LinkModelError, match="must be a LinkModel"):
        Links(fast, {(0, 1): 0.3})


def test_serialization_round_trips() -> None:
    links = Links(
        LinkModel(LogNormalLatency(0.2, 0.7), loss=0.05, reorder=True),
        {(0, 3): LinkModel(ExponentialLatency(1.5)), (1, 0): LinkModel(ZeroLatency(), loss=1.0)},
    )
    again = Links.from_dict(links.to_dict())
    assert again == links and hash(again) == hash(links)
    for m in (ZeroLatency(), ConstantLatency(3.0), ExponentialLatency(2.0), LogNormalLatency(1.0, 0.0)):
        assert latency_from_dict(m.to_dict()) == m
    with pytest.raises(LinkModelError, match="unknown latency kind"):
        latency_from_dict({"kind": "callable"})
    with pytest.raises(LinkModelError, match="unknown keys"):
        LinkModel.from_dict({"los": 0.1})


def test_number_shorthand_for_latency() -> None:
    assert LinkModel(0.25).latency == ConstantLatency(0.25)
    assert LinkModel(0).latency == ZeroLatency()


def test_links_channel_uses_link_rng() -> None:
    links = Links(LinkModel(ExponentialLatency(1.0), reorder=True))
    a = links.channel(4, 1, 2)
    b = LinkChannel(links.model(1, 2), link_rng(4, 1, 2))
    assert [a.transmit(0.0) for _ in range(10)] == [b.transmit(0.0) for _ in range(10)]


def test_transmit_rejects_non_finite_send_time() -> None:
    ch = LinkChannel(LinkModel(), link_rng(0, 0, 1), link=(0, 1))
    with pytest.raises(LinkModelError, match=r"link 0 -> 1.*send_time"):
        ch.transmit(float("nan"))


def test_latency_of_a_user_model_is_a_python_float() -> None:
    class Float32Latency(LatencyModel):
        def sample(self, rng, size=None):
            return np.float32(0.1) if size is None else np.full(size, 0.1, dtype=np.float32)

    ch = LinkChannel(LinkModel(Float32Latency()), link_rng(0, 0, 1))
    arrival = ch.transmit(4.76090408)
    assert type(arrival) is float and arrival == 4.76090408 + float(np.float32(0.1))


def test_lognormal_latency_pickled_by_earlier_versions_still_samples() -> None:
    """Earlier versions did not store the log-median."""
    lat = LogNormalLatency(median=0.2, sigma=0.5)
    old = LogNormalLatency.__new__(LogNormalLatency)
    old.__setstate__({"median": 0.2, "sigma": 0.5})
    assert old == lat and old.sample(np.random.default_rng(3)) == lat.sample(np.random.default_rng(3))
    assert pickle.loads(pickle.dumps(lat)).sample(np.random.default_rng(3)) == lat.sample(np.random.default_rng(3))


@pytest.mark.parametrize(
    "build, message",
    [
        (lambda: ExponentialLatency(-2.0), r"^ExponentialLatency: mean must be > 0, got -2\.0$"),
        (lambda: LogNormalLatency(1.0, math.inf), r"^LogNormalLatency: sigma must be finite, got inf$"),
        (lambda: ConstantLatency("1"), r"^ConstantLatency: delay must be a real number, got '1'$"),
        (lambda: link_rng(0, -1, 2), r"^link_rng: sender must be >= 0, got -1$"),
        (lambda: link_rng(1.5, 0, 1), r"^link_rng: seed must be an integer, got 1\.5$"),
        (lambda: Links(overrides={(-1, 2): LinkModel()}),
         r"^Links: sender of override link \(-1, 2\) must be >= 0, got -1$"),
    ],
)
def test_messages_name_owner_parameter_and_value(build, message: str) -> None:
    """The shared checks (topology.validation) raise LinkModelError naming the owner, the parameter and the value."""
    with pytest.raises(LinkModelError, match=message):
        build()


def test_a_links_subclass_with_its_own_per_link_models_is_refused():
    """A ``Links`` subclass overriding ``model`` (loss and latency growing with ``|i - j|``) ran its models on the
    SimPy engine only: the batch engine, which the privacy checker runs, read ``default`` (lossless, no latency), so
    the same seed lost 4 messages on one engine and none on the other. Overriding ``channel`` likewise."""

    @dataclass(frozen=True)
    class DistanceLinks(Links):
        def model(self, sender, receiver):
            return LinkModel(ConstantLatency(0.2 * abs(sender - receiver)), loss=0.1 * abs(sender - receiver))

    @dataclass(frozen=True)
    class OwnChannels(Links):
        def channel(self, seed, sender, receiver):
            return super().channel(seed + 1, sender, receiver)

    with pytest.raises(LinkModelError, match=r"^DistanceLinks: a Links subclass may not override model\(\): .* give "
                                             r"each link's own model as an override"):
        DistanceLinks()
    with pytest.raises(LinkModelError, match=r"^OwnChannels: a Links subclass may not override channel\(\)"):
        OwnChannels()
