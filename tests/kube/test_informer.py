"""The Informer against the fake API server: list then watch, and every way a watch goes wrong."""

from __future__ import annotations

import asyncio

from fakeapi.fixtures import FakeApi
from kube_support import RecordingSink, fast_settings, flavor, kube, local_queue, running

from scheduler.kube import Informer
from tests.builders import namespace
from tests.eventually import eventually


def rv_of(fake_api: FakeApi, name: str) -> str:
    rtype = fake_api.server.type_of("kueue.x-k8s.io/v1beta2", "ResourceFlavor")
    return str(fake_api.store.get(rtype, None, name)["metadata"]["resourceVersion"])


async def test_lists_then_watches_and_marks_loaded_once(fake_api: FakeApi) -> None:
    fake_api.server.seed(flavor("a"))
    sink = RecordingSink()
    async with kube(fake_api) as client:
        informer = Informer(client, "ResourceFlavor", sink, settings=fast_settings())
        async with running(informer):
            await asyncio.wait_for(informer.synced.wait(), 5)
            assert sink.loaded == 1
            assert sink.names("ResourceFlavor") == {"a"}
            await client.create(flavor("b"))
            await client.patch("ResourceFlavor", "a", {"metadata": {"labels": {"x": "1"}}})
            await client.delete("ResourceFlavor", "b")
            await eventually(lambda: len(sink.calls) == 4, what="three watch events")
    assert [(op, name) for op, _, _, name, _ in sink.calls] == [
        ("apply", "a"),
        ("apply", "b"),
        ("apply", "a"),
        ("delete", "b"),
    ]
    assert sink.objects[("ResourceFlavor", None, "a")]["metadata"]["labels"] == {"x": "1"}
    assert sink.loaded == 1
    assert informer.stats.lists == 1


async def test_410_mid_watch_lists_again_with_no_lost_or_duplicated_events(fake_api: FakeApi) -> None:
    for name in ("keep", "change", "remove"):
        fake_api.server.seed(flavor(name))
    sink = RecordingSink()
    async with kube(fake_api) as client:
        informer = Informer(client, "ResourceFlavor", sink, settings=fast_settings())
        async with running(informer):
            await asyncio.wait_for(informer.synced.wait(), 5)
            await eventually(lambda: fake_api.faults.open_watches == 1, what="the watch")
            sink.calls.clear()
            # While the informer is cut off, history is compacted and the world changes.
            fake_api.faults.expire_watches()
            rtype = fake_api.server.type_of("kueue.x-k8s.io/v1beta2", "ResourceFlavor")
            fake_api.store.patch(
                rtype, None, "change", "application/merge-patch+json", {"spec": {"nodeLabels": {"a": "b"}}}
            )
            fake_api.store.delete(rtype, None, "remove")
            fake_api.server.seed(flavor("new"))
            await eventually(lambda: informer.stats.expired == 1 and informer.stats.lists == 2, what="a re-list")
            await eventually(lambda: len(sink.calls) == 3, what="the reconciled changes")
            # and the watch that follows the re-list carries on
            await client.create(flavor("after"))
            await eventually(lambda: "after" in sink.names("ResourceFlavor"), what="an event after the re-list")
    changes = sorted((op, name) for op, _, _, name, _ in sink.calls)
    assert changes == [("apply", "after"), ("apply", "change"), ("apply", "new"), ("delete", "remove")]
    assert sink.names("ResourceFlavor") == {"keep", "change", "new", "after"}
    assert sink.objects[("ResourceFlavor", None, "change")]["metadata"]["resourceVersion"] == rv_of(fake_api, "change")
    assert sink.loaded == 1


async def test_500s_on_list_back_off_and_retry(fake_api: FakeApi) -> None:
    fake_api.server.seed(flavor("a"))
    fake_api.faults.fail("list", "/resourceflavors", code=500, times=3)
    sink = RecordingSink()
    async with kube(fake_api) as client:
        informer = Informer(client, "ResourceFlavor", sink, settings=fast_settings())
        async with running(informer):
            await asyncio.wait_for(informer.synced.wait(), 5)
    assert informer.stats.errors == 3
    assert informer.stats.lists == 1
    assert sink.names("ResourceFlavor") == {"a"}


async def test_a_failed_watch_resumes_from_the_last_revision_without_listing(fake_api: FakeApi) -> None:
    sink = RecordingSink()
    async with kube(fake_api) as client:
        informer = Informer(client, "ResourceFlavor", sink, settings=fast_settings())
        fake_api.faults.fail("watch", "/resourceflavors", code=503, times=2)
        async with running(informer):
            await asyncio.wait_for(informer.synced.wait(), 5)
            await client.create(flavor("a"))
            await eventually(lambda: "a" in sink.names("ResourceFlavor"), what="the created flavor")
    assert informer.stats.errors == 2
    assert informer.stats.lists == 1


async def test_a_dropped_stream_is_watched_again_and_misses_nothing(fake_api: FakeApi) -> None:
    sink = RecordingSink()
    async with kube(fake_api) as client:
        informer = Informer(client, "ResourceFlavor", sink, settings=fast_settings())
        async with running(informer):
            await asyncio.wait_for(informer.synced.wait(), 5)
            await eventually(lambda: fake_api.faults.open_watches == 1, what="the watch")
            fake_api.faults.close_watches(abrupt=True)
            fake_api.server.seed(flavor("while-away"))
            await eventually(lambda: "while-away" in sink.names("ResourceFlavor"), what="the missed event")
            await eventually(lambda: fake_api.faults.open_watches == 1, what="the watch again")
            fake_api.faults.close_watches()  # a clean end (timeoutSeconds) too
            fake_api.server.seed(flavor("later"))
            await eventually(lambda: "later" in sink.names("ResourceFlavor"), what="the event after a clean end")
    assert informer.stats.lists == 1
    assert informer.stats.watches >= 3
    assert [name for op, _, _, name, _ in sink.calls] == ["while-away", "later"]


async def test_a_stuck_watch_is_restarted_after_the_inactivity_timeout(fake_api: FakeApi) -> None:
    sink = RecordingSink()
    async with kube(fake_api) as client:
        informer = Informer(client, "ResourceFlavor", sink, settings=fast_settings(inactivity_timeout=0.3))
        async with running(informer):
            await asyncio.wait_for(informer.synced.wait(), 5)
            await eventually(lambda: fake_api.faults.open_watches == 1, what="the watch")
            fake_api.faults.stall_watches()
            fake_api.server.seed(flavor("lost-on-the-stuck-stream"))
            await eventually(lambda: "lost-on-the-stuck-stream" in sink.names("ResourceFlavor"), what="recovery")
    assert informer.stats.inactive >= 1
    assert informer.stats.lists == 1


async def test_server_side_timeout_restarts_the_watch(fake_api: FakeApi) -> None:
    sink = RecordingSink()
    async with kube(fake_api) as client:
        informer = Informer(client, "ResourceFlavor", sink, settings=fast_settings(watch_timeout_seconds=1))
        async with running(informer):
            await eventually(lambda: informer.stats.watches >= 2, what="a second watch", timeout=5)
            await client.create(flavor("a"))
            await eventually(lambda: "a" in sink.names("ResourceFlavor"), what="the event")
    assert informer.stats.errors == 0
    assert informer.stats.lists == 1


async def test_an_object_the_sink_refuses_does_not_stop_the_informer(fake_api: FakeApi) -> None:
    sink = RecordingSink(refuse=lambda document: document["metadata"]["name"] == "bad")
    fake_api.server.seed(flavor("bad"))
    fake_api.server.seed(flavor("good"))
    async with kube(fake_api) as client:
        informer = Informer(client, "ResourceFlavor", sink, settings=fast_settings())
        async with running(informer):
            await asyncio.wait_for(informer.synced.wait(), 5)
            await client.create(flavor("good-too"))
            await eventually(lambda: "good-too" in sink.names("ResourceFlavor"), what="the next object")
    assert informer.stats.rejected == 1
    assert sink.names("ResourceFlavor") == {"good", "good-too"}


async def test_namespaced_kind_in_all_namespaces(fake_api: FakeApi) -> None:
    sink = RecordingSink()
    async with kube(fake_api) as client:
        await client.create(namespace("team-a"))
        await client.create(local_queue("default", "team-a"))
        informer = Informer(client, "LocalQueue", sink, settings=fast_settings())
        async with running(informer):
            await asyncio.wait_for(informer.synced.wait(), 5)
            await client.create(local_queue("default", "default"))
            await eventually(lambda: len(sink.objects) == 2, what="both queues")
            await client.delete("LocalQueue", "default", "team-a")
            await eventually(lambda: len(sink.objects) == 1, what="the delete")
    assert list(sink.objects) == [("LocalQueue", "default", "default")]
    assert sink.calls[-1][:4] == ("delete", "LocalQueue", "team-a", "default")
