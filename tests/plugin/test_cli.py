"""``python -m pytest_t2ibias compare | report | cache``: exit statuses, output, bad input."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from PIL import Image
from support.saved_rows import row

from pytest_t2ibias.__main__ import main
from pytest_t2ibias._types import ImageRequest
from pytest_t2ibias.reports import html as html_report
from pytest_t2ibias.runs.saved import save_run
from pytest_t2ibias.store.admin import cache_stats, parse_size, prune
from pytest_t2ibias.store.cache import Cache, answer_key, image_key


def header(fingerprint: str) -> dict:
    return {"models": [{"role": "generator:candidate", "model": "fixtures/toy-sd",
                        "fingerprint": fingerprint}], "judges": [], "settings": {}}


@pytest.fixture
def runs(tmp_path: Path) -> Path:
    storage = tmp_path / ".t2ibias" / "runs"  # the default storage, seen from tmp_path
    save_run(storage, "v1", [row("nurse", 0.30), row("doctor", 0.20)], {}, header("fp-one"))
    save_run(storage, "v1-again", [row("nurse", 0.30), row("doctor", 0.20)], {}, header("fp-one"))
    save_run(storage, "v2", [row("nurse", 0.60, status="failed"), row("doctor", 0.22)], {},
             header("fp-two"))
    return storage


def test_compare_exits_1_on_drift_and_names_the_figure(runs, capsys):
    assert main(["compare", "v1", "v2", "--fail", "ci", "--storage", str(runs)]) == 1
    out = capsys.readouterr().out
    assert "generator:candidate: a different candidate model: fixtures/toy-sd (fingerprint " \
           "fp-one) -> fixtures/toy-sd (fingerprint fp-two)" in out
    assert "  gate[nurse / gender]  (passed -> failed)\n" in out
    assert "    value  0.300 [0.250, 0.350] -> 0.600 [0.550, 0.650]  +0.300  ci\n" in out
    assert "doctor" not in out.split("figures that drifted")[1].split("compare FAILED")[0]
    assert out.rstrip().endswith("compare FAILED: 1 figures drifted from v1 beyond --fail ci: "
                                 "gate[nurse / gender] value")


def test_compare_exits_0_within_the_criteria_and_without_any(runs, capsys):
    assert main(["compare", "v1", "v1-again", "--fail", "ci", "--storage", str(runs)]) == 0
    assert "no figure drifted (2 figures compared, 0 changed" in capsys.readouterr().out
    assert main(["compare", "v1", "v2", "--fail", "value:0.31", "--storage", str(runs)]) == 0
    assert main(["compare", str(runs / "v1.json"), str(runs / "v2.json")]) == 0
    out = capsys.readouterr().out
    assert "figures that changed" in out and "gate[doctor / gender]" in out


@pytest.mark.parametrize("args, message", [
    (["compare", "v3", "v1"], "compare: no saved run named 'v3' (or starting so) in {runs}; "
                              "saved: v1, v1-again, v2"),
    (["compare", "v", "v1"], "compare: 3 saved runs in {runs} start with 'v': v1, v1-again, v2;"
                             " give more of the name"),
    (["compare", "{tmp}/nope.json", "v1"], "compare: {tmp}/nope.json: no such file"),
    (["compare", "{tmp}/bad.json", "v1"], "compare: {tmp}/bad.json: not valid JSON (Expecting"),
    (["compare", "{tmp}/old.json", "v1"], "compare: {tmp}/old.json: report version 1; this "
                                          "pytest-t2ibias reads version 2"),
    (["compare", "v1", "v2", "--fail", "mean:2"], "compare: 'mean:2' is not a drift criterion"),
    (["report", "{tmp}/bad.json", "--html", "{tmp}/x.html"], "report: {tmp}/bad.json: not "
                                                             "valid JSON"),
    (["report", "v9", "--html", "{tmp}/x.html"], "report: no saved run named 'v9'"),
])
def test_bad_input_is_one_line_on_stderr_and_exit_2(runs, tmp_path, capsys, args, message):
    (tmp_path / "bad.json").write_text("{")
    (tmp_path / "old.json").write_text(json.dumps({"schema": "pytest-t2ibias report",
                                                   "version": 1}))
    argv = [a.format(tmp=tmp_path) for a in args] + ["--storage", str(runs)]
    assert main(argv) == 2
    captured = capsys.readouterr()
    assert captured.err.startswith("python -m pytest_t2ibias " + message.format(runs=runs,
                                                                                tmp=tmp_path))
    assert captured.err.count("\n") == 1 and captured.out == ""


def test_the_module_runs_as_a_command_with_those_exit_statuses(runs):
    def command(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "pytest_t2ibias", *args], cwd=runs.parents[1],
                              capture_output=True, text=True, timeout=120)

    drift = command("compare", "v1", "v2", "--fail", "ci", "--fail", "value:0.1")
    assert drift.returncode == 1, drift.stderr
    assert "compare FAILED: 1 figures drifted from v1 beyond --fail ci or value:0.1" in drift.stdout
    assert command("compare", "latest", "v1").returncode == 0
    missing = command("compare", "missing.json", "v1")
    assert missing.returncode == 2 and "Traceback" not in missing.stderr
    assert missing.stderr == "python -m pytest_t2ibias compare: missing.json: no such file\n"
    helped = command("--help")
    assert helped.returncode == 0
    for word in ("prefetch", "compare", "report", "cache"):
        assert word in helped.stdout
    assert command().returncode == 0
    assert command("nonsense").returncode == 2


def test_report_renders_a_saved_run_through_write_html(runs, tmp_path, monkeypatch, capsys):
    calls = []
    monkeypatch.setattr(html_report, "write_html",
                        lambda path, rows, **kwargs: calls.append((path, rows, kwargs)))
    out, cache = tmp_path / "out.html", tmp_path / "cache"
    assert main(["report", "v2", "--html", str(out), "--cache-dir", str(cache),
                 "--storage", str(runs)]) == 0
    (path, rows, kwargs), = calls
    assert path == out and kwargs == {"run": header("fp-two"), "cache_dir": cache}
    assert rows == [row("nurse", 0.60, status="failed"), row("doctor", 0.22)]
    assert capsys.readouterr().out == f"wrote {out} (2 checks of {runs / 'v2.json'})\n"


def test_report_writes_the_html_file(runs, tmp_path):
    out = tmp_path / "out.html"
    assert main(["report", str(runs / "v2.json"), "--html", str(out)]) == 0
    assert "gate" in out.read_text() and "nurse" in out.read_text()


# -- cache stats | prune -----------------------------------------------------------------------


def filled_cache(root: Path, now: float) -> dict[str, Path]:
    """Two images and an answer, used 30, 10 and 1 days ago, a probe and a corrupt file."""
    cache = Cache(root)
    made = {}
    for name, days in (("old", 30), ("mid", 10)):
        request = ImageRequest(f"a photo of a {name}", 0, 0)
        key = image_key("gen", request)
        cache.put_image(key, Image.new("RGB", (64, 64), (len(name), 0, 0)), request)
        made[name] = root / "images" / key[:2] / f"{key}.png"
        os.utime(made[name], (now - days * 86400, now - days * 86400))
    key = answer_key("hash", "judge", "q?", ("a", "b"), None)
    cache.put_answer(key, {"probabilities": [0.5, 0.5]})
    made["answer"] = root / "answers" / key[:2] / f"{key}.json"
    os.utime(made["answer"], (now - 86400, now - 86400))
    probe = root / "probes" / "gender-0123"
    probe.mkdir(parents=True)
    (probe / "weights.npz").write_bytes(b"x" * 1000)
    os.utime(probe / "weights.npz", (now - 20 * 86400, now - 20 * 86400))
    made["probe"] = probe
    (root / "corrupt").mkdir()
    (root / "corrupt" / "thing.png.123").write_bytes(b"y" * 10)
    made["corrupt"] = root / "corrupt" / "thing.png.123"
    return made


def test_cache_stats_counts_entries_and_bytes_by_kind(tmp_path, capsys):
    now = time.time()
    made = filled_cache(tmp_path / "cache", now)
    stats = cache_stats(tmp_path / "cache")
    assert stats.entries == {"images": 2, "answers": 1, "probes": 1, "other": 1}
    assert stats.size["probes"] == 1000 and stats.size["other"] == 10
    assert stats.size["images"] == made["old"].stat().st_size + made["mid"].stat().st_size
    assert stats.oldest == pytest.approx(now - 30 * 86400, abs=2)
    assert main(["cache", "stats", "--cache-dir", str(tmp_path / "cache")]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"cache {tmp_path / 'cache'}: 5 entries, ")
    assert "  probes          1 entries      1000 B\n" in out


def test_prune_removes_least_recently_used_first_and_dry_run_removes_nothing(tmp_path, capsys):
    now = time.time()
    root = tmp_path / "cache"
    made = filled_cache(root, now)
    dry = prune(root, older_than_days=15, dry_run=True, now=now)
    assert [e.path for e in dry.removed] == [made["old"], made["probe"]]
    assert made["old"].exists() and made["probe"].exists()

    done = prune(root, older_than_days=15, now=now)
    assert [e.path for e in done.removed] == [made["old"], made["probe"]]
    assert not made["old"].exists() and not made["probe"].exists() and made["mid"].exists()

    # then by size on disk (as du and cache stats count): the least recently used go until
    # what is left fits; the image's index record goes with it
    from pytest_t2ibias.store.admin import _blocks

    left, mid_size = cache_stats(root).on_disk, made["mid"].stat().st_size
    mid_disk = _blocks(made["mid"].stat())
    record = next((root / "index").rglob(f"{made['mid'].stem}*"))
    record_disk = _blocks(record.stat())
    by_size = prune(root, max_size=left - 1, now=now)
    assert [e.path for e in by_size.removed] == [made["mid"]]
    assert by_size.freed == mid_size and by_size.freed_on_disk == mid_disk + record_disk
    assert by_size.remaining == left - mid_disk - record_disk
    assert abs(cache_stats(root).on_disk - by_size.remaining) <= 4096 * 4  # emptied folders
    assert made["answer"].exists() and made["corrupt"].exists()

    assert main(["cache", "prune", "--max-size", "0", "--dry-run", "--cache-dir", str(root)]) == 0
    assert "would remove 2 entries" in capsys.readouterr().out
    assert made["answer"].exists()


def test_prune_never_removes_an_entry_another_process_has_claimed(tmp_path):
    now = time.time()
    root = tmp_path / "cache"
    made = filled_cache(root, now)
    holder = subprocess.Popen(
        [sys.executable, "-c", "import sys, time\n"
         "from pytest_t2ibias.store.cache import Cache\n"
         "claim = Cache(__import__('pathlib').Path(sys.argv[1])).claim(sys.argv[2])\n"
         "print('held' if claim else 'busy', flush=True)\n"
         "sys.stdin.readline()\n", str(root), made["old"].stem],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        result = prune(root, older_than_days=15, now=now)
        assert [e.path for e in result.claimed] == [made["old"]]
        assert [e.path for e in result.removed] == [made["probe"]]
        assert made["old"].exists()
    finally:
        holder.communicate("\n", timeout=60)
    assert [e.path for e in prune(root, older_than_days=15, now=now).removed] == [made["old"]]


@pytest.mark.parametrize("text, size", [("0", 0), ("1500", 1500), ("2k", 2048), ("500M", 500 * 2 ** 20),
                                        ("1.5GiB", int(1.5 * 2 ** 30)), ("2 gb", 2 * 2 ** 30)])
def test_sizes_read_like_people_write_them(text, size):
    assert parse_size(text) == size


def test_cache_commands_refuse_bad_input_in_one_line(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / ".t2ibias_cache").mkdir()
    assert main(["cache", "prune"]) == 2
    assert capsys.readouterr().err == (
        "python -m pytest_t2ibias cache: cache prune: say what to remove: --older-than DAYS "
        "and/or --max-size SIZE, or --locks (add --dry-run to see it first)\n")
    assert main(["cache", "stats", "--cache-dir", str(tmp_path / "none")]) == 2
    assert capsys.readouterr().err == (
        f"python -m pytest_t2ibias cache: no cache directory at {tmp_path / 'none'} (give "
        f"--cache-dir DIR: the run's --t2i-cache-dir, default <rootdir>/.t2ibias_cache)\n")
    assert main(["cache", "prune", "--max-size", "lots"]) == 2
    assert "argument --max-size: 'lots' is not a size" in capsys.readouterr().err
    assert main(["cache", "prune", "--older-than", "-3"]) == 2
    assert "argument --older-than: '-3' is not a number of days >= 0" in capsys.readouterr().err


def test_stats_count_what_is_on_disk_as_du_does_and_prune_removes_leftover_locks(tmp_path,
                                                                                   capsys):
    import shutil
    import subprocess

    from pytest_t2ibias.store.cache import Cache

    root = tmp_path / "cache"
    for index in range(300):  # many small entries: their blocks, not their bytes, fill the disk
        path = root / "answers" / f"{index % 16:02x}" / f"{index:064x}.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("{}")
        leftover = root / "locks" / f"{index % 16:02x}" / f"{index:064x}.lock"
        leftover.parent.mkdir(parents=True, exist_ok=True)
        leftover.touch()  # as an older version left them
    held = Cache(root).claim("f" * 64)  # a claim in use keeps its lock file
    stats = cache_stats(root)
    assert stats.lock_files == 301
    if shutil.which("du"):
        du = int(subprocess.run(["du", "-s", "--block-size=1", str(root)], capture_output=True,
                                text=True, check=True).stdout.split()[0])
        assert abs(stats.on_disk - du) <= 0.05 * du
    assert stats.on_disk > 10 * stats.total_size
    assert main(["cache", "prune", "--locks", "--cache-dir", str(root)]) == 0
    assert "removed 300 lock files no process held" in capsys.readouterr().out
    assert [p.name for p in root.rglob("*.lock")] == [f"{'f' * 64}.lock"]
    held.release()
    assert not list(root.rglob("*.lock"))  # released: its file goes too


def test_prefetch_help_is_its_own_usage_not_pytests(capsys):
    assert main(["prefetch", "--help"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("usage: python -m pytest_t2ibias prefetch [PATHS ...]")
    assert "pytest.main()" not in out and "--t2i-cache-dir" in out
    assert "--junit-xml" not in out  # pytest's own options stay in pytest --help
