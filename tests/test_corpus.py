"""Corpus analysis (attnviz.corpus): readers and their bad records, the per-batch function against
one-at-a-time `attend` and `head_stats`, the outputs against plain numpy over the sentences, a run
killed with SIGKILL and resumed, the Ray engine against the local one, and the query-key atlas."""

from __future__ import annotations

import json
import math
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import torch

import attnviz
from attnviz import corpus, explain
from attnviz.corpus.batch import Item, _layer_stats

from .benchrun import run_bench

ROOT = Path(__file__).resolve().parents[1]
BUNDLED = ROOT / "assets" / "corpus"
SENTENCES = [
    "The animal didn't cross the street because it was tired.",
    "dog bites man",
    "小犬不下河，因为它太小。",
    'Hello, world! ... (yes) -- "quoted"',
    "x",
    "word " * 200,  # cut to max_tokens, flagged
    "=cmd|' /C calc'!A0 <script>alert(1)</script>",
]


def _records(path: Path, max_chars: int = 1000) -> list[corpus.Record]:
    return list(corpus.open_source(path, max_chars=max_chars).records())


def _kept(records: list[corpus.Record]) -> list[tuple[int, str | None]]:
    return [(r.id, r.text) for r in records if r.skip is None]


def _skipped(records: list[corpus.Record]) -> list[tuple[int, str | None]]:
    return [(r.id, r.skip) for r in records if r.skip is not None]


# --- readers ----------------------------------------------------------------------------------


def test_text_lines_keep_every_bad_line_with_its_reason(tmp_path: Path) -> None:
    path = tmp_path / "in.txt"
    big = b"y" * 5_000_000  # a 5 MB line: skipped, and the line after it is still read
    path.write_bytes(
        b"\xef\xbb\xbfFirst line.\r\n\n   \t\nok\n\xff\xfe broken utf-8\nnul\x00byte\n\x01\x02\x1b\n" + big + b"\nlast"
    )
    records = _records(path)
    assert _kept(records) == [(1, "First line."), (4, "ok"), (9, "last")]
    assert _skipped(records) == [
        (2, "empty"),
        (3, "empty"),
        (5, "not_text"),
        (6, "not_text"),
        (7, "empty"),
        (8, "too_long"),
    ]


def test_text_longer_than_the_limit_is_skipped_not_cut(tmp_path: Path) -> None:
    path = tmp_path / "in.txt"
    path.write_text("a" * 1000 + "\n" + "b" * 1001 + "\n" + "字" * 1000 + "\n", encoding="utf-8")
    records = _records(path, max_chars=1000)
    assert [(r.id, r.skip) for r in records] == [(1, None), (2, "too_long"), (3, None)]


def test_jsonl_records(tmp_path: Path) -> None:
    path = tmp_path / "in.jsonl"
    lines = [
        json.dumps({"text": "a good one", "label": 1}),
        "{not json",
        json.dumps({"sentence": "no text field"}),
        json.dumps({"text": 42}),
        json.dumps({"text": None}),
        json.dumps(["text", "a list"]),
        "",
        json.dumps({"text": "<b>html</b> and \u2603 stay data"}, ensure_ascii=True),
        "[" * 100_000,  # deeply nested: a bad record, not a crash
    ]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    records = _records(path, max_chars=100_000)
    assert _kept(records) == [(1, "a good one"), (8, "<b>html</b> and \u2603 stay data")]
    assert _skipped(records) == [
        (2, "bad_record"),
        (3, "bad_record"),
        (4, "not_text"),
        (5, "empty"),
        (6, "bad_record"),
        (7, "empty"),
        (9, "bad_record"),
    ]


def test_csv_rows_quoted_newlines_bad_rows_and_bytes(tmp_path: Path) -> None:
    path = tmp_path / "in.csv"
    path.write_bytes(
        b'id,text\n1,"hello, world"\n2,"two\nlines"\n3,a,surplus\n4,\n5,12345\n6,"=SUM(A1:A9)"\n7,"\xff\xfe"\n'
    )
    records = _records(path)
    # ids are data rows as a person counts them (a quoted newline does not start a row), the
    # row the parser refused included, in file order
    assert [r.id for r in records] == [1, 2, 3, 4, 5, 6, 7]
    assert _kept(records) == [(1, "hello, world"), (2, "two\nlines"), (5, "12345"), (6, "=SUM(A1:A9)")]
    assert _skipped(records) == [(3, "bad_record"), (4, "empty"), (7, "not_text")]


def test_parquet_rows_and_a_column_that_is_not_text(tmp_path: Path) -> None:
    good = tmp_path / "in.parquet"
    pq.write_table(pa.table({"text": ["one", None, "  ", "two"], "n": [1, 2, 3, 4]}), good)
    assert _kept(_records(good)) == [(1, "one"), (4, "two")]
    assert _skipped(_records(good)) == [(2, "empty"), (3, "empty")]
    bad = tmp_path / "bad.parquet"
    pq.write_table(pa.table({"text": [1, 2]}), bad)
    with pytest.raises(ValueError, match="not text"):
        _records(bad)
    missing = tmp_path / "missing.csv"
    missing.write_text("sentence\nhello\n")
    with pytest.raises(ValueError, match="'text' column"):
        _records(missing)


@pytest.mark.parametrize("name", ["in.docx", "folder"])
def test_unreadable_inputs_are_refused(tmp_path: Path, name: str) -> None:
    (tmp_path / "folder").mkdir()
    (tmp_path / "in.docx").write_text("x")
    with pytest.raises(ValueError):
        corpus.open_source(tmp_path / name)


# --- the per-batch function -------------------------------------------------------------------


@pytest.mark.parametrize("fixture", ["minilm", "scratch"])
def test_batched_weights_and_statistics_equal_one_at_a_time(request: pytest.FixtureRequest, fixture: str) -> None:
    model = request.getfixturevalue(fixture)
    found = corpus.analyse(model, SENTENCES, max_tokens=64, batch_size=3, keep_weights=True)
    for i, text in enumerate(SENTENCES):
        att = model.attend(text, 64)
        assert found.tokens[i] == att.tokens
        assert found.truncated[i] == att.truncated
        np.testing.assert_allclose(found.weights[i], att.weights, atol=1e-5)
        reference = explain.head_stats(att)
        for name in corpus.STATS:
            np.testing.assert_allclose(found.stats[name][i], reference[name], atol=1e-5, rtol=1e-5, err_msg=name)
    assert found.truncated[5] and not any(found.truncated[:5])


def test_padding_never_reaches_the_statistics() -> None:
    """A padded batch of hand-built maps: a shift matrix (every row on i-1) and uniform rows,
    with NaN everywhere in the padding. Previous-token share 1 and entropy ln n, as REFERENCES.md
    pins them, and no NaN from the padding."""
    w, n_short, n_long = 6, 4, 6
    a = torch.full((2, 1, w, w), float("nan"))
    shift = torch.zeros(n_short, n_short)
    shift[0, 0] = 1.0
    shift[torch.arange(1, n_short), torch.arange(n_short - 1)] = 1.0
    a[0, 0, :n_short, :n_short] = shift
    a[1, 0] = torch.full((n_long, n_long), 1.0 / n_long)
    items = [
        Item({}, ["[CLS]", "a", ",", "[SEP]"], np.array([1, 0, 0, 1], dtype=bool), False),
        Item({}, ["[CLS]", "a", "b", "c", "d", "[SEP]"], np.array([1, 0, 0, 0, 0, 1], dtype=bool), False),
    ]
    stats = dict(zip(corpus.STATS, _layer_stats(a, items).numpy(), strict=True))  # name -> (B, H)
    assert not any(np.isnan(v).any() for v in stats.values())
    assert stats["prev"][0, 0] == pytest.approx(1.0)
    assert stats["next"][0, 0] == pytest.approx(0.0)
    assert stats["entropy"][0, 0] == pytest.approx(0.0, abs=1e-3)
    assert stats["cls"][0, 0] == pytest.approx(2 / 4)  # rows 0 and 1 look at [CLS]
    assert stats["punct"][0, 0] == pytest.approx(1 / 4)  # row 3 looks at ","
    assert stats["entropy"][1, 0] == pytest.approx(math.log(n_long), rel=1e-4)
    assert stats["entropy_rel"][1, 0] == pytest.approx(1.0, rel=1e-4)
    assert stats["sep"][1, 0] == pytest.approx(1 / n_long, rel=1e-5)


# --- a whole run ------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def small_input(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("corpus") / "small.txt"
    lines = (BUNDLED / "en.txt").read_text(encoding="utf-8").splitlines()[:14]
    lines += (BUNDLED / "zh.txt").read_text(encoding="utf-8").splitlines()[:8]
    lines[3:3] = ["", "\x00\x01", "z" * 3000]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def local_run(small_input: Path, minilm: attnviz.PretrainedModel) -> corpus.CorpusResult:
    return corpus.run(small_input, small_input.parent / "local", minilm, max_chars=2000, shard_size=8)


def test_run_reports_every_line(local_run: corpus.CorpusResult) -> None:
    r = local_run.report
    assert (r["lines_read"], r["analysed"], r["skipped"]) == (25, 22, 3)
    assert r["skipped_by_reason"] == {"empty": 1, "not_text": 1, "too_long": 1}
    assert r["skips"] == [
        {"id": 4, "reason": "empty"},
        {"id": 5, "reason": "not_text"},
        {"id": 6, "reason": "too_long"},
    ]
    assert not local_run.store.exists("shards")  # shards go once the outputs are in place


def test_heads_are_the_mean_and_spread_of_the_sentences(local_run: corpus.CorpusResult) -> None:
    table = local_run.sentences()
    L, H = local_run.n_layers, local_run.n_heads
    assert table.column("id").to_pylist() == [i for i in range(1, 26) if i not in (4, 5, 6)]
    heads = pq.read_table(local_run.store.path("heads.parquet"))
    assert heads.column("layer").to_pylist()[: H + 1] == [0] * H + [1]
    assert set(heads.column("sentences").to_pylist()) == {22}
    for name in corpus.STATS:
        values = np.array(table.column(name).to_pylist(), dtype=np.float64).reshape(-1, L, H)
        np.testing.assert_allclose(local_run.grid(name), values.mean(0), rtol=1e-9, atol=1e-12)
        np.testing.assert_allclose(local_run.grid(name, "std"), values.std(0), rtol=1e-6, atol=1e-9)
        np.testing.assert_array_equal(local_run.grid(name, "max"), values.max(0))


def test_most_and_least_typical_sentences(local_run: corpus.CorpusResult) -> None:
    table = local_run.sentences(["id", "text", "prev"])
    values = np.array(table.column("prev").to_pylist())[:, 1 * local_run.n_heads + 3]
    distance = np.abs(values - local_run.grid("prev")[1, 3])
    near, far = local_run.typical("prev", 1, 3, k=3)
    ids = np.array(table.column("id").to_pylist())
    assert [r["id"] for r in near] == ids[np.argsort(distance, kind="stable")[:3]].tolist()
    assert [r["id"] for r in far] == ids[np.argsort(-distance, kind="stable")[:3]].tolist()
    assert near[0]["text"] in table.column("text").to_pylist()


def test_a_finished_folder_is_read_back_and_other_settings_are_refused(
    small_input: Path, local_run: corpus.CorpusResult
) -> None:
    same = corpus.run(small_input, local_run.location, "minilm", max_chars=2000, shard_size=8)
    assert same.report == local_run.report  # no model was loaded: the run was already there
    with pytest.raises(corpus.SettingsMismatch):
        corpus.run(small_input, local_run.location, "minilm", max_tokens=64, max_chars=2000, shard_size=8)
    with pytest.raises(ValueError, match="no finished corpus run"):
        corpus.load(str(small_input.parent))


def test_output_to_a_uri(small_input: Path, local_run: corpus.CorpusResult, minilm: attnviz.PretrainedModel) -> None:
    out = corpus.run(small_input, (small_input.parent / "uri").as_uri(), minilm, max_chars=2000, shard_size=8)
    for name in ("sentences.parquet", "heads.parquet", "report.json"):
        assert (small_input.parent / "uri" / name).read_bytes() == (Path(local_run.location) / name).read_bytes()
    assert out.analysed == 22


def test_progress_can_stop_a_run_and_a_rerun_finishes_it(small_input: Path, minilm: attnviz.PretrainedModel) -> None:
    seen: list[corpus.RunProgress] = []

    def stop_in_shard_two(p: corpus.RunProgress) -> None:
        seen.append(p)
        if p.records >= 16:
            raise KeyboardInterrupt

    out = small_input.parent / "stopped"
    with pytest.raises(KeyboardInterrupt):
        corpus.run(small_input, out, minilm, max_chars=2000, shard_size=8, progress=stop_in_shard_two)
    assert sorted(p.name for p in (out / "shards").glob("part-*")) == ["part-000000.parquet", "part-000001.parquet"]
    assert all(0 <= p.fraction <= 1 for p in seen) and seen[-1].rate > 0
    seen.clear()
    done = corpus.run(small_input, out, minilm, max_chars=2000, shard_size=8, progress=seen.append)
    assert seen[-1].finished and seen[-1].resumed_records == 16 and done.analysed == 22


# --- killed and resumed -----------------------------------------------------------------------


def _cli(*args: str) -> list[str]:
    return [
        sys.executable,
        "-c",
        "import sys; from attnviz.corpus.cli import main; sys.exit(main(sys.argv[1:]))",
        *args,
    ]


def _cli_here(*args: str) -> int:
    """The same command in this process (`main(argv)`), on one thread as the killed one ran."""
    from attnviz.corpus.cli import main

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        return main(list(args))
    finally:
        torch.set_num_threads(threads)


@pytest.mark.slow
def test_a_run_killed_mid_way_resumes_to_the_same_files(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """SIGKILL (no chance to clean up) once two shards are on disk; the same command again ends
    with files byte-equal to those of an uninterrupted run. Only the killed run is a process of
    its own (a kill needs one); the uninterrupted run and the resumed one run here through
    `main(argv)`, on one thread like it (the command as a process: the killed run, and the
    README's corpus line in tests/test_readme.py)."""
    lines = (BUNDLED / "en.txt").read_text(encoding="utf-8").splitlines()[:60]
    src = tmp_path / "in.txt"
    data = [line.encode() for line in lines]
    data[10:10] = [b"", b"\xff not utf-8"]  # a bad line or two on the way
    src.write_bytes(b"\n".join(data) + b"\n")
    args = ["--device", "cpu", "--shard-size", "8", "--batch-size", "4", "--quiet"]
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"}
    assert _cli_here(str(src), "--out", str(tmp_path / "whole"), *args) == 0, capsys.readouterr().err[-2000:]

    out = tmp_path / "killed"
    proc = subprocess.Popen(_cli(str(src), "--out", str(out), *args), env=env, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 240
    while len(list((out / "shards").glob("part-*.parquet"))) < 2:
        assert proc.poll() is None and time.monotonic() < deadline, "the run ended before it could be killed"
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    assert not (out / "report.json").exists()
    done_before = len(list((out / "shards").glob("part-*.parquet")))
    assert 2 <= done_before < 8  # 62 lines: 8 shards

    assert _cli_here(str(src), "--out", str(out), *args) == 0, capsys.readouterr().err[-2000:]
    assert sorted(p.name for p in out.iterdir()) == ["heads.parquet", "report.json", "sentences.parquet"]
    for name in ("sentences.parquet", "heads.parquet", "report.json"):
        assert (out / name).read_bytes() == (tmp_path / "whole" / name).read_bytes(), name
    report = json.loads((out / "report.json").read_text())
    assert report["skips"] == [{"id": 11, "reason": "empty"}, {"id": 12, "reason": "not_text"}]


# --- the Ray engine -----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def ray_instance() -> object:
    """A local two-CPU Ray instance for this module, shut down after it."""
    if os.environ.get("CI"):
        import ray
    else:
        ray = pytest.importorskip("ray", reason="the Ray engine's tests need Ray (requirements-ray.txt)")
    ray.init(
        num_cpus=2, include_dashboard=False, log_to_driver=False, runtime_env={"env_vars": {"PYTHONPATH": str(ROOT)}}
    )
    yield ray
    ray.shutdown()


@pytest.mark.slow
@pytest.mark.filterwarnings("ignore::DeprecationWarning:ray.*")  # Ray Data's own settings, set by Ray
def test_ray_engine_gives_the_numbers_of_the_local_engine(
    ray_instance: object, small_input: Path, local_run: corpus.CorpusResult
) -> None:
    ray_run = corpus.run(
        small_input, small_input.parent / "ray", "minilm", engine="ray", device="cpu", max_chars=2000, shard_size=8
    )
    assert {k: v for k, v in ray_run.report.items() if k != "engine"} == {
        k: v for k, v in local_run.report.items() if k != "engine"
    }
    assert (ray_run.report["engine"], local_run.report["engine"]) == ("ray", "local")
    a, b = local_run.sentences(), ray_run.sentences()
    for column in ("id", "text", "tokens", "n_tokens", "truncated"):
        assert a.column(column).to_pylist() == b.column(column).to_pylist()
    for name in corpus.STATS:
        np.testing.assert_allclose(
            np.array(b.column(name).to_pylist()), np.array(a.column(name).to_pylist()), atol=1e-5, err_msg=name
        )
        np.testing.assert_allclose(ray_run.grid(name, "std"), local_run.grid(name, "std"), atol=1e-5)


# --- the query-key atlas ----------------------------------------------------------------------


@pytest.mark.parametrize("fixture", ["minilm", "scratch"])
def test_atlas_vectors_give_back_the_heads_attention(request: pytest.FixtureRequest, fixture: str) -> None:
    """softmax(q k^T / sqrt(d)) over each sentence's tokens is the head's attention, before and
    after AttentionViz's alignment (keys shifted, queries and keys scaled inversely)."""
    model = request.getfixturevalue(fixture)
    texts, layer, head = SENTENCES[:4], 2, 5
    q, k, where = corpus.query_key_vectors(model, texts, layer, head, batch_size=3)
    aligned = corpus.align(q, k)
    qn, kn = np.linalg.norm(aligned[0], axis=1).mean(), np.linalg.norm(aligned[1], axis=1).mean()
    assert qn == pytest.approx(kn, rel=1e-5)
    cq, ck = aligned[0].mean(0), aligned[1].mean(0)  # the centroids meet up to the inverse scaling
    assert float(cq @ ck) / (np.linalg.norm(cq) * np.linalg.norm(ck)) == pytest.approx(1.0, abs=1e-5)
    start = 0
    for text in texts:
        att = model.attend(text)
        for qq, kk in ((q, k), aligned):
            scores = qq[start : start + att.n] @ kk[start : start + att.n].T / math.sqrt(q.shape[1])
            weights = np.exp(scores - scores.max(1, keepdims=True))
            np.testing.assert_allclose(weights / weights.sum(1, keepdims=True), att.weights[layer, head], atol=1e-5)
        start += att.n
    assert start == len(q) == len(where.tokens)


def test_atlas_progress_counts_texts_and_ends_at_one(minilm: attnviz.PretrainedModel) -> None:
    """The atlas's progress is the share of texts analysed: rising, ending at 1 (it was batches
    over texts, so 7 texts in batches of 3 ended at 3/7)."""
    seen: list[float] = []
    corpus.query_key_vectors(minilm, SENTENCES[:7], 1, 2, batch_size=3, progress=seen.append)
    assert len(seen) == 3 and seen == sorted(seen) and seen[-1] == 1.0


def test_atlas_pca_points_and_cap(minilm: attnviz.PretrainedModel) -> None:
    texts = (BUNDLED / "en.txt").read_text(encoding="utf-8").splitlines()[:40]
    a = corpus.atlas(minilm, texts, 1, 2, max_points=200)
    m = a.n_tokens
    assert a.capped and 0 < 2 * m <= 200 and a.xy.shape == (2 * m, 2)
    assert a.is_key.tolist() == [False] * m + [True] * m
    q, k, _ = corpus.query_key_vectors(minilm, a.texts, 1, 2)
    points = np.concatenate(corpus.align(q, k)).astype(np.float64)
    centred = points - points.mean(0)
    top = np.linalg.svd(centred, compute_uv=False)[:2]
    # PCA coordinates: uncorrelated, with the variance of the two leading components
    np.testing.assert_allclose((a.xy.astype(np.float64) ** 2).sum(0), top**2, rtol=1e-3)
    assert abs(np.corrcoef(a.xy.T)[0, 1]) < 1e-3
    assert [a.tokens[i] for i in np.flatnonzero(a.position[:m] == 0)] == ["[CLS]"] * len(a.texts)
    with pytest.raises(ValueError, match="unknown projection"):
        corpus.project(points, "mds")


@pytest.mark.slow
def test_corpus_benchmark_smoke(tmp_path: Path) -> None:
    """The benchmark keeps working and prints its table (no timing is asserted)."""
    out = tmp_path / "corpus.md"
    run_bench("bench_corpus.py", "--sentences", "40", "--loop", "8", "--memory", "--no-ray", "--out", str(out))
    table = out.read_text()
    assert "| local engine (batched) |" in table and "| loop of attend |" in table
