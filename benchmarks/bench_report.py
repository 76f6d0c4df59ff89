"""HTML report size and speed from 2 to 1024 ranks, side by side in one run.

For each input (synthetic, of the producers' own shapes: :mod:`syncdoctor.report.synthetic`) it prints the
JSON and HTML sizes and their ratio, the render time against ``json.dumps`` of the same data (the cheapest
thing one can do with it), and, when Chromium is installed, the time headless Chromium takes to load and
lay out the page against the smallest page of the same kind.

    .venv/bin/python benchmarks/bench_report.py [--runs 5] [--nodes-1024]

``--nodes-1024`` adds a probe of 1024 single-rank nodes (523,776 links, a 150 MB JSON; about a minute).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from syncdoctor.report import synthetic
from syncdoctor.report.html import render_analyze_html, render_probe_html, render_watch_html

ROOT = Path(__file__).resolve().parents[1]


def median_ms(call: Callable[[], Any], runs: int) -> float:
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        call()
        times.append(time.perf_counter() - started)
    return statistics.median(times) * 1e3


def cases(big: bool) -> list[tuple[str, str, Any, Callable[[Any], str]]]:
    out: list[tuple[str, str, Any, Callable[[Any], str]]] = [
        ("probe", "2 nodes x 2 ranks", synthetic.probe_document(2, 2, slow_node=1), render_probe_html),
        ("probe", "16 nodes x 8 ranks", synthetic.probe_document(16, 8, slow_node=5, analyse=False), render_probe_html),
        ("probe", "128 nodes x 8 ranks", synthetic.probe_document(128, 8, slow_node=77, late_node=5, analyse=False),
         render_probe_html),
    ]
    if big:
        out.append(("probe", "1024 nodes x 1 rank", synthetic.probe_document(1024, 1, slow_node=700, analyse=False,
                                                                                sizes=(1 << 20,)), render_probe_html))
    out += [
        ("watch", "16 ranks", synthetic.watch_events(16, straggler=5, late=11, dead=3, ranks_per_host=4),
         render_watch_html),
        ("watch", "1024 ranks", synthetic.watch_events(1024, straggler=517, late=901, dead=33, incidents=40),
         render_watch_html),
        ("analyze", "4 ranks", synthetic.analyze_document(4, culprit=2, ranks_per_host=2), render_analyze_html),
        ("analyze", "1024 ranks", synthetic.analyze_document(1024, culprit=517), render_analyze_html),
    ]
    return out


def browser_ms(pages: list[Path], runs: int) -> list[float] | None:
    sys.path.insert(0, str(ROOT / "tests" / "browser"))
    try:
        from cdp import CHROMIUM, Chromium
    except ImportError:
        return None
    if CHROMIUM is None:
        return None
    out = []
    with Chromium(CHROMIUM) as browser:
        browser.load(pages[0].as_uri())  # warm up
        for page in pages:
            def load(url: str = page.as_uri()) -> None:
                browser.load(url)
                browser.evaluate("document.body.getBoundingClientRect().height")  # layout done
            out.append(median_ms(load, runs))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--nodes-1024", action="store_true")
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as temp:
        pages = []
        for index, (kind, label, data, render) in enumerate(cases(args.nodes_1024)):
            text = json.dumps(data)
            page = render(data)
            path = Path(temp) / f"{index}.html"
            path.write_text(page)
            pages.append(path)
            render_t = median_ms(lambda data=data, render=render: render(data), args.runs)
            dumps_t = median_ms(lambda data=data: json.dumps(data), args.runs)
            rows.append([kind, label, len(text), len(page.encode()), render_t, dumps_t])
        loads = browser_ms(pages, args.runs)
    print(f"{'report':<8} {'input':<22} {'JSON':>10} {'HTML':>9} {'HTML/JSON':>9} {'render':>9} {'dumps':>8} "
          f"{'render/dumps':>12} {'Chromium load':>14} {'load/smallest':>13}")
    smallest: dict[str, float] = {}
    for index, (kind, label, json_size, html_size, render_t, dumps_t) in enumerate(rows):
        load = loads[index] if loads else None
        if load is not None:
            smallest.setdefault(kind, load)
        load_text = f"{load:11.0f} ms" if load is not None else "           -"
        ratio = f"{load / smallest[kind]:12.2f}x" if load is not None else "            -"
        print(f"{kind:<8} {label:<22} {json_size / 1024:8.0f} KB {html_size / 1024:6.0f} KB {html_size / json_size:9.2f} "
              f"{render_t:6.0f} ms {dumps_t:5.0f} ms {render_t / dumps_t:11.1f}x {load_text} {ratio}")
    if loads is None:
        print("(no Chromium: install Debian's chromium, or run scripts/ensure-chromium.sh, for the load column)")


if __name__ == "__main__":
    main()
