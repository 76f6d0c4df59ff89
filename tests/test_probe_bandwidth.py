"""algbw/busbw against hand-computed values, op shapes, the nccl-tests table, and the expected values of
the element checks against a brute-force simulation of each collective in plain Python."""

from __future__ import annotations

import pytest

from syncdoctor.probe.bandwidth import busbw, busbw_factor, format_table, op_shape, summarise

# (op, ranks, size bytes, seconds, algbw GB/s, busbw GB/s), computed by hand from nccl-tests'
# doc/PERFORMANCE.md: algbw = S/t; busbw = algbw * 2(n-1)/n (all_reduce), (n-1)/n (all_gather,
# reduce_scatter, all_to_all), 1 (broadcast).
TABLE = [
    ("all_reduce", 4, 1_000_000_000, 1.0, 1.0, 1.5),
    ("all_reduce", 8, 4_000_000_000, 2.0, 2.0, 3.5),
    ("all_reduce", 2, 500_000_000, 0.25, 2.0, 2.0),
    ("all_gather", 4, 1_000_000_000, 0.5, 2.0, 1.5),
    ("reduce_scatter", 8, 800_000_000, 0.4, 2.0, 1.75),
    ("all_to_all", 2, 300_000_000, 0.1, 3.0, 1.5),
    ("broadcast", 16, 1_000_000_000, 0.5, 2.0, 2.0),
    ("all_reduce", 1, 1_000_000_000, 1.0, 1.0, 0.0),
]


@pytest.mark.parametrize(("op", "ranks", "size", "seconds", "alg", "bus"), TABLE)
def test_algbw_and_busbw_match_hand_computed_values(
    op: str, ranks: int, size: int, seconds: float, alg: float, bus: float
) -> None:
    shape = op_shape(op, size, ranks)
    assert shape is not None and shape.size == size
    row = summarise(op, shape, {r: (seconds, 0) for r in range(ranks)}, iters=5)
    assert row.algbw / 1e9 == pytest.approx(alg)
    assert row.busbw / 1e9 == pytest.approx(bus)
    assert busbw(op, size, seconds, ranks) / 1e9 == pytest.approx(bus)


def test_busbw_factor_rejects_unknown() -> None:
    with pytest.raises(ValueError):
        busbw_factor("scan", 4)
    with pytest.raises(ValueError):
        busbw_factor("all_reduce", 0)


@pytest.mark.parametrize(
    ("op", "size", "ranks", "count", "in_numel", "out_numel", "used"),
    [
        ("all_reduce", 1024, 4, 256, 256, 256, 1024),
        ("broadcast", 1026, 4, 256, 256, 256, 1024),
        ("all_gather", 1024, 3, 85, 85, 255, 1020),
        ("reduce_scatter", 1024, 4, 64, 256, 64, 1024),
        ("all_to_all", 4096, 8, 128, 1024, 1024, 4096),
    ],
)
def test_op_shapes_follow_nccl_tests_counts(
    op: str, size: int, ranks: int, count: int, in_numel: int, out_numel: int, used: int
) -> None:
    shape = op_shape(op, size, ranks)
    assert shape is not None
    assert (shape.count, shape.in_numel, shape.out_numel, shape.size) == (count, in_numel, out_numel, used)


def test_too_small_sizes_are_skipped() -> None:
    assert op_shape("all_gather", 8, 4) is None
    assert op_shape("all_reduce", 2, 4) is None


def test_summarise_across_ranks_uses_average_time_and_names_slowest() -> None:
    shape = op_shape("all_reduce", 1_000_000, 3)
    assert shape is not None
    row = summarise("all_reduce", shape, {0: (0.001, 0), 1: (0.003, 1), 2: (0.002, 2)}, iters=4)
    assert row.time_avg_s == pytest.approx(0.002)
    assert (row.time_min_s, row.time_max_s, row.slowest_rank, row.wrong) == (0.001, 0.003, 1, 3)
    assert row.algbw == pytest.approx(1_000_000 / 0.002)
    unchecked = summarise("broadcast", op_shape("broadcast", 64, 3), {0: (1.0, None), 1: (1.0, 0)}, iters=1)
    assert unchecked.wrong is None and unchecked.root == 0


def test_table_has_nccl_tests_header_rows_and_footer() -> None:
    shape = op_shape("all_reduce", 1 << 20, 4)
    rows = [summarise("all_reduce", shape, {r: (0.0005, 0) for r in range(4)}, iters=10)]
    bad = summarise("all_reduce", op_shape("all_reduce", 1 << 10, 4), {r: (5e-5, r == 2) for r in range(4)}, 3)
    text = format_table([*rows, bad], "all_reduce")
    lines = text.splitlines()
    assert lines[2].startswith("#       size         count      type   redop    root     time   algbw   busbw #wrong")
    assert lines[4].split()[:9] == ["1048576", "262144", "float", "sum", "-1", "500.0", "2.10", "3.15", "0"]
    assert lines[5].split()[8] == "1"
    assert "# Out of bounds values : 1 FAILED" in text
    assert "# Avg bus bandwidth" in text


# --- the element checks: expected values vs a brute-force simulation ------------------------------------

torch = pytest.importorskip("torch")


def _simulate(op: str, inputs: list[list[float]], ranks: int) -> list[list[float]]:
    """Each rank's output of ``op`` computed element by element from every rank's input."""
    n = len(inputs[0])
    if op == "all_reduce":
        total = [sum(inputs[r][i] for r in range(ranks)) for i in range(n)]
        return [list(total) for _ in range(ranks)]
    if op == "broadcast":
        return [list(inputs[0]) for _ in range(ranks)]
    if op == "all_gather":
        gathered = [x for r in range(ranks) for x in inputs[r]]
        return [list(gathered) for _ in range(ranks)]
    if op == "reduce_scatter":
        chunk = n // ranks
        return [[sum(inputs[r][q * chunk + j] for r in range(ranks)) for j in range(chunk)] for q in range(ranks)]
    if op == "all_to_all":
        chunk = n // ranks
        return [[inputs[r][q * chunk + j] for r in range(ranks) for j in range(chunk)] for q in range(ranks)]
    raise AssertionError(op)


@pytest.mark.parametrize("op", ["all_reduce", "broadcast", "all_gather", "reduce_scatter", "all_to_all"])
@pytest.mark.parametrize("ranks", [1, 3, 4])
def test_expected_values_match_a_simulation(op: str, ranks: int) -> None:
    from syncdoctor.probe.collectives import expected_values, fill_values

    shape = op_shape(op, 4 * 37 * ranks, ranks)
    assert shape is not None
    inputs = [fill_values(r, shape.in_numel).tolist() for r in range(ranks)]
    outputs = _simulate(op, inputs, ranks)
    for rank in range(ranks):
        assert expected_values(op, rank, ranks, shape).tolist() == outputs[rank]


def test_fill_values_differ_per_rank_and_stay_exact() -> None:
    from syncdoctor.probe.collectives import fill_values

    assert fill_values(0, 4).tolist() == [32.0, 33.0, 34.0, 35.0]
    assert fill_values(1, 2, offset=30).tolist() == [94.0, 64.0]
    assert fill_values(3, 8).tolist() != fill_values(4, 8).tolist()
