"""``asyncdp topology``: audit, generate and inspect topology files.

Sub-commands::

    asyncdp topology audit FILE --algorithm NAME|PAPER.py[:NAME]|module:NAME [--horizon T] [--B B] [--json]
                               [--out PATH]
    asyncdp topology generate KIND [options] -o FILE
    asyncdp topology info FILE

``FILE`` follows the JSON format documented in :mod:`topology.io`.
``generate`` kinds: ``static``, ``erdos-renyi``, ``link-failures``,
``geometric`` and ``b-connected`` (see ``asyncdp topology generate KIND --help``).
``audit`` exits with 0 whether or not the assumptions hold; 2 only when the
input is unusable.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

import numpy as np

from topology.audit import audit
from topology.errors import ParameterError
from topology.io import load_sequence, save_sequence
from topology.sequence import GraphSequence, from_networkx
from topology.weights import WEIGHT_RULES

from .arguments import finite_float, nonnegative_int, positive_int, require_memory
from .outputs import prepare_file

if TYPE_CHECKING:
    import networkx as nx

__all__ = ["register", "GENERATE_KINDS", "STATIC_GRAPHS", "generate_memory_estimate"]

STATIC_GRAPHS: tuple[str, ...] = ("ring", "complete", "path", "star")
"""Graphs accepted by ``generate static --graph`` (and ``link-failures --base``)."""

GENERATE_KINDS: tuple[str, ...] = ("static", "erdos-renyi", "link-failures", "geometric", "b-connected")
"""The kinds of ``asyncdp topology generate KIND``."""

_RULES = tuple(WEIGHT_RULES)


# -- argument types ----------------------------------------------------------------


_positive_int = positive_int
"""argparse type: an integer >= 1 (``1e4`` accepted; :func:`asyncdp.cli.arguments.count`)."""

_nonnegative_int = nonnegative_int
"""argparse type: an integer >= 0."""

_finite_float = finite_float
"""argparse type: a finite number."""


# -- audit ---------------------------------------------------------------------------


def _cmd_audit(args: argparse.Namespace) -> int:
    from ..papers import PaperError
    from ..papers.loading import resolve

    paper, rule = resolve(args.algorithm)
    assumptions = paper.assumption_set(rule)
    if assumptions is None:
        raise PaperError(f"--algorithm {args.algorithm}: paper {paper.name!r} declares no topology assumptions")
    if args.B is not None and not assumptions.uses_b:
        raise ParameterError(f"--B applies only to algorithms whose assumptions include B-strong connectivity; "
                             f"those of {rule} do not")
    out = args.out and prepare_file(args.out, "--out")
    seq = load_sequence(args.file)
    kwargs: dict[str, Any] = {} if args.B is None else {"B": args.B}
    report = audit(seq, assumptions, horizon=args.horizon, **kwargs)
    text = report.to_json(indent=2) if args.json else report.to_table()
    if out:
        out.write_text(text + "\n")
    else:
        print(text)
    return 0


# -- info ----------------------------------------------------------------------------


def _stats(values: list[int]) -> str:
    return f"min {min(values)}, mean {float(np.mean(values)):.2f}, max {max(values)}"


def _cmd_info(args: argparse.Namespace) -> int:
    seq = load_sequence(args.file)
    print(_describe(seq, args.file))
    return 0


def _describe(seq: GraphSequence, name: str) -> str:
    if seq.length is not None:
        extent, count = f"rounds:      {seq.length} (finite)", seq.length
    else:
        count = int(seq.period or 1)
        extent = f"period:      {count} (periodic: the rounds repeat for ever)"
    nnz, links = [], []
    for t in range(1, count + 1):
        w = seq.weights(t)
        nnz.append(int(w.nnz))
        links.append(int(w.nnz - np.count_nonzero(w.diagonal())))
    lines = [f"file:        {name}"]
    if seq.description:
        lines.append(f"description: {seq.description}")
    lines += [
        f"nodes:       {seq.num_nodes}",
        extent,
        f"directed:    {'yes' if seq.directed else 'no'}",
        f"nonzeros per round (incl. diagonal): {_stats(nnz)}",
        f"links per round (off-diagonal):      {_stats(links)}",
    ]
    if count <= 20:
        lines.append("round  nonzeros  links")
        lines += [f"{t:>5}  {a:>8}  {b:>5}" for t, (a, b) in enumerate(zip(nnz, links), start=1)]
    return "\n".join(lines)


# -- generate ------------------------------------------------------------------------


def _static_graph(kind: str, n: int, directed: bool) -> nx.Graph:
    import networkx as nx

    create = nx.DiGraph if directed else nx.Graph
    if kind == "ring":
        if n < 3:
            raise ParameterError(f"a ring needs --nodes >= 3, got {n}")
        return nx.cycle_graph(n, create_using=create)
    if kind == "complete":
        return nx.complete_graph(n, create_using=create)
    if kind == "path":
        return nx.path_graph(n, create_using=create)
    if kind == "star":  # hub 0; directed: hub -> leaves (older nx.star_graph rejects digraphs)
        graph = create()
        graph.add_nodes_from(range(n))
        graph.add_edges_from((0, leaf) for leaf in range(1, n))
        return graph
    raise ParameterError(f"unknown graph {kind!r}; known: {', '.join(STATIC_GRAPHS)}")  # pragma: no cover


def _gen_static(args: argparse.Namespace) -> tuple[GraphSequence, int | None]:
    directed = bool(args.directed)
    graph = _static_graph(args.graph, args.nodes, directed)
    rule = args.rule or ("column-stochastic" if directed else "metropolis")
    seq = from_networkx([graph], rule, periodic=True)
    seq.description = f"static {'directed ' if directed else ''}{args.graph}, N={args.nodes}, rule={rule}"
    return seq, args.rounds


def _gen_erdos_renyi(args: argparse.Namespace) -> tuple[GraphSequence, int | None]:
    from topology.generators.random_graphs import erdos_renyi

    directed = bool(args.directed)
    seq = erdos_renyi(
        args.nodes, args.p, seed=args.seed, directed=directed, rule=args.rule,
        length=args.rounds, connected=args.connected,
    )
    seq.description = (
        f"erdos-renyi{' directed' if directed else ''}{' connected' if args.connected else ''}, "
        f"N={args.nodes}, p={args.p!r}, seed={args.seed}" + (f", rule={args.rule}" if args.rule else "")
    )
    return seq, args.rounds


def _link_failures_base(args: argparse.Namespace) -> Any:
    if args.base in ("ring", "complete"):
        if args.nodes is None:
            raise ParameterError(f"--base {args.base} needs --nodes")
        return _static_graph(args.base, args.nodes, directed=False)
    base = load_sequence(args.base)
    if (base.length or base.period) != 1:
        raise ParameterError(
            f"--base {args.base}: the base file must hold a single round (a fixed graph), "
            f"it has {base.length or base.period}"
        )
    if args.nodes is not None and args.nodes != base.num_nodes:
        raise ParameterError(f"--nodes {args.nodes} differs from the {base.num_nodes} nodes of {args.base}")
    return base.pattern(1)


def _gen_link_failures(args: argparse.Namespace) -> tuple[GraphSequence, int | None]:
    from topology.generators.random_graphs import link_failures

    base = _link_failures_base(args)
    seq = link_failures(
        base, args.failure_prob, seed=args.seed, rule=args.rule, length=args.rounds, directed=args.directed
    )
    seq.description = (
        f"link failures on {args.base}, failure_prob={args.failure_prob!r}, seed={args.seed}"
        + (f", rule={args.rule}" if args.rule else "")
    )
    return seq, args.rounds


def _gen_geometric(args: argparse.Namespace) -> tuple[GraphSequence, int | None]:
    from topology.generators.random_graphs import random_geometric

    seq = random_geometric(
        args.nodes, args.radius, seed=args.seed, dim=args.dim, rule=args.rule,
        length=args.rounds, mobile=args.mobile,
    )
    seq.description = (
        f"random geometric{'' if args.mobile else ' (fixed positions)'}, N={args.nodes}, "
        f"radius={args.radius!r}, dim={args.dim}, seed={args.seed}" + (f", rule={args.rule}" if args.rule else "")
    )
    return seq, args.rounds


def _gen_b_connected(args: argparse.Namespace) -> tuple[GraphSequence, int | None]:
    from topology.generators.b_connected import b_connected_sequence

    kwargs: dict[str, Any] = {
        "seed": args.seed, "minimal": args.minimal, "length": args.rounds,
        "extra_edge_prob": args.extra_edge_prob,
    }
    if args.rule is not None:
        kwargs["rule"] = args.rule
    if args.directed is not None:
        kwargs["directed"] = args.directed
    seq = b_connected_sequence(args.nodes, args.B, **kwargs)
    if args.rounds is None and seq.length is None and seq.period is None:
        raise ParameterError("with --extra-edge-prob > 0 the sequence is not periodic; give --rounds")
    seq.description = (
        f"{args.B}-strongly-connected{' (minimal)' if args.minimal else ''}, N={args.nodes}, seed={args.seed}"
        + (f", extra_edge_prob={args.extra_edge_prob!r}" if args.extra_edge_prob else "")
        + (f", rule={args.rule}" if args.rule else "")
    )
    return seq, args.rounds


# bytes per node and per directed link of a networkx graph plus its sparse weights and JSON text (peak
# resident memory measured for a 10^6-node ring, 1.9 GB, and a 2000-node complete graph, 1.4 GB)
_NODE_BYTES, _LINK_BYTES = 1000.0, 350.0


def generate_memory_estimate(args: argparse.Namespace) -> tuple[float, str]:
    """Bytes ``topology generate`` would hold for ``args`` (order of magnitude) and the parameter to name.

    Links per round: ring ``2N``, path and star ``2(N - 1)``, complete ``N(N - 1)``,
    Erdos-Renyi ``p N (N - 1)``, geometric up to ``N(N - 1)``, B-connected
    about ``2N`` (directed links counted once each way). Random kinds hold
    ``--rounds`` graphs; periodic ones one period.

    Example:
        >>> ns = argparse.Namespace(kind="static", graph="complete", nodes=100_000, rounds=None)
        >>> generate_memory_estimate(ns)[0] > 1e12
        True
    """
    n = float(getattr(args, "nodes", None) or 0)
    kind = args.kind
    rounds = float(getattr(args, "rounds", None) or 1)
    if kind == "static":
        graph = args.graph
        links = n * (n - 1) if graph == "complete" else 2.0 * n
        rounds, what = 1.0, f"--nodes {int(n)} (a {graph} graph)"
    elif kind == "erdos-renyi":
        links, what = float(args.p) * n * (n - 1), f"--nodes {int(n)} with --p {args.p!r} and --rounds {int(rounds)}"
    elif kind == "geometric":
        links, what = n * (n - 1), f"--nodes {int(n)} with --rounds {int(rounds)}"
    elif kind == "link-failures":
        base = getattr(args, "base", "")
        links = n * (n - 1) if base == "complete" else 2.0 * n
        what = f"--nodes {int(n)} (base {base}) with --rounds {int(rounds)}"
    else:  # b-connected
        links, what = 2.0 * n, f"--nodes {int(n)}"
        rounds = max(rounds, float(getattr(args, "B", 1) or 1))
    per_round = n * _NODE_BYTES + links * _LINK_BYTES
    return per_round * rounds if kind != "static" else per_round, what


def _cmd_generate(args: argparse.Namespace) -> int:
    out = prepare_file(args.output, "-o", (".json",))
    estimate, what = generate_memory_estimate(args)
    require_memory(estimate, what, "graph, weights and JSON text of every round written")
    seq, horizon = args.builder(args)
    out.write(lambda tmp: save_sequence(seq, tmp, horizon=horizon))
    written = f"{horizon} rounds" if horizon is not None else f"one period of {seq.period or seq.length} round(s)"
    print(f"wrote {args.output}: {args.kind}, {seq.num_nodes} nodes, {written}")
    return 0


# -- registration --------------------------------------------------------------------


def _add_common(p: argparse.ArgumentParser, *, rounds_required: bool, rounds_help: str,
                seed: bool = True, rule_help: str = "weight rule (default: the generator's)") -> None:
    p.add_argument("--rounds", type=_positive_int, required=rounds_required, metavar="T", help=rounds_help)
    if seed:
        p.add_argument("--seed", type=_nonnegative_int, default=0, help="nonnegative random seed (default 0)")
    p.add_argument("--rule", choices=_RULES, default=None, help=rule_help)
    p.add_argument("-o", "--output", required=True, metavar="FILE.json",
                   help="output topology file (JSON; parents created; an existing file is replaced, said on stderr)")


def _register_generate(sub: argparse._SubParsersAction) -> None:
    gen = sub.add_parser(
        "generate",
        help="write a generated topology sequence to a JSON file",
        description="Generate a topology sequence and write it in the topology.io JSON format.",
    )
    gen.set_defaults(func=_cmd_generate)
    kinds = gen.add_subparsers(dest="kind", metavar="KIND", required=True)
    random_rounds = "number of rounds written to the file (required)"
    periodic_rounds = "number of rounds written to the file (default: one period, periodic)"
    bool_opt = argparse.BooleanOptionalAction

    p = kinds.add_parser("static", help="a fixed graph (ring, complete, path, star)",
                         description="The same graph at every round, weighted by a rule.")
    p.add_argument("--graph", choices=STATIC_GRAPHS, required=True, help="the graph")
    p.add_argument("--nodes", type=_positive_int, required=True, metavar="N", help="number of nodes")
    p.add_argument("--directed", action="store_true",
                   help="one-way links (ring: 0->1->...->0; path: 0->1->...; star: hub 0 -> leaves)")
    _add_common(p, rounds_required=False, rounds_help=periodic_rounds, seed=False,
                rule_help="weight rule (default: metropolis, or column-stochastic with --directed)")
    p.set_defaults(builder=_gen_static)

    p = kinds.add_parser("erdos-renyi", help="a fresh G(N, p) graph every round",
                         description="A fresh Erdos-Renyi graph G(N, p) at every round.")
    p.add_argument("--nodes", type=_positive_int, required=True, metavar="N", help="number of nodes")
    p.add_argument("--p", type=_finite_float, required=True, help="link probability in [0, 1]")
    p.add_argument("--directed", action="store_true", help="sample one-way links independently")
    p.add_argument("--connected", action="store_true",
                   help="resample each round until it is (strongly) connected")
    _add_common(p, rounds_required=True, rounds_help=random_rounds,
                rule_help="weight rule (default: metropolis, or row-stochastic with --directed)")
    p.set_defaults(builder=_gen_erdos_renyi)

    p = kinds.add_parser("link-failures", help="a fixed base graph whose links fail at random",
                         description="A base graph whose links fail independently at every round.")
    p.add_argument("--base", required=True, metavar="ring|complete|FILE",
                   help="base graph: ring or complete (with --nodes), or a one-round topology file")
    p.add_argument("--nodes", type=_positive_int, default=None, metavar="N",
                   help="number of nodes (for --base ring|complete)")
    p.add_argument("--failure-prob", type=_finite_float, required=True, metavar="Q",
                   help="per-round failure probability of each link, in [0, 1]")
    p.add_argument("--directed", action=bool_opt, default=None,
                   help="let the two directions of a link fail independently (default: from the base)")
    _add_common(p, rounds_required=True, rounds_help=random_rounds,
                rule_help="weight rule (default: metropolis, or row-stochastic if directed)")
    p.set_defaults(builder=_gen_link_failures)

    p = kinds.add_parser("geometric", help="random geometric graphs in the unit cube",
                         description="Uniform points in [0, 1)^dim, linked when within --radius.")
    p.add_argument("--nodes", type=_positive_int, required=True, metavar="N", help="number of nodes")
    p.add_argument("--radius", type=_finite_float, required=True, help="link radius (> 0)")
    p.add_argument("--dim", type=_positive_int, default=2, help="dimension of the unit cube (default 2)")
    p.add_argument("--mobile", action=bool_opt, default=True,
                   help="redraw the positions every round (default) or keep round 1's")
    _add_common(p, rounds_required=True, rounds_help=random_rounds,
                rule_help="weight rule (default: metropolis)")
    p.set_defaults(builder=_gen_geometric)

    p = kinds.add_parser("b-connected", help="a B-strongly-connected sequence",
                         description="A sequence whose union over every window of B rounds is strongly connected.")
    p.add_argument("--nodes", type=_positive_int, required=True, metavar="N", help="number of nodes")
    p.add_argument("--B", type=_positive_int, required=True, help="window length B")
    p.add_argument("--directed", action=bool_opt, default=None, help="one-way links (default: directed)")
    p.add_argument("--minimal", action=bool_opt, default=True,
                   help="no window shorter than B is connected (default: minimal)")
    p.add_argument("--extra-edge-prob", type=_finite_float, default=0.0, metavar="P",
                   help="with --no-minimal: probability of each random extra link per round "
                   "(makes the sequence non-periodic, so --rounds is then needed)")
    _add_common(p, rounds_required=False, rounds_help=periodic_rounds,
                rule_help="weight rule (default: column-stochastic, or metropolis with --no-directed)")
    p.set_defaults(builder=_gen_b_connected)


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add ``topology`` (with ``audit``, ``generate``, ``info``) to ``subparsers``.

    Args:
        subparsers: the top-level parser's sub-parsers action.
    """
    top = subparsers.add_parser(
        "topology",
        help="audit, generate and inspect topology sequences",
        description="Audit, generate and inspect topology sequences stored as JSON "
        "(format: see the topology.io module documentation).",
    )
    sub = top.add_subparsers(dest="topology_command", metavar="SUBCOMMAND", required=True)

    p = sub.add_parser(
        "audit",
        help="check a topology file against an algorithm's theorem assumptions",
        description="Check a topology file against the assumptions of an algorithm's theorems. "
        "Exits with 0 whether or not they hold.",
    )
    p.add_argument("file", metavar="FILE", help="topology file (JSON)")
    p.add_argument("--algorithm", required=True, metavar="NAME|PAPER.py[:NAME]|module:NAME",
                   help="the algorithm whose assumptions to check: a paper or rule name (huang2015, showkatbakhsh, "
                        "wang-basar, dpsda-c, dpsda-ps, or an installed paper), or a script or module defining a "
                        "paper record")
    p.add_argument("--horizon", type=_positive_int, default=None, metavar="T",
                   help="rounds 1..T to examine (default: all rounds, or one period)")
    p.add_argument("--B", type=_positive_int, default=None,
                   help="algorithms whose assumptions include B-strong connectivity (e.g. dpsda-ps): the "
                        "connectivity window to check (default: the smallest that holds)")
    p.add_argument("--json", action="store_true", help="print the report as JSON instead of a table")
    p.add_argument("--out", metavar="PATH", default=None, help="write the report to PATH instead of stdout")
    p.set_defaults(func=_cmd_audit)

    _register_generate(sub)

    p = sub.add_parser("info", help="summarize a topology file",
                       description="Print the nodes, rounds or period and per-round nonzero counts of a topology file.")
    p.add_argument("file", metavar="FILE", help="topology file (JSON)")
    p.set_defaults(func=_cmd_info)
