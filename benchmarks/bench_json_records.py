"""Throughput of ``syncdoctor analyze`` on a log of a collector's JSON records (Docker's json-file driver: one
``{"log": …, "stream": …, "time": …}`` object per line), measured side by side with the same lines as plain text in
the same run.

    .venv/bin/python benchmarks/bench_json_records.py               # 200k lines of training output (about 36 MB)
    .venv/bin/python benchmarks/bench_json_records.py --lines 20000 # quick

The records are decoded line by line before the scanner sees them (analyze.paste.unjsoned), so the ratio says what
that costs against a text log of the same lines; at the end rank 3 runs out of GPU memory, and both analyses must name
it, or the run fails.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

from syncdoctor.analyze import analyze_paths


def _write(folder: Path, lines: int) -> tuple[Path, Path]:
    rng = random.Random(7)
    text = [f"[rank{i % 8}]: step {i} loss {rng.random():.4f} lr 1e-4 throughput {rng.uniform(900, 1300):.1f} tokens/s"
            for i in range(lines)]
    text.append("[rank3]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.")
    plain, records = folder / "train.log", folder / "train-json.log"
    plain.write_text("".join(line + "\n" for line in text))
    records.write_text("".join(json.dumps({"log": line + "\n", "stream": "stderr" if "Error" in line else "stdout",
                                           "time": f"2024-05-01T10:{n // 60 % 60:02d}:{n % 60:02d}.123456789Z"}) + "\n"
                               for n, line in enumerate(text)))
    return plain, records


def _rate(path: Path, runs: int) -> tuple[float, list[float]]:
    rates = []
    for _ in range(runs):
        start = time.perf_counter()
        top = analyze_paths([str(path)]).diagnosis.hypotheses[0]
        rates.append(path.stat().st_size / 1e6 / (time.perf_counter() - start))
        if top.culprit_ranks != (3,):
            sys.exit(f"{path.name}: the analysis did not name rank 3 ({top.title})")
    return statistics.median(rates), rates


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--lines", type=int, default=200_000)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        plain, records = _write(Path(tmp), args.lines)
        text_rate, text_runs = _rate(plain, args.runs)
        json_rate, json_runs = _rate(records, args.runs)
        print(f"text lines:   {plain.stat().st_size / 1e6:.1f} MB, median {text_rate:.0f} MB/s "
              f"{[round(r) for r in text_runs]}")
        print(f"JSON records: {records.stat().st_size / 1e6:.1f} MB, median {json_rate:.0f} MB/s "
              f"{[round(r) for r in json_runs]}")
        # the same lines: the time per line compared, not per byte (a record is about twice its line's size)
        per_line = (records.stat().st_size / json_rate) / (plain.stat().st_size / text_rate)
        print(f"time for the same lines, records/text: {per_line:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
