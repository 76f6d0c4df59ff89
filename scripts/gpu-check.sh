#!/bin/sh
# The GPU checks, in one short run on a machine with one CUDA GPU (a few minutes):
#   1. host facts and `syncdoctor check` on that host;
#   2. a watched 1-rank NCCL job (scripts/gpu_nccl_diag.py): Flight Recorder status on NCCL, the watcher's
#      readings, a collective held back on the GPU, full dumps;
#   3. a 1-rank NCCL job whose all_reduce outlives a 5 s timeout (scripts/gpu_nccl_timeout.py): real
#      watchdog lines, the dump on timeout, the watcher's event before it;
#   4. NCCL_SOCKET_IFNAME naming no interface: real NCCL WARN lines;
#   5. failures one GPU can produce (scripts/gpu_failures.py): two ranks on one GPU, more ranks than GPUs, NCCL_NET
#      naming a missing or absent transport, an NCCL_COMM_ID that is no address, no GPU visible, NCCL set up with
#      the GPU's memory full, a device-side assert met by the watchdog, an NCCL_ALGO NCCL does not know, IPv6 sockets
#      asked for, the loopback interface named, a training step out of memory; five again without NCCL_DEBUG;
#   5b. `syncdoctor analyze` on 2-5; 6. `syncdoctor probe --backend nccl --local 1 --quick`;
#   7. benchmarks/bench_watch_overhead.py with a core per rank.
# Usage: sh scripts/gpu-check.sh OUTDIR [BENCH_SECONDS]   (python3 must have torch with CUDA, rich, psutil)
#   PARTS="diag timeout analyze bench" runs only those steps (default: all); BENCH_ARGS adds benchmark options.
# Every step is bounded by `timeout` and goes on after a failure; OUTDIR/work.tar.gz holds the logs, dumps
# and reports, OUTDIR/summary.txt what each step printed.
set -u
OUT=${1:?usage: gpu-check.sh OUTDIR [BENCH_SECONDS]}
BENCH_S=${2:-170}
PARTS=${PARTS:-"facts check diag timeout ifname failures analyze probe bench"}
want() { case " $PARTS " in *" $1 "*) return 0 ;; *) return 1 ;; esac; }
W=$(mktemp -d)
export PYTHONPATH="$PWD/src${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1 DIAG_OUT="$W"
PY=${PYTHON:-python3}
S="$OUT/summary.txt"
mkdir -p "$OUT"
step() { echo "=== $1 ($(date +%T))" | tee -a "$S"; }

if want facts; then
step facts
{ nvidia-smi -L; nproc; uptime; $PY -c 'import torch, sys; print(sys.version.split()[0], torch.__version__, torch.version.cuda, torch.cuda.nccl.version(), torch.cuda.get_device_name(0))'; ip -br addr; } >>"$S" 2>&1
fi
if want check; then
step check
timeout 60 $PY -m syncdoctor check --import-torch --no-network >"$W/check.txt" 2>&1; echo "exit $?" >>"$W/check.txt"
timeout 60 $PY -m syncdoctor check --import-torch --no-network --json >"$W/check.json" 2>>"$W/check.txt"
tail -40 "$W/check.txt" >>"$S"

fi
if want diag; then
step "diag (watched 1-rank NCCL job)"
NCCL_DEBUG=INFO timeout 150 $PY -m torch.distributed.run --nproc-per-node 1 --master-port 29611 \
    scripts/gpu_nccl_diag.py >"$W/diag.log" 2>&1; echo "exit $?" >>"$W/diag.log"
grep -a '^DIAG\|^exit\|Error\|error' "$W/diag.log" | cut -c1-1500 >>"$S"

fi
if want timeout; then
step "timeout (all_reduce held past a 5 s timeout)"
mkdir -p "$W/dumps"
NCCL_DEBUG=INFO TORCH_NCCL_DUMP_ON_TIMEOUT=1 TORCH_NCCL_DEBUG_INFO_TEMP_FILE="$W/dumps/nccl_trace_rank_" \
    TORCH_FR_BUFFER_SIZE=2000 timeout ${TIMEOUT_JOB_S:-120} $PY -m torch.distributed.run --nproc-per-node 1 \
    --master-port 29612 scripts/gpu_nccl_timeout.py >"$W/timeout.log" 2>&1; echo "exit $?" >>"$W/timeout.log"
grep -a -v 'NCCL INFO' "$W/timeout.log" | cut -c1-600 | tail -60 >>"$S"
ls -la "$W/dumps" >>"$S" 2>&1

fi
if want ifname; then
step "NCCL_SOCKET_IFNAME naming no interface"
cat >"$W/ifname.py" <<'EOF'
import os, torch, torch.distributed as dist
dist.init_process_group("nccl")
t = torch.ones(4, device=f"cuda:{os.environ.get('LOCAL_RANK', '0')}")
dist.all_reduce(t)
torch.cuda.synchronize()
print("all_reduce completed", t.tolist())
EOF
NCCL_DEBUG=INFO NCCL_SOCKET_IFNAME=nosuch0 timeout 60 $PY -m torch.distributed.run --nproc-per-node 1 \
    --master-port 29613 "$W/ifname.py" >"$W/ifname.log" 2>&1; echo "exit $?" >>"$W/ifname.log"
grep -a -v 'NCCL INFO' "$W/ifname.log" | cut -c1-600 | tail -30 >>"$S"

fi
if want failures; then
step "failures one GPU can produce (scripts/gpu_failures.py)"
port=29620
fail() {  # fail NAME NPROC MODE [VAR=VALUE...]: one torchrun job of gpu_failures.py, bounded
    name=$1 nproc=$2 mode=$3; shift 3
    port=$((port + 1))
    env ${FAIL_ENV:-NCCL_DEBUG=INFO} "$@" timeout ${FAIL_JOB_S:-90} $PY -m torch.distributed.run --nproc-per-node "$nproc" \
        --master-port $port scripts/gpu_failures.py "$mode" >"$W/fail-$name.log" 2>&1
    echo "exit $?" >>"$W/fail-$name.log"
    echo "--- $name: $*" >>"$S"; grep -a -v 'NCCL INFO' "$W/fail-$name.log" | cut -c1-400 | tail -25 >>"$S"
}
fail dupgpu 2 dupgpu
fail ordinal 2 ordinal
fail netnosuch 1 plain NCCL_NET=nosuch
fail netib 1 plain NCCL_NET=IB
fail commid 1 plain NCCL_COMM_ID=notanaddress
fail nogpu 1 plain CUDA_VISIBLE_DEVICES=
fail oom 1 oom
fail assert 1 assert
fail algo 1 plain NCCL_ALGO=nosuch
fail family6 1 plain NCCL_SOCKET_FAMILY=AF_INET6
fail iflo 1 plain NCCL_SOCKET_IFNAME=lo
fail trainoom 1 trainoom
# the same failures as most jobs log them: without NCCL_DEBUG
FAIL_ENV="-u NCCL_DEBUG"
fail dupgpu-quiet 2 dupgpu
fail netib-quiet 1 plain NCCL_NET=IB
fail oom-quiet 1 oom
fail assert-quiet 1 assert
fail trainoom-quiet 1 trainoom
FAIL_ENV=

fi
if want analyze; then
step analyze
for case in diag timeout ifname $(cd "$W" && ls fail-*.log 2>/dev/null | sed 's/[.]log$//'); do
    [ -f "$W/$case.log" ] || continue
    extra=""
    [ "$case" = timeout ] && extra="$W/dumps"
    timeout 60 $PY -m syncdoctor analyze "$W/$case.log" $extra >"$W/analyze-$case.txt" 2>&1
    echo "exit $?" >>"$W/analyze-$case.txt"
    timeout 60 $PY -m syncdoctor analyze --json "$W/$case.log" $extra >"$W/analyze-$case.json" 2>/dev/null
    echo "--- analyze $case" >>"$S"; head -60 "$W/analyze-$case.txt" >>"$S"
done

fi
if want probe; then
step "probe --backend nccl --local 1 --quick"
timeout 150 $PY -m syncdoctor probe --backend nccl --local 1 --quick --json "$W/probe.json" >"$W/probe.txt" 2>&1
echo "exit $?" >>"$W/probe.txt"
tail -60 "$W/probe.txt" >>"$S"

fi
(cd "$W" && tar czf "$OUT/work.tar.gz" .)
if want bench; then
step "bench_watch_overhead (4 CPU ranks, gloo, ${BENCH_S} s of DDP pairs)"
timeout $((BENCH_S + 240)) $PY benchmarks/bench_watch_overhead.py --pairs 1000 --budget-s "$BENCH_S" ${BENCH_ARGS:-} \
    >"$OUT/bench.txt" 2>&1; echo "exit $?" >>"$OUT/bench.txt"
cat "$OUT/bench.txt" >>"$S"
fi
step done
