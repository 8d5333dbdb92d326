"""The service-account stand-in: every active namespace has its ``default`` ServiceAccount, as
kube-controller-manager keeps one there (``kubectl get sa`` on a cluster shows it)."""

from __future__ import annotations

from fakeapi.fixtures import FakeApi
from sandbox_support import kube

from sandbox.standins import Standins
from scheduler.kube import KubeApiError
from tests.eventually import eventually


async def test_each_namespace_gets_its_default_service_account_back(fake_api: FakeApi) -> None:
    async with kube(fake_api) as client, Standins(client, jobset=False, job=False, binder=False, runner=False):
        await client.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "newcomer"}})

        async def account(namespace: str) -> bool:
            try:
                await client.get("ServiceAccount", "default", namespace)
            except KubeApiError:
                return False
            return True

        for namespace in ("default", "kube-system", "newcomer"):
            await eventually(lambda ns=namespace: account(ns), what=f"the default ServiceAccount of {namespace}")
        await client.delete("ServiceAccount", "default", "newcomer")
        await eventually(lambda: account("newcomer"), what="the default ServiceAccount made again")
        others = await client.list("ServiceAccount", "newcomer")
        assert [a["metadata"]["name"] for a in others.items] == ["default"]
