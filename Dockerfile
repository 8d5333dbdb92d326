# syntax=docker/dockerfile:1
# The trainyard service image: `trainyard serve` (admission webhook + controllers).
#   docker build -t ghcr.io/trainyard/trainyard:0.1.0 .
# It holds the service's dependency set only: the project without its `train` extra, so no torch
# (the service never trains; torch is imported only by processes that do).
FROM python:3.11-slim

ENV PYTHONUNBUFFERED=1 \
    PYTHONDONTWRITEBYTECODE=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1

# The source is bind-mounted for the install only (BuildKit), so no layer keeps it; the mount is
# writable because setuptools writes its build directory beside the sources (the writes are dropped).
# tests/deploy/test_image_install.py runs this very line in a fresh virtualenv.
RUN --mount=type=bind,source=.,target=/src,rw pip install --no-cache-dir /src

# The built-in ClusterTrainingRuntimes, for `trainyard render` and `trainyard admit` inside the
# image (runtimes.loading looks in ./manifests/runtimes); the service reads runtimes from the cluster.
WORKDIR /opt/trainyard
COPY manifests/runtimes manifests/runtimes

# A numeric user, so the kubelet can check runAsNonRoot; it owns nothing in the image. With a
# read-only root filesystem, /tmp (an emptyDir in the Deployment) is the only writable place.
RUN useradd --uid 10001 --no-create-home --home-dir /tmp --shell /usr/sbin/nologin trainyard
USER 10001:10001
ENV HOME=/tmp \
    TRAINYARD_HOME=/tmp/trainyard

EXPOSE 9443
ENTRYPOINT ["trainyard"]
CMD ["serve", "--help"]
