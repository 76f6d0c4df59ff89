#!/bin/sh
# Make sure the real launchers of tests/test_launchers_lab.py are there: Slurm (Debian's slurm-wlm, with
# munge) and Open MPI (openmpi-bin). Installs them with apt-get when they are missing and we are root;
# otherwise says why and leaves it: those tests then skip with that reason. Never fails the caller (exit 0).
set -u
if command -v srun >/dev/null 2>&1 && command -v slurmd >/dev/null 2>&1 && command -v munged >/dev/null 2>&1 \
    && command -v mpirun >/dev/null 2>&1; then
    exit 0
fi
if [ "$(id -u)" != "0" ] || ! command -v apt-get >/dev/null 2>&1; then
    echo "ensure-launchers: no Slurm/Open MPI and no root apt-get here; the launcher lab tests will be skipped" >&2
    exit 0
fi
echo "ensure-launchers: installing Debian's slurm-wlm, munge and openmpi-bin for the launcher lab tests" >&2
export DEBIAN_FRONTEND=noninteractive
packages="slurm-wlm munge openmpi-bin"
if ! apt-get install -y -q --no-install-recommends $packages >/tmp/ensure-launchers.log 2>&1; then
    apt-get update -q >>/tmp/ensure-launchers.log 2>&1 || true
    apt-get install -y -q --no-install-recommends $packages >>/tmp/ensure-launchers.log 2>&1 || \
        echo "ensure-launchers: apt-get could not install $packages (see /tmp/ensure-launchers.log); the launcher lab tests will be skipped" >&2
fi
exit 0
