"""One factory builds the models, the request layer and the lock readers (``equipment``): the
session, its ``t2ibias`` fixture and a script's ``T2IBias.standalone`` all get theirs from
it, each piece built on first use, and the fixture shares the session's, never a copy."""

from __future__ import annotations

from pytest_t2ibias._session import T2ISession
from pytest_t2ibias._settings import Settings
from pytest_t2ibias.equipment import Equipment
from pytest_t2ibias.facade import T2IBias
from pytest_t2ibias.instrument import Models
from pytest_t2ibias.store.request_layer import RequestLayer


class Made:
    """A backend of any kind: it is made, never used."""

    fingerprint = "made-1"

    def generate(self, requests): ...

    def score(self, images, question, choices, statements=None): ...

    def log_likelihood(self, texts): ...

    def complete(self, prompt, max_new_tokens=32): ...


class CountingProvider:
    """Backends by model id, counting what it was asked to make."""

    def __init__(self) -> None:
        self.asked: list[tuple[str, str]] = []

    def generator(self, model: str, role: str) -> Made:
        self.asked.append(("generator", model))
        return Made()

    def vqa(self, model: str) -> Made:
        self.asked.append(("vqa", model))
        return Made()

    def llm(self, model: str) -> Made:
        self.asked.append(("llm", model))
        return Made()


def settings(tmp_path, **overrides) -> Settings:
    return Settings.standalone(cache_dir=tmp_path / "cache", **overrides)


def test_nothing_is_built_until_asked_and_each_piece_once(tmp_path):
    provider = CountingProvider()
    equipment = Equipment(settings(tmp_path, llm="lm"), provider)

    assert not equipment.started
    assert equipment.counters == {} and equipment.backends_used() == []
    assert not equipment.started  # reading what was used builds nothing
    assert not (tmp_path / "cache").exists()

    assert equipment.models is equipment.models and isinstance(equipment.models, Models)
    assert equipment.requests is equipment.requests and isinstance(equipment.requests, RequestLayer)
    assert equipment.started and provider.asked == []  # models made, no backend yet
    assert equipment.counters["images_generated"] == 0


def test_the_lock_readers_load_the_llm_through_the_same_models(tmp_path):
    provider = CountingProvider()
    equipment = Equipment(settings(tmp_path, llm="lm", update_locks=True), provider)

    locks = equipment.counterfactual_locks
    assert locks.update and locks.llm_model == "lm"
    assert locks.load_llm() is equipment.models.llm  # one LLM for the lock and the checks
    assert provider.asked == [("llm", "lm")]
    assert equipment.bgps_locks.models is equipment.models and equipment.bgps_locks.update


def test_backends_used_names_what_the_models_made(tmp_path):
    equipment = Equipment(settings(tmp_path, vqa="clip"), CountingProvider())
    equipment.models.generator("candidate", "sd")
    equipment.models.vqa  # noqa: B018 - making it is the point

    assert equipment.backends_used() == [
        {"role": "generator:candidate", "model": "sd", "fingerprint": "made-1"},
        {"role": "vqa", "model": "clip", "fingerprint": "made-1"}]


def test_the_request_layer_reports_progress_the_caller_gives(tmp_path):
    sent = []

    class Progress:
        def __init__(self) -> None:
            sent.append(self)

    equipment = Equipment(settings(tmp_path), CountingProvider(), progress=Progress)
    assert sent == []  # asked for only when the request layer is built
    assert equipment.requests.progress is sent[0]


def test_a_script_builds_through_the_same_factory(tmp_path):
    provider = CountingProvider()
    t2i = T2IBias.from_provider(settings(tmp_path), provider)

    assert isinstance(t2i.equipment, Equipment) and t2i.equipment.provider is provider
    assert not t2i.equipment.started
    assert t2i.models is t2i.equipment.models and t2i.requests is t2i.equipment.requests
    assert t2i.locks is t2i.equipment.counterfactual_locks
    assert t2i.bgps_locks is t2i.equipment.bgps_locks

    standalone = T2IBias.standalone(cache_dir=tmp_path / "other", vqa="clip")
    assert isinstance(standalone.equipment, Equipment)
    assert standalone.settings.vqa == "clip" and not standalone.equipment.started


def test_the_session_hands_its_pieces_to_the_items_from_its_equipment(tmp_path):
    session = T2ISession(config=None, settings=settings(tmp_path))
    session.__dict__["equipment"] = Equipment(session.settings, CountingProvider())

    assert not session.started
    assert session.models is session.equipment.models
    assert session.requests is session.equipment.requests
    assert session.locks is session.equipment.counterfactual_locks
    assert session.bgps_locks is session.equipment.bgps_locks
    assert session.started
    assert session.instrument(plan=None).models is session.models


def test_the_fixture_shares_the_sessions_equipment(pytester):
    pytester.makepyfile(test_shared="""
        from pytest_t2ibias._session import session_of

        def test_shared(t2ibias, pytestconfig):
            session = session_of(pytestconfig)
            assert not session.started  # the fixture builds nothing either
            assert t2ibias.equipment is session.equipment
            assert t2ibias.models is session.models
            assert t2ibias.requests is session.requests
            assert t2ibias.locks is session.locks
            assert t2ibias.bgps_locks is session.bgps_locks
    """)
    result = pytester.runpytest("--t2i-cache-dir=cache", "-q")
    result.assert_outcomes(passed=1)


def test_the_session_end_flush_writes_what_the_calls_left_behind(tmp_path):
    from support.request_world import GatedCache, NoiseColourGenerator, requests

    equipment = Equipment(settings(tmp_path), CountingProvider())
    equipment.flush()  # nothing built: builds nothing
    assert not equipment.started
    cache = GatedCache(tmp_path / "cache")
    equipment.__dict__["requests"] = layer = RequestLayer(cache, batch_size=4)
    images = layer.images(NoiseColourGenerator(), requests("a", 5))
    cache.gate.set()
    equipment.flush()
    assert all(cache.get_image(image.key) is not None for image in images)
    assert layer._writes.pending == 0 and cache._held == {}
