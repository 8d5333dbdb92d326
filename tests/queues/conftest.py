from fakeapi.fixtures import fake_api, kube_client

__all__ = ["fake_api", "kube_client"]
