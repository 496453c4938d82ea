"""The labelling page's parts without a browser: the order of its questions, the index it
writes (atomic, resumable, undo), its server (127.0.0.1, user text as data), and the labels a
class ``--t2i-plan`` asks for (issue #45)."""

from __future__ import annotations

import json
import threading
import urllib.error
import urllib.request

import pytest
from PIL import Image

from pytest_t2ibias.labelling import LabelBook, LabelSession, LabelTask, serve
from pytest_t2ibias.planner import labels_per_class, measured_confusion
from pytest_t2ibias.suite_spec import AxisSpec


def _axis(name: str = "gender", choices: tuple[str, ...] = ("male", "female")) -> AxisSpec:
    return AxisSpec(name=name, question=f"What is the {name}?", choices=choices)


def _tasks(axis: AxisSpec, n: int) -> list[LabelTask]:
    return [LabelTask(f"{i:04d}.png", axis, "a photo of a <b>doctor</b>",
                      Image.new("RGB", (4, 4), (i, 0, 0))) for i in range(n)]


def test_a_second_session_resumes_where_the_labels_stand(tmp_path):
    axis = _axis()
    first = LabelSession("s", _tasks(axis, 6), LabelBook(tmp_path), {"gender": 2})
    asked = [first.question()["file"] for _ in range(1)]
    first.answer(asked[0], "gender", "male")
    first.answer(first.question()["file"], "gender", None)  # cannot tell
    second = LabelSession("s", _tasks(axis, 6), LabelBook(tmp_path), {"gender": 2})
    left = second.question()
    assert left["file"] not in asked and left["progress"][0]["counts"] == {"male": 1, "female": 0}
    rows = [json.loads(line) for line in (tmp_path / "index.jsonl").read_text().splitlines()]
    assert rows[0] == {"file": asked[0], "gender": "male", "prompt": "a photo of a <b>doctor</b>"}
    assert rows[1]["cannot_tell"] == ["gender"] and "gender" not in rows[1]
    assert len(rows) == 2 and (tmp_path / asked[0]).is_file()


def test_one_row_an_image_carries_every_axis_labelled_on_it(tmp_path):
    """A calibration by group reads an image's other axes off its row."""
    gender, age = _axis(), _axis("age", ("young", "old"))
    session = LabelSession("s", [*_tasks(gender, 1), *_tasks(age, 1)], LabelBook(tmp_path), {})
    session.answer("0000.png", "gender", "female")
    session.answer("0000.png", "age", "old")
    rows = session.book.rows()
    assert rows == [{"file": "0000.png", "gender": "female", "age": "old",
                     "prompt": "a photo of a <b>doctor</b>"}]
    session.undo()
    assert session.book.rows() == [{"file": "0000.png", "gender": "female",
                                    "prompt": "a photo of a <b>doctor</b>"}]


def test_undo_takes_back_this_sessions_last_row_only(tmp_path):
    axis = _axis()
    book = LabelBook(tmp_path)
    other = LabelSession("s", _tasks(axis, 4), book, {})
    mine = LabelSession("s", _tasks(axis, 4), LabelBook(tmp_path), {})
    other.answer("0000.png", "gender", "female")
    mine.answer("0001.png", "gender", "male")
    mine.undo()
    mine.undo()  # nothing of mine left: the other session's row stays
    assert [json.loads(line)["file"] for line in book.index.read_text().splitlines()] == ["0000.png"]


def test_a_skipped_question_comes_back_last_and_an_unknown_answer_is_refused(tmp_path):
    axis = _axis()
    session = LabelSession("s", _tasks(axis, 3), LabelBook(tmp_path), {})
    first = session.question()["file"]
    session.skip(first, "gender")
    seen = []
    while not (question := session.question())["done"]:
        seen.append(question["file"])
        session.answer(question["file"], "gender", "male")
    assert seen[-1] == first and len(seen) == 3
    with pytest.raises(KeyError):
        session.answer("0001.png", "gender", "<script>")


def test_the_axis_furthest_below_its_need_is_asked_first(tmp_path):
    gender, age = _axis(), _axis("age", ("young", "old"))
    session = LabelSession("s", [*_tasks(gender, 8), *_tasks(age, 8)], LabelBook(tmp_path),
                           {"gender": 1, "age": 3})
    asked = []
    for value in ("young", "old", "young", "old"):
        question = session.question()
        asked.append(question["axis"])
        session.answer(question["file"], question["axis"], value)
    # age's fewest-labelled class is 3, 3, 2, 2 short of 3, against gender's 1 short of 1
    assert asked == ["age"] * 4
    done = {f for f, axis in session.book.answered() if axis == "age"}
    spare = [f for f, axis in session.tasks if axis == "age" and f not in done]
    session.answer(spare[0], "age", "young")
    session.answer(spare[1], "age", "old")
    assert session.question()["axis"] == "gender"  # age has 3 of each now


def test_the_server_listens_on_localhost_and_sends_user_text_as_json(tmp_path):
    axis = _axis(choices=("male", "<i>female</i>"))
    session = LabelSession("suite <script>alert(1)</script>", _tasks(axis, 2),
                           LabelBook(tmp_path), {"gender": 1})
    server = serve(session)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        host, port = server.server_address[:2]
        assert host == "127.0.0.1"
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=10) as reply:
            page = reply.read().decode()
            policy = reply.headers["Content-Security-Policy"]
        assert "alert" not in page and "female" not in page  # data only reaches it as JSON
        assert "script-src 'self'" in policy and "unsafe-inline" not in policy.split("style-src")[0]
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/next", timeout=10) as reply:
            question = json.loads(reply.read())
        assert question["title"] == "suite <script>alert(1)</script>"
        assert [c["value"] for c in question["choices"]] == ["male", "<i>female</i>"]
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/image/{question['file']}",
                                    timeout=10) as reply:
            assert reply.headers["Content-Type"] == "image/png"
        rebound = urllib.request.Request(f"http://127.0.0.1:{port}/next",
                                         headers={"Host": f"evil.example:{port}"})
        form = urllib.request.Request(f"http://127.0.0.1:{port}/undo", data=b"a=1",
                                      headers={"Content-Type": "text/plain"})
        for refused, status in ((rebound, 403), (form, 415)):
            with pytest.raises(urllib.error.HTTPError) as error:
                urllib.request.urlopen(refused, timeout=10)
            assert error.value.code == status
    finally:
        server.shutdown()
        server.server_close()


class _Item:
    """What ``labels_per_class`` reads of a planned item."""

    def __init__(self, threshold: float, margin: float, gate: float | None) -> None:
        from types import SimpleNamespace

        self.check = SimpleNamespace(kind="entropy_below", params=SimpleNamespace(
            threshold=threshold, margin=margin))
        self.plan = SimpleNamespace(levels=SimpleNamespace(gate=gate))


def test_labels_a_class_grow_as_the_margin_narrows_and_the_judge_errs_more():
    wide = labels_per_class(_Item(0.3, 0.2, 0.95), _axis())
    narrow = labels_per_class(_Item(0.3, 0.1, 0.95), _axis())
    worse_judge = labels_per_class(_Item(0.3, 0.2, 0.95), _axis(), accuracy=0.75)
    assert 2 <= wide < narrow and wide < worse_judge
    # the calibration's part of the width, ~1/sqrt(L): half the margin, about 4x the labels
    assert 2.5 < narrow / wide < 6


def _record(axis: str, confusion: dict, recorded: str, where: str = "labels/") -> dict:
    return {"judge": "VQA toy-clip", "axis": axis, "choices": ["male", "female"],
            "confusion": confusion, "where": where, "recorded": recorded, "readable": True}


def test_the_label_plan_reads_the_judge_as_an_earlier_run_measured_it():
    """A remembered calibration (70% right on women, 95% on men) replaces the assumed 90%
    judge: the newest record of this judge and axis, rows as shares; a worse judge needs
    more labels a class."""
    older = _record("gender", {"male": {"male": 9, "female": 1}, "female": {"male": 1, "female": 9}},
                    "2026-11-01T00:00:00+00:00")
    newer = _record("gender", {"male": {"male": 19, "female": 1}, "female": {"male": 6, "female": 14}},
                    "2026-11-20T00:00:00+00:00", where="labels-v2/")
    other_judge = {**newer, "judge": "VQA another", "recorded": "2026-11-30T00:00:00+00:00"}
    measured = measured_confusion([older, newer, other_judge], "VQA toy-clip", _axis())
    assert measured is not None
    confusion, where = measured
    assert confusion.tolist() == [[0.95, 0.05], [0.3, 0.7]]
    assert "labels-v2/" in where and "2026-11-20" in where
    item = _Item(0.3, 0.2, 0.95)
    assert labels_per_class(item, _axis(), confusion=confusion) > labels_per_class(item, _axis())


@pytest.mark.parametrize("records", [
    [],  # nothing remembered
    [_record("age", {"male": {"male": 1, "female": 0}, "female": {"male": 0, "female": 1}},
             "2026-11-20")],  # another axis
    [_record("gender", {"male": {"male": 5, "female": 0}, "female": {"male": 0, "female": 0}},
             "2026-11-20")],  # a class with no labelled image
    [_record("gender", {"male": {"male": "x"}}, "2026-11-20")],  # not a table of counts
])
def test_no_usable_measurement_leaves_the_assumed_judge(records):
    assert measured_confusion(records, "VQA toy-clip", _axis()) is None
