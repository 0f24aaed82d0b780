"""Train a tiny SentencePiece BPE model (byte fallback, a user-defined and a control piece)
and record what the sentencepiece library itself says about it: every piece's text, score
and type (the SentencePieceProcessor view llama.cpp's converter reads), the normalizer's
add_dummy_prefix/remove_extra_whitespaces, and the ids it gives a few strings.

    python make_model.py   # writes tiny.model and tiny.expected.json here
"""
import json
from pathlib import Path

import sentencepiece as spm
from sentencepiece import sentencepiece_model_pb2 as pb

HERE = Path(__file__).parent
TEXT = """The quick brown fox jumps over the lazy dog.
Pack my box with five dozen liquor jugs!
How vexingly quick daft zebras jump; the five boxing wizards jump quickly.
Sphinx of black quartz, judge my vow. 1234567890 + 42 = 1276
""" * 20

(HERE / "corpus.txt").write_text(TEXT, encoding="utf-8")
spm.SentencePieceTrainer.train(
    input=str(HERE / "corpus.txt"), model_prefix=str(HERE / "tiny"), model_type="bpe",
    vocab_size=400, byte_fallback=True, character_coverage=1.0,
    user_defined_symbols=["<tool>"], control_symbols=["<ctrl>"],
    remove_extra_whitespaces=True, add_dummy_prefix=True, normalization_rule_name="identity", bos_id=1, eos_id=2, unk_id=0,
    minloglevel=2,
)
(HERE / "corpus.txt").unlink()
(HERE / "tiny.vocab").unlink()

sp = spm.SentencePieceProcessor(model_file=str(HERE / "tiny.model"))
proto = pb.ModelProto()
proto.ParseFromString((HERE / "tiny.model").read_bytes())
types = []
for i in range(sp.vocab_size()):
    # The converter's order of checks (_create_vocab_sentencepiece): USER_DEFINED falls to NORMAL.
    t = 1
    if sp.IsUnknown(i): t = 2
    elif sp.IsControl(i): t = 3
    elif sp.IsUnused(i): t = 5
    elif sp.IsByte(i): t = 6
    types.append(t)
strings = ["The quick brown fox", "  two  spaces", "zebras <tool> 42", "ünïcödé"]
json.dump({
    "pieces": [sp.IdToPiece(i) for i in range(sp.vocab_size())],
    "scores": [sp.GetScore(i) for i in range(sp.vocab_size())],
    "converter_types": types,
    "proto_types": [p.type for p in proto.pieces],
    "add_dummy_prefix": proto.normalizer_spec.add_dummy_prefix,
    "remove_extra_whitespaces": proto.normalizer_spec.remove_extra_whitespaces,
    "strings": strings,
    "ids": [sp.encode(s) for s in strings],
}, open(HERE / "tiny.expected.json", "w"), ensure_ascii=False)
