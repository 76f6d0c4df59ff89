"""What the zero-code start-up hook (syncdoctor-watch.pth) costs every Python start, side by side in one run.

Run:
    .venv/bin/python benchmarks/bench_autowatch.py [--runs N]

Three interpreters start in turn, interleaved, ``--runs`` times each (``python -S -c ...``, adding one site
directory the way site.py adds site-packages, so only that directory differs):

* ``without``: an empty site directory (no hook);
* ``hook off``: a site directory holding the installed hook, ``SYNCDOCTOR_WATCH`` unset: what every Python
  process on the machine pays;
* ``hook on``: the same with ``SYNCDOCTOR_WATCH=1``: the hook imports syncdoctor.autowatch and places its
  import hook (no torch).

Prints the median and p90 start-up time of each and the differences. docs/performance.md ("Zero-code
watching") records a run.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import sysconfig
import tempfile
import time
from pathlib import Path

from syncdoctor.autowatch import PTH_LINE, PTH_NAME


def _start(site_dir: Path, env: dict[str, str]) -> float:
    code = f"import site; site.addsitedir({str(site_dir)!r})"
    begin = time.perf_counter()
    subprocess.run([sys.executable, "-S", "-c", code], env=env, check=True)
    return time.perf_counter() - begin


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=200)
    args = parser.parse_args()
    installed = Path(sysconfig.get_paths()["purelib"]) / PTH_NAME
    line = installed.read_text() if installed.is_file() else PTH_LINE + "\n"
    base = {k: v for k, v in os.environ.items() if not k.startswith("SYNCDOCTOR_")}
    # the package itself must stay importable under -S when the hook is on: the source tree on PYTHONPATH
    base["PYTHONPATH"] = str(Path(__file__).resolve().parents[1] / "src")
    with tempfile.TemporaryDirectory() as tmp:
        empty, hooked = Path(tmp, "empty"), Path(tmp, "hooked")
        empty.mkdir()
        hooked.mkdir()
        (hooked / PTH_NAME).write_text(line)
        cases = {"without": (empty, base), "hook off": (hooked, base),
                 "hook on": (hooked, {**base, "SYNCDOCTOR_WATCH": "1"})}
        times: dict[str, list[float]] = {name: [] for name in cases}
        for site_dir, env in cases.values():  # warm the page cache
            _start(site_dir, env)
        for _ in range(args.runs):
            for name, (site_dir, env) in cases.items():
                times[name].append(_start(site_dir, env))
    median = {name: statistics.median(values) for name, values in times.items()}
    for name, values in times.items():
        p90 = statistics.quantiles(values, n=10)[-1]
        print(f"{name:9s} median {median[name] * 1e3:7.2f} ms  p90 {p90 * 1e3:7.2f} ms  ({len(values)} starts)")
    off = median["hook off"] - median["without"]
    on = median["hook on"] - median["without"]
    print(f"hook off - without: {off * 1e3:+.2f} ms ({off / median['without']:+.1%}); "
          f"hook on - without: {on * 1e3:+.2f} ms ({on / median['without']:+.1%})")


if __name__ == "__main__":
    main()
