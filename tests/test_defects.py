"""Defects a teacher and a student met (issue 23, "Why" and item 8), each pinned where a test can
hold it without a browser: no English left in the Chinese catalogues, Chinese prose that counts
layers and heads from 1, the caveat whose title and body disagreed, simplified characters in
the bundled Chinese corpus, no developer text or "1 heads" on student pages, no Python `None` in
the scoreboard tables. The rendered pages and the browser's measurements are in
tests/test_defects_pages.py and tests/test_browser_layout.py."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from attnviz import i18n
from attnviz.app.sections import faithfulness

ROOT = Path(__file__).resolve().parents[1]
ZH_CORPUS = ROOT / "assets" / "corpus" / "zh.txt"

# Names, abbreviations, units, file formats and key names a Chinese text keeps in Latin letters.
_ALLOWED = """
    ALTI AOPC BERT CLS CPU CSV DistilBERT ELECTRA GlobEnc GPT GPU HTML ID JSON MASK MB MiniLM NPZ
    PCA PNG PyTorch QK RoBERTa SEP SVG SmolLM UMAP UNK t-SNE Kendall Spearman Value Zeroing Hugging
    Face Hub attnviz auto bert-base-uncased config float inf ln softmax csv txt jsonl parquet
    json text small e5-small d_model br MiniLM-L6 all-MiniLM-L6-v2 SmolLM2 float32 d_k W_Q W_K W_V L1
    Abnar Brunner Clark Edin Ferrando Gu Hooker Jain Kobayashi Michel Modarressi Mohebbi Olsson
    Pinter Wallace Wiegreffe Xiao Zuidema AttentionViz cpu cuda mps SmolLM2-135M Llama nostalgebraist kv
    May UTF-8 smollm2 Longformer BigBird Beltagy Zaheer Dao FlashAttention SDPA Transformer ViT torch
    exp max UTC Ctrl
"""
ALLOWED_LATIN = frozenset(_ALLOWED.split())
LATIN_WORD = re.compile(r"(?<![0-9])[A-Za-z][A-Za-z0-9_\-']*")  # not the e of 1.3e-06
# Traditional-only forms (their simplified forms in comments are what the corpus now uses).
TRADITIONAL = "東樹愛國學書們這來長馬見風車門語歲萬華會鳥島橋難歷張陳師葉韓"  # 东树爱国学书们这来长马见风车门语岁万华会鸟岛桥难历张陈师叶韩


def latin_words(text: str) -> set[str]:
    """Latin-letter words of a text, outside {placeholders}, <tags>, links and glosses (the
    English term in full-width brackets after its Chinese name, as 注意力展开（rollout）)."""
    text = re.sub(r"\{[^}]*\}|<[^>]*>|https?://\S+|(?<=[\u4e00-\u9fff])（[A-Za-z][\w\- ]*）", " ", text)
    return set(LATIN_WORD.findall(text))


def english_in(text: str) -> set[str]:
    return {w for w in latin_words(text) if w not in ALLOWED_LATIN and len(w) > 1}


def test_no_english_left_in_the_chinese_catalogue() -> None:
    found = {k: english_in(v) for k, v in i18n.catalogue("zh").items()}
    assert {k: v for k, v in found.items() if v} == {}


def test_the_english_scan_finds_english() -> None:  # the scan itself, on the issue's own examples
    assert english_in("模型 minilm，输出：sentence embedding (mean of the last layer)") == {
        "minilm",
        "sentence",
        "embedding",
        "mean",
        "of",
        "the",
        "last",
        "layer",
    }
    assert english_in("下载 heads.parquet") == {"heads"}
    assert english_in("层 {layer}，头 {head}，BERT 与 GlobEnc") == set()


def _cjk(text: str) -> set[str]:
    return {ch for ch in text if "\u4e00" <= ch <= "\u9fff"}


def _outside_gb2312(chars: set[str]) -> set[str]:
    """Characters GB2312 (the simplified-Chinese set) cannot encode: traditional forms, mostly."""
    out = set()
    for ch in chars:
        try:
            ch.encode("gb2312")
        except UnicodeEncodeError:
            out.add(ch)
    return out


def _zh_texts() -> dict[str, str]:
    examples = json.loads((ROOT / "attnviz" / "locales" / "examples.json").read_text(encoding="utf-8"))
    return {
        "corpus": ZH_CORPUS.read_text(encoding="utf-8"),
        "catalogue": "\n".join(i18n.catalogue("zh").values()),
        "examples": json.dumps(examples["zh"], ensure_ascii=False),
    }


@pytest.mark.parametrize("name", ["corpus", "catalogue", "examples"])
def test_chinese_text_is_simplified(name: str) -> None:
    text = _zh_texts()[name]
    assert {ch for ch in TRADITIONAL if ch in text} == set()
    assert _outside_gb2312(_cjk(text)) == set()


def test_the_traditional_check_catches_the_issue_examples() -> None:
    assert _outside_gb2312(_cjk("東京 樹 愛")) == {"東", "樹", "愛"}
    assert _outside_gb2312(_cjk("东京 树 爱")) == set()


def test_chinese_prose_names_layers_and_heads_by_the_pickers_index() -> None:
    assert i18n.t("fig.layer_head", "zh", layer=0, head=5) == "层 0，头 5"
    assert i18n.t("fig.layer_head", "en", layer=0, head=5) == "layer 0, head 5"  # indices, as the pickers
    assert i18n.t("sinks.caveat", "zh", layer=0, head=6, share="50%", token="[CLS]").startswith("层 0 的头 6")
    assert i18n.t("fig.head_n", "zh", h=0) == "头 0"
    for key, text in i18n.catalogue("zh").items():  # an index is a label ("层 0"), never an ordinal ("第 0 层")
        assert not re.search(r"第 ?\{(layer|head|h|heads)(![a-z])?\}", text), key
        assert not re.search(r"第 ?\d+ ?(层|个头)", text), key


def test_the_mixing_caveat_title_and_body_name_the_same_layer() -> None:
    title, body = i18n.t("caveats.mixing.title", "zh"), i18n.t("caveats.mixing.body", "zh")
    after = int(re.search(r"层 (\d+) 之后", title).group(1))  # type: ignore[union-attr]
    start = int(re.search(r"从层 (\d+) 起", body).group(1))  # type: ignore[union-attr]
    assert start == after + 1


def test_formatting_shows_every_value_as_given() -> None:
    assert i18n.t("fig.layer_head", "zh", layer="x", head=True) == "层 x，头 True"
    assert i18n.t("fig.layer_head", "zh", layer=3, head=1) == "层 3，头 1"  # the index itself, not counted from 1
    assert i18n.placeholders("层 {layer}") == {"layer"}


@pytest.mark.parametrize("lang", i18n.LANGUAGES)
def test_no_developer_text_in_the_catalogues(lang: str) -> None:
    for key, text in i18n.catalogue(lang).items():
        if key == "fx.average_missing":  # shown only where the deployment lacks its data file
            continue
        for dev in ("python bench", "bench/", "∂F/∂ξ", "dF/d", "pip install"):
            assert dev not in text, (key, dev)


def test_one_head_is_not_one_heads() -> None:
    for key in ("abl.computing", "abl.showing", "abl.fig.hover_curve"):
        assert "1 heads" not in i18n.t(key, "en", k=1, d="0.1")


def test_scoreboard_cells_never_show_none() -> None:
    assert [faithfulness._number(v) for v in (None, float("nan"), 0.81234, 13, "x", True)] == [
        "—",
        "—",
        "0.812",
        "13",
        "—",
        "—",
    ]
