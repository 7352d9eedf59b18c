# syntax=docker/dockerfile:1
# Lorekeeper in one image: `lorekeeper bot` by default, and its other commands (`lore ingest`, `analyze`, `play`).
#   docker build -t lorekeeper .
#   docker build -t lorekeeper --build-arg EXTRAS=local .   # also the offline model: compiles llama-cpp-python
#                                                           # from source, about 9 minutes on 2 cores
# Settings come from the environment (docker run --env-file .env, or docker-compose.yml); .env.example lists them.

FROM python:3.11-slim AS build
ARG EXTRAS=""
# A compiler for any dependency without a wheel for this platform; cmake too for llama-cpp-python (EXTRAS=local).
RUN apt-get update \
    && apt-get install -y --no-install-recommends build-essential ${EXTRAS:+cmake} \
    && rm -rf /var/lib/apt/lists/*
RUN python -m venv /opt/lorekeeper
ENV PATH=/opt/lorekeeper/bin:$PATH PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1
WORKDIR /app
# Installed as ./run installs it (editable, from the repository's layout), so the shipped corpus is found beside the
# code with no setting to keep right: a .env copied from .env.example sets LOREKEEPER_CORPUS to empty.
COPY pyproject.toml README.md LICENSE ./
COPY engine engine
COPY bot bot
RUN pip install --upgrade pip && pip install -e ".${EXTRAS:+[$EXTRAS]}"

FROM python:3.11-slim
ARG EXTRAS=""
# llama.cpp's OpenMP runtime, for the offline model only.
RUN if [ -n "$EXTRAS" ]; then apt-get update && apt-get install -y --no-install-recommends libgomp1 \
    && rm -rf /var/lib/apt/lists/*; fi
COPY --from=build /opt/lorekeeper /opt/lorekeeper
COPY --from=build /app /app
# The shipped adventures and lore (mount your own folder over /app/corpus, or set LOREKEEPER_CORPUS).
COPY corpus /app/corpus
# The database and the lore index in /data, one volume: enough for a single process on SQLite with Chroma
# embedded. For several processes: LOREKEEPER_DB=postgresql://... and CHROMA_HOST (see docker-compose.yml).
ENV PATH=/opt/lorekeeper/bin:$PATH PYTHONUNBUFFERED=1 \
    LOREKEEPER_DB=/data/lorekeeper.db LOREKEEPER_LORE_DIR=/data/lore
# Not root; /data and /data/lore are made here so a new named volume mounted on either starts writable by it.
RUN useradd --create-home --uid 10001 lorekeeper && mkdir -p /data/lore && chown -R lorekeeper /data
USER lorekeeper
WORKDIR /data
ENTRYPOINT ["lorekeeper"]
CMD ["bot"]
