#!/bin/sh
# The suite in two streams at once: the lab's real multi-host jobs (marked slow: most of their time is spent
# waiting on timeouts and thresholds, not on the CPU) and everything else (parsers, rules, the corpus, reports).
# The second stream's output is kept in a file and printed after the first's; the exit status is the worse of the
# two. Arguments go to both pytest runs (PYTEST_ARGS of the Makefile).
set -u
PY=${PY:-.venv/bin/python}
log=$(mktemp "${TMPDIR:-/tmp}/syncdoctor-tests.XXXXXX")
trap 'rm -f "$log"' EXIT
"$PY" -m pytest -q -m "not slow" "$@" >"$log" 2>&1 &
other=$!
"$PY" -m pytest -q -m slow "$@"
lab=$?
wait "$other"
rest=$?
echo "---- tests not marked slow (run alongside the lab's) ----"
cat "$log"
[ "$lab" -eq 0 ] && [ "$rest" -eq 0 ] && exit 0
# pytest's 5 (nothing collected) in one stream is no failure when the other ran
[ "$lab" -eq 5 ] && [ "$rest" -eq 0 ] && exit 0
[ "$rest" -eq 5 ] && [ "$lab" -eq 0 ] && exit 0
[ "$lab" -ne 0 ] && [ "$lab" -ne 5 ] && exit "$lab"
exit "$rest"
