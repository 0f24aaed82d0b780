"""Hugging Face `tokenizers`' ids of texts whose words carry combining marks (\\p{M}), once.

Issue 35 item 2: llama.cpp's `gpt-4o` and `tekken` regexes rewrite the o200k /
Tekken letter classes as lookaheads on \\p{L} only, so a combining mark (a
Devanagari vowel sign, a Thai tone mark, an NFD accent, an emoji's variation
selector) splits a word that transformers keeps whole. The tests check which
`tokenizer.ggml.pre` name makes llama.cpp tokenize these texts as transformers.

    /work/tools/venv5/bin/python make_combining_marks.py PACKAGES_DIR > combining_marks.json

PACKAGES_DIR is `.tools/tokenizer-packages` after a tokenizer test ran (each
KEY-VERSION/ holds the package's tokenizer.json). `tokenizers` runs the
tokenizer.json itself, as transformers does for these byte-level BPE files.
"""
import json
import sys
import unicodedata
from pathlib import Path

import tokenizers

HERE = Path(__file__).parent
KEYS = ["gptoss", "mistral_nemo"]
TEXTS = [
    "नमस्ते दुनिया",
    "हिन्दी भाषा में लिखा गया वाक्य",
    "संस्कृतम् जगतः एकतमा अतिप्राचीना समृद्धा शास्त्रीया च भाषासु वर्तते",
    "मराठी भाषा महाराष्ट्राची राजभाषा आहे",
    "नेपाली भाषा",
    "বাংলা ভাষা পৃথিবীর অন্যতম প্রধান ভাষা",
    "ਪੰਜਾਬੀ ਭਾਸ਼ਾ",
    "ગુજરાતી ભાષા",
    "ଓଡ଼ିଆ ଭାଷା",
    "தமிழ் மொழி உலகின் பழமையான மொழிகளில் ஒன்று",
    "తెలుగు భాష",
    "ಕನ್ನಡ ಭಾಷೆ",
    "മലയാളം ഭാഷ",
    "සිංහල භාෂාව",
    "ภาษาไทยเป็นภาษาที่มีวรรณยุกต์",
    "ສະບາຍດີ ພາສາລາວ",
    "ភាសាខ្មែរ",
    "မြန်မာဘာသာ",
    "བོད་ཡིག",
    "ꦧꦱꦗꦮ",
    "اَلْعَرَبِيَّةُ لُغَةٌ جَمِيلَةٌ",
    "בְּרֵאשִׁית בָּרָא אֱלֹהִים",
    unicodedata.normalize("NFD", "Tiếng Việt có dấu"),
    unicodedata.normalize("NFD", "Café naïve résumé façade"),
    unicodedata.normalize("NFD", "Ελληνικά: ἀρχὴ καὶ τέλος"),
    unicodedata.normalize("NFD", "Ẹ kú àárọ̀, Yorùbá"),
    "Ру́сский язы́к с ударе́ниями",
    "e\u0301 decomposed accent",
    "Z̵̢̛a̴͎͝l̷̰̈g̶̣̾o̸͙͝ text",
    "❤️ ☺️ ✌️ variation selectors",
    "か\u3099 さ\u3099 combining dakuten",
    "IPA: [ˈfoʊ̯nɛtɪks] t̪ d̪ n̥",
    "Cyrillic і̂ and Latin ǭ",
    "MIXED हिन्दी and English words",
    "UPPER ÀÉÎ lower àéî with NFD: " + unicodedata.normalize("NFD", "ÀÉÎ àéî"),
    "क्षत्रिय ज्ञान श्रृंखला",
    "ক্ষমা জ্ঞান",
    "Thai numbers ๑๒๓ and ข้าว",
    "a\u0300\u0301\u0302\u0303 stacked marks",
]


def main() -> None:
    packages = json.loads((HERE / "packages.json").read_text(encoding="utf-8"))
    root = Path(sys.argv[1])
    out = {"tokenizers_version": tokenizers.__version__, "texts": TEXTS, "ids": {}}
    for key in KEYS:
        tok = tokenizers.Tokenizer.from_file(str(root / f"{key}-{packages[key]['version']}" / "tokenizer.json"))
        out["ids"][key] = [tok.encode(t, add_special_tokens=False).ids for t in TEXTS]
    json.dump(out, sys.stdout, ensure_ascii=False, indent=None, separators=(",", ":"))
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
