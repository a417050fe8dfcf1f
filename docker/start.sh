#!/bin/sh
# The image's entry point: the app on all interfaces, port 8501 (PORT overrides).
set -eu
# Give freed blocks over 1 MB back to the system at once: attention arrays are tens of MB and
# glibc would otherwise keep 100-150 MB of freed memory in the server (bench/results_browser.md).
export MALLOC_MMAP_THRESHOLD_="${MALLOC_MMAP_THRESHOLD_:-1048576}"
# --browser.serverAddress: the address to print (the host maps the port to its localhost). Without
# it a headless Streamlit asks checkip.amazonaws.com for an "External URL" at every start, which
# in an offline classroom costs two timeouts and a warning.
exec python -m streamlit run app.py --server.address=0.0.0.0 --server.port="${PORT:-8501}" \
  --browser.serverAddress=localhost "$@"
