"""Bake Hugging Face models into the image at build time, for classrooms without internet.

    python docker/bake_models.py bert-base-uncased distilbert-base-uncased

Each id is fetched once (weights as safetensors, config, tokenizer files) into the Hugging
Face cache ($HF_HOME), where `load_model(id)` finds it later with HF_HUB_OFFLINE=1. Ids are
checked before anything is fetched; no remote code is ever fetched or run.
"""

from __future__ import annotations

import re
import sys

ALLOW = ["*.json", "*.safetensors", "*.txt", "*.model", "merges.txt", "vocab.*"]
HUB_ID = re.compile(r"^[A-Za-z0-9][\w.-]{0,95}(/[\w.-]{1,96})?$")


def main(ids: list[str]) -> int:
    ids = [i for raw in ids for i in raw.replace(",", " ").split() if i]
    bad = [i for i in ids if not HUB_ID.match(i)]
    if bad:
        print(f"bake_models: not a Hugging Face model id: {', '.join(bad)}", file=sys.stderr)
        return 2
    if not ids:
        print("bake_models: no extra models requested")
        return 0
    from huggingface_hub import snapshot_download

    for model_id in ids:
        try:
            path = snapshot_download(model_id, allow_patterns=ALLOW)
        except Exception as exc:
            print(f"bake_models: could not fetch {model_id}: {str(exc).splitlines()[0][:200]}", file=sys.stderr)
            return 2
        print(f"bake_models: {model_id} -> {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
