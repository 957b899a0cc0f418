#!/bin/sh
# Make the bench environment: bench/.venv with modelwire (editable) and the peers of
# bench/requirements.txt. Idempotent: reinstalls only when either file changed.
#
#   sh bench/setup_env.sh && bench/.venv/bin/python bench/run.py
set -eu
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
VENV=bench/.venv
STAMP=$VENV/.installed
if [ -f "$STAMP" ] && [ "$STAMP" -nt pyproject.toml ] && [ "$STAMP" -nt bench/requirements.txt ]; then
    exit 0
fi
test -x "$VENV/bin/python" || "$PYTHON" -m venv "$VENV"
"$VENV/bin/python" -m pip install -q --upgrade pip
"$VENV/bin/python" -m pip install -q -e '.[ray,aiohttp,bedrock]' -r bench/requirements.txt
touch "$STAMP"
