# syntax=docker/dockerfile:1
# The kind end-to-end's model-server doubles: the operator image (e2e/kind.sh builds it first) plus
# the development test bed, which the operator's wheel does not contain. Never published.
#
#   docker build -f e2e/testbed.Dockerfile --build-arg BASE=modelgate:e2e -t modelgate-testbed:e2e .
ARG BASE=modelgate:e2e
FROM ${BASE}
COPY testbed/ /opt/modelgate-dev/testbed/
ENV PYTHONPATH=/opt/modelgate-dev
