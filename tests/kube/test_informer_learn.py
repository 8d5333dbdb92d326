"""An informer learns our own writes' answers before their watch events, and never goes backwards."""

from __future__ import annotations

import asyncio
from typing import Any

from fakeapi.fixtures import FakeApi
from kube_support import RecordingSink, fast_settings, flavor, kube, running

from scheduler.kube import Informer
from scheduler.kube.client import ObjectList
from tests.eventually import eventually


def revision(document: dict[str, Any]) -> str:
    return str(document["metadata"]["resourceVersion"])


def applies_of(sink: RecordingSink, name: str) -> list[str]:
    return [rv for op, _, _, n, rv in sink.calls if op == "apply" and n == name]


async def test_a_learned_write_is_in_the_sink_when_the_write_returns_and_its_echo_is_not_applied_again(
    fake_api: FakeApi,
) -> None:
    sink = RecordingSink()
    async with kube(fake_api) as client:
        informer = Informer(client, "ResourceFlavor", sink, settings=fast_settings())
        client.answer_listeners.append(informer.learn)
        async with running(informer):
            await asyncio.wait_for(informer.synced.wait(), 5)
            created = await client.create(flavor("b"))
            # no await between the answer and this check: the watch cannot have delivered it
            assert sink.names("ResourceFlavor") == {"b"}
            patched = await client.patch("ResourceFlavor", "b", {"metadata": {"labels": {"x": "1"}}})
            assert sink.objects[("ResourceFlavor", None, "b")]["metadata"]["labels"] == {"x": "1"}
            await eventually(lambda: informer.resource_version == revision(patched), what="the watch's echoes")
    # the create's and the patch's answers once each; the two echoes (one older than the sink's
    # copy when it came) applied nothing
    assert applies_of(sink, "b") == [revision(created), revision(patched)]
    assert informer.stats.learned == 2


async def test_the_sink_keeps_its_own_copy_of_a_learned_answer(fake_api: FakeApi) -> None:
    sink = RecordingSink()
    async with kube(fake_api) as client:
        informer = Informer(client, "ResourceFlavor", sink, settings=fast_settings())
        client.answer_listeners.append(informer.learn)
        async with running(informer):
            await asyncio.wait_for(informer.synced.wait(), 5)
            created = await client.create(flavor("b", team="a"))
            created["metadata"]["labels"]["team"] = "changed by the writer"
    assert sink.objects[("ResourceFlavor", None, "b")]["metadata"]["labels"] == {"team": "a"}


async def test_an_answer_that_comes_after_the_deletion_does_not_bring_the_object_back(fake_api: FakeApi) -> None:
    sink = RecordingSink()
    async with kube(fake_api) as client:
        informer = Informer(client, "ResourceFlavor", sink, settings=fast_settings())
        async with running(informer):
            await asyncio.wait_for(informer.synced.wait(), 5)
            late_answer = await client.create(flavor("b"))  # not learned yet: it is "in flight"
            await client.delete("ResourceFlavor", "b")
            await eventually(lambda: ("delete", "ResourceFlavor", None, "b", "") in sink.calls, what="the deletion")
            informer.learn(late_answer)
            assert "b" not in sink.names("ResourceFlavor")
            # a new object of that name, created after the deletion, is learned as usual
            again = await client.create(flavor("b"))
            informer.learn(again)
            assert sink.objects[("ResourceFlavor", None, "b")]["metadata"]["resourceVersion"] == revision(again)


async def test_an_informer_with_a_selector_learns_nothing(fake_api: FakeApi) -> None:
    sink = RecordingSink()
    async with kube(fake_api) as client:
        informer = Informer(client, "ResourceFlavor", sink, label_selector="team=a", settings=fast_settings())
        async with running(informer):
            await asyncio.wait_for(informer.synced.wait(), 5)
            informer.learn(await client.create(flavor("b", team="b")))  # not the informer's: its label differs
            assert "b" not in sink.names("ResourceFlavor")
    assert informer.stats.learned == 0


class ListedAt:
    """A client whose list answers ``items`` at revision ``at``."""

    def __init__(self, items: list[dict[str, Any]], at: int) -> None:
        self.items = items
        self.at = at

    async def list(self, *args: Any, **kwargs: Any) -> ObjectList:
        return ObjectList(items=list(self.items), resource_version=str(self.at))


def at_revision(document: dict[str, Any], rv: int) -> dict[str, Any]:
    document["metadata"]["resourceVersion"] = str(rv)
    return document


async def test_a_relist_keeps_what_was_learned_after_the_list_and_drops_what_was_deleted_before() -> None:
    sink = RecordingSink()
    client = ListedAt([at_revision(flavor("kept"), 5)], at=10)
    informer = Informer(client, "ResourceFlavor", sink)  # type: ignore[arg-type]  # only list is called
    await informer._list()
    informer.learn(at_revision(flavor("new"), 12))  # created after the next list's revision
    informer.learn(at_revision(flavor("old"), 8))  # created before it, and gone by then
    client.at = 11
    await informer._list()
    assert sink.names("ResourceFlavor") == {"kept", "new"}
    # the relist found "old" gone at revision 11: its answer, coming back late, stays history
    informer.learn(at_revision(flavor("old"), 8))
    assert sink.names("ResourceFlavor") == {"kept", "new"}
