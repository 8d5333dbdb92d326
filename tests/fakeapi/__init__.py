"""pytest fixtures for the fake Kubernetes API server, which lives in ``sandbox.apiserver``.

Use ``from fakeapi.fixtures import fake_api, kube_client`` in a conftest or test module.
"""
