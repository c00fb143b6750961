# The policyext extender image: `policyext serve`, as the Helm chart runs it.
# Build: docker build -t policyext:0.1.0 .

# The interpreter the tests run on; the same base in both stages keeps the venv's paths valid.
FROM python:3.11-slim-bookworm AS build
WORKDIR /src
RUN python -m venv /opt/policyext
COPY pyproject.toml setup.cfg README.md ./
COPY policyext ./policyext
# gunicorn_h1c (gunicorn's C request parser) may come as source only: the compiler stays in
# this stage, and only the built venv reaches the image
RUN apt-get update \
 && apt-get install -y --no-install-recommends gcc libc6-dev \
 && rm -rf /var/lib/apt/lists/*
RUN /opt/policyext/bin/pip install --no-cache-dir --upgrade pip \
 && /opt/policyext/bin/pip install --no-cache-dir .

FROM python:3.11-slim-bookworm
COPY --from=build /opt/policyext /opt/policyext
ENV PATH=/opt/policyext/bin:$PATH \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1
# the chart's runAsUser; numeric, so that runAsNonRoot can verify it
USER 65532:65532
EXPOSE 8888
ENTRYPOINT ["policyext", "serve"]
