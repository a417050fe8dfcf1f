#!/bin/sh
# The image's install step, kept in a script so CI can run the very same commands in a fresh
# virtual environment (this machine has no Docker engine).
#   TORCH_INDEX_URL  where torch comes from: the CPU wheel index by default; set a CUDA index
#                    (e.g. https://download.pytorch.org/whl/cu128) for a GPU image, or empty
#                    to take torch from PyPI.
#   PIP              the pip to use (default: pip)
set -eu
PIP=${PIP:-pip}
TORCH_INDEX_URL=${TORCH_INDEX_URL-https://download.pytorch.org/whl/cpu}
torch_pin=$(grep -E '^torch==' requirements.txt)
if [ -n "$TORCH_INDEX_URL" ]; then
  $PIP install --no-cache-dir --index-url "$TORCH_INDEX_URL" "$torch_pin"
fi
$PIP install --no-cache-dir -r requirements.txt
