# syntax=docker/dockerfile:1
# The trainyard service image: `trainyard serve` (admission webhook + controllers).
#   docker build -t ghcr.io/trainyard/trainyard:0.1.0 .
# It holds the service's dependency set only: the project without its `train` extra, so no torch
# (the service never trains; torch is imported only by processes that do).
# The base by digest, not by tag (a tag moves; a digest names one image): python:3.11-slim as
# docker-library/repo-info records it (repos/python/remote/3.11-slim.md: the image index of
# CPython 3.11.15 on Debian trixie, with setuptools 79.0.1 and wheel 0.46.3, for amd64, arm64 and
# more). To take a newer base, read the tag's current index digest there (or from
# `docker buildx imagetools inspect python:3.11-slim`) and change it here.
FROM python:3.11-slim@sha256:90744cff8f32887f075c47d747a173ff333e9e98801667af93c357fa9f5e28ff

ENV PYTHONUNBUFFERED=1 \
    PYTHONDONTWRITEBYTECODE=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1

# The source is bind-mounted for the install only (BuildKit), so no layer keeps it; the mount is
# writable because setuptools writes its build directory beside the sources (the writes are dropped).
# Every third-party package comes from image-requirements.txt, pinned and checked against its
# sha256 (--require-hashes); trainyard itself is then built with that file's setuptools and
# installed without resolving anything (--no-deps --no-build-isolation), and `pip check` fails the
# build if the lock file misses a dependency.
# tests/deploy/test_image_install.py runs these very commands in a fresh virtualenv.
RUN --mount=type=bind,source=.,target=/src,rw \
    pip install --no-cache-dir --require-hashes --no-deps -r /src/image-requirements.txt \
    && pip install --no-cache-dir --no-deps --no-build-isolation /src \
    && pip check

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
