#!/usr/bin/env bash
# Create (or update) the virtual environment .venv with adaexplore installed in it.
#
#   ./install.sh          runtime dependencies
#   ./install.sh --dev    also the test and lint tools
#
# Where python3 already has a CUDA build of torch, the environment sees and keeps it (and the Triton
# beside it); elsewhere torch, triton and numpy are pinned by constraints/cpu.txt.
set -euo pipefail
cd "$(dirname "$0")"
python=${PYTHON:-python3}
target="."
[ "${1:-}" = "--dev" ] && target=".[dev]"

if "$python" -c 'import torch, sys; sys.exit(0 if torch.version.cuda else 1)' 2>/dev/null; then
    echo "install.sh: keeping the CUDA torch of $python"
    [ -d .venv ] || "$python" -m venv --system-site-packages .venv
    .venv/bin/python -m pip install -q -e "$target"
else
    [ -d .venv ] || "$python" -m venv .venv
    .venv/bin/python -m pip install -q -c constraints/cpu.txt -e "$target"
fi
echo "install.sh: adaexplore installed in .venv ($(.venv/bin/python -c 'import torch, triton; print("torch", torch.__version__, "triton", triton.__version__)'))"
