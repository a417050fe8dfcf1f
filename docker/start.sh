#!/bin/sh
# The image's entry point: the app on all interfaces, port 8501 (PORT overrides).
set -eu
exec python -m streamlit run app.py --server.address=0.0.0.0 --server.port="${PORT:-8501}" "$@"
