#!/bin/bash
# Sourced by pip_install_style.sh (written for preflight's tests), as ModelOpt's conf/arguments.sh is.
set -e
ls /nonexistent/cluster/scratch >/dev/null 2>&1  # a path of its cluster, missing here
PIP_OPTS="--retries 0 --timeout 1 --index-url http://127.0.0.1:9/simple"
pip install ${PIP_OPTS} -r "${SCRIPT_DIR}/requirements-of-a-test-that-does-not-exist.txt"
if [ -z ${LAUNCH_SCRIPT} ]; then
    LAUNCH_SCRIPT="torchrun --nproc_per_node=$((TP * PP))"
fi
