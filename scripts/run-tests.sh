#!/bin/sh
# The suite in two streams at once: the lab's real multi-host jobs (marked slow: most of their time is spent
# waiting on timeouts and thresholds, not on the CPU) and everything else (parsers, rules, the corpus, reports).
# The second stream's output is kept in a file and printed after the first's. Then the tests that measure the CPU
# share of their own threads, or the watcher's timing within a bound (marked alone), run by themselves. The exit status is the worst of the three runs
# (pytest's 5, nothing collected, is no failure). Arguments go to every pytest run (PYTEST_ARGS of the Makefile).
set -u
PY=${PY:-.venv/bin/python}
log=$(mktemp "${TMPDIR:-/tmp}/syncdoctor-tests.XXXXXX")
trap 'rm -f "$log"' EXIT
"$PY" -m pytest -q -m "not slow and not alone" "$@" >"$log" 2>&1 &
other=$!
"$PY" -m pytest -q -m "slow and not alone" "$@"
lab=$?
wait "$other"
rest=$?
echo "---- tests not marked slow (run alongside the lab's) ----"
cat "$log"
echo "---- tests marked alone (run by themselves) ----"
"$PY" -m pytest -q -m alone "$@"
alone=$?
status=0
for code in "$lab" "$rest" "$alone"; do
    if [ "$code" -ne 0 ] && [ "$code" -ne 5 ] && [ "$status" -eq 0 ]; then
        status=$code
    fi
done
exit "$status"
