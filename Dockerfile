# The policyext extender image: `policyext serve`, as the Helm chart runs it.
# Build: docker build -t policyext:0.1.0 .
#
# Supply chain: the base image is pinned by digest (a tag moves; a digest is one image), and
# pip installs exactly the versions of constraints.txt, the ones the tests ran with
# (tests/image/test_supply_chain.py keeps them within setup.cfg's ranges).
# The digest below is the one the python image's maintainers published for
# python:3.11-slim-bookworm on 2024-04-25 (docker-library/python issue 923): the newest this
# repository could check without access to the registry. It is old: refresh it before
# building a release (`make base-digest` asks the registry for the tag's current digest and
# rewrites both FROM lines), and again whenever the base image gets security fixes.

# The interpreter the tests run on; the same base in both stages keeps the venv's paths valid.
FROM python:3.11-slim-bookworm@sha256:6d2502238109c929569ae99355e28890c438cb11bc88ef02cd189c173b3db07c AS build
WORKDIR /src
RUN python -m venv /opt/policyext
COPY constraints.txt pyproject.toml setup.cfg README.md ./
COPY policyext ./policyext
# gunicorn_h1c (gunicorn's C request parser) may come as source only: the compiler stays in
# this stage, and only the built venv reaches the image
RUN apt-get update \
 && apt-get install -y --no-install-recommends gcc libc6-dev \
 && rm -rf /var/lib/apt/lists/*
RUN /opt/policyext/bin/pip install --no-cache-dir -c constraints.txt --upgrade pip \
 && /opt/policyext/bin/pip install --no-cache-dir -c constraints.txt .

FROM python:3.11-slim-bookworm@sha256:6d2502238109c929569ae99355e28890c438cb11bc88ef02cd189c173b3db07c
COPY --from=build /opt/policyext /opt/policyext
ENV PATH=/opt/policyext/bin:$PATH \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1
# the chart's runAsUser; numeric, so that runAsNonRoot can verify it
USER 65532:65532
# the verbs (--bind) and the operations endpoints (the chart's --ops-bind)
EXPOSE 8888 8889
ENTRYPOINT ["policyext", "serve"]
