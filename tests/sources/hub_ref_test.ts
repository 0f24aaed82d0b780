import assert from "node:assert/strict";
import { join } from "node:path";
import { formatHubRef, parseHubRef } from "../../src/sources/hub_ref.ts";
import { MAX_INDEX_ITEMS } from "../../src/formats/safetensors/sharded.ts";
import { selectModelFiles, selectQuant } from "../../src/sources/hub_select.ts";
import { hubSettingsFromEnv } from "../../src/sources/hub_settings.ts";

Deno.test("parseHubRef() reads org, name, revision and path", async (t) => {
  const cases: [string, string, string | undefined, string | undefined][] = [
    ["hf://microsoft/phi-4", "microsoft/phi-4", undefined, undefined],
    ["hf://microsoft/phi-4@main", "microsoft/phi-4", "main", undefined],
    ["hf://org/m.v2@abc123/sub/dir/", "org/m.v2", "abc123", "sub/dir"],
    ["hf://org/m/model-q4.gguf", "org/m", undefined, "model-q4.gguf"],
    ["hf://org/m@refs%2Fpr%2F1/x.gguf", "org/m", "refs/pr/1", "x.gguf"],
  ];
  for (const [text, repoId, revision, path] of cases) {
    await t.step(text, () => {
      const ref = parseHubRef(text);
      assert.deepEqual(ref, { repoId, revision, path });
      assert.deepEqual(parseHubRef(formatHubRef(ref)), ref);
    });
  }
});

Deno.test("parseHubRef() rejects malformed references", async (t) => {
  const cases: [string, RegExp][] = [
    ["microsoft/phi-4", /must start with "hf:\/\/"/],
    ["hf://phi-4", /expected hf:\/\/org\/name/],
    ["hf://org/", /"" is not a valid repository name/],
    ["hf://-org/m", /"-org" is not a valid owner name/],
    ["hf://org/m@", /revision after "@" is empty/],
    ["hf://org/m@%zz", /not valid percent-encoding/],
    ["hf://org/m@..%2Fx", /revision "..\/x" is not allowed/],
    ["hf://org/m/../../etc", /not a plain relative path/],
    ["hf://org/m/a\\b", /not a plain relative path/],
  ];
  for (const [text, message] of cases) {
    await t.step(text, () => {
      assert.throws(() => parseHubRef(text), (e: Error) => {
        assert.ok(e instanceof TypeError);
        assert.match(e.message, /^Cannot parse Hub reference/);
        assert.match(e.message, message);
        return true;
      });
    });
  }
});

Deno.test("hubSettingsFromEnv() follows the Hugging Face variables", async (t) => {
  await t.step("defaults", () => {
    const s = hubSettingsFromEnv({ HOME: "/home/u" });
    assert.deepEqual({ ...s, token: undefined }, {
      endpoint: "https://huggingface.co",
      token: undefined,
      home: "/home/u/.cache/huggingface",
      cacheDir: "/home/u/.cache/huggingface/hub",
      offline: false,
      timeouts: {},
    });
  });
  await t.step("explicit values", () => {
    const s = hubSettingsFromEnv({
      HF_ENDPOINT: "http://127.0.0.1:9/",
      HF_HOME: "/hf",
      HF_HUB_CACHE: "/cache",
      HF_TOKEN: "hf_x",
      HF_HUB_OFFLINE: "1",
      HF_HUB_ETAG_TIMEOUT: "2.5",
      HF_HUB_DOWNLOAD_TIMEOUT: "7",
      APR_HTTP_MIN_SPEED: "0",
      APR_HTTP_SPEED_TIME: "10",
    });
    assert.deepEqual(s, {
      endpoint: "http://127.0.0.1:9",
      token: "hf_x",
      home: "/hf",
      cacheDir: "/cache",
      offline: true,
      timeouts: {
        headerTimeoutMs: 2500,
        idleTimeoutMs: 7000,
        minBytesPerSecond: 0,
        speedWindowMs: 10000,
      },
    });
  });
  await t.step("a time limit that is not a number is refused, naming the variable", () => {
    assert.throws(
      () => hubSettingsFromEnv({ HF_HOME: "/none", HF_HUB_DOWNLOAD_TIMEOUT: "soon" }),
      /^TypeError: Cannot use HF_HUB_DOWNLOAD_TIMEOUT="soon": expected a positive number$/,
    );
    assert.throws(
      () => hubSettingsFromEnv({ HF_HOME: "/none", HF_HUB_ETAG_TIMEOUT: "0" }),
      /Cannot use HF_HUB_ETAG_TIMEOUT="0"/,
    );
  });
  for (
    const [value, offline] of [["0", false], ["true", true], ["YES", true], ["", false]] as const
  ) {
    await t.step(`HF_HUB_OFFLINE=${JSON.stringify(value)}`, () => {
      assert.equal(
        hubSettingsFromEnv({ HF_HUB_OFFLINE: value, HF_HOME: "/none" }).offline,
        offline,
      );
    });
  }
  await t.step("token file in HF_HOME", async () => {
    const home = await Deno.makeTempDir();
    try {
      await Deno.writeTextFile(join(home, "token"), "hf_from_file\n");
      assert.equal(hubSettingsFromEnv({ HF_HOME: home }).token, "hf_from_file");
      assert.equal(hubSettingsFromEnv({ HF_HOME: home, HF_TOKEN: "hf_env" }).token, "hf_env");
    } finally {
      await Deno.remove(home, { recursive: true });
    }
  });
});

Deno.test("selectModelFiles() picks only what the model needs", async (t) => {
  const index = JSON.stringify({ weight_map: { a: "s-1.safetensors", b: "s-2.safetensors" } });
  const read = (text: string) => () => Promise.resolve(text);
  const cases: [string, string[], string | undefined, string[]][] = [
    [
      "sharded, ignoring strays",
      [
        "README.md",
        "config.json",
        "model.safetensors.index.json",
        "s-1.safetensors",
        "s-2.safetensors",
        "stray.safetensors",
        "pytorch_model.bin",
        "tokenizer.json",
        "special_tokens_map.json",
        "hy.tiktoken",
        "tiktoken.model",
      ],
      undefined,
      [
        // The model card of a SafeTensors model (not of a GGUF, below), Hunyuan's and Kimi's tiktoken files.
        "README.md",
        "config.json",
        "hy.tiktoken",
        "model.safetensors.index.json",
        "s-1.safetensors",
        "s-2.safetensors",
        "special_tokens_map.json",
        "tiktoken.model",
        "tokenizer.json",
      ],
    ],
    [
      "single file",
      ["model.safetensors", "config.json", "model.gguf"],
      undefined,
      ["config.json", "model.safetensors"],
    ],
    ["single gguf", ["m-Q4_K.gguf", "README.md"], undefined, ["m-Q4_K.gguf"]],
    ["a named file", ["a.gguf", "b.gguf", "README.md"], "b.gguf", ["b.gguf"]],
    [
      "a named SafeTensors file",
      ["x/model.safetensors", "x/README.md", "README.md"],
      "x/model.safetensors",
      ["x/README.md", "x/model.safetensors"],
    ],
    [
      "a sub-folder",
      ["x/model.safetensors", "x/config.json", "config.json", "model.safetensors"],
      "x",
      ["x/config.json", "x/model.safetensors"],
    ],
  ];
  for (const [name, files, path, expected] of cases) {
    await t.step(name, async () => {
      assert.deepEqual(await selectModelFiles(files, read(index), { path }), expected);
    });
  }
  await t.step("include globs override", async () => {
    const files = ["a/b.json", "c.json", "w.gguf", "x/y/z.gguf"];
    assert.deepEqual(await selectModelFiles(files, read(index), { include: ["*.json"] }), [
      "c.json",
    ]);
    assert.deepEqual(await selectModelFiles(files, read(index), { include: ["**/*.gguf"] }), [
      "w.gguf",
      "x/y/z.gguf",
    ]);
  });
});

Deno.test("selectModelFiles() rejects what it cannot choose from", async (t) => {
  const cases: [string, string[], string, RegExp][] = [
    ["two ggufs", ["a.gguf", "b.gguf"], "{}", /2 GGUF files or split sets in "\/"; name one/],
    [
      "no weights",
      ["README.md"],
      "{}",
      /no model\.safetensors\.index\.json, model\.safetensors or \.gguf/,
    ],
    ["index not JSON", ["model.safetensors.index.json"], "{", /is not JSON/],
    [
      "no weight_map",
      ["model.safetensors.index.json"],
      "{}",
      /no weight_map object/,
    ],
    [
      "non-string shard",
      ["model.safetensors.index.json"],
      '{"weight_map":{"a":1}}',
      /maps "a" to a non-string/,
    ],
    [
      "unsafe shard",
      ["model.safetensors.index.json"],
      '{"weight_map":{"a":"../../x.safetensors"}}',
      /unsafe shard "\.\.\/\.\.\/x\.safetensors": it has a "\.\." path segment/,
    ],
    [
      "empty shard name",
      ["model.safetensors.index.json"],
      '{"weight_map":{"a":""}}',
      /unsafe shard "": it is empty/,
    ],
    [
      "shard named .",
      ["model.safetensors.index.json"],
      '{"weight_map":{"a":"."}}',
      /unsafe shard "\.": it has a "\." path segment/,
    ],
    [
      "NUL in a shard name",
      ["model.safetensors.index.json"],
      '{"weight_map":{"a":"x\\u0000.safetensors"}}',
      /unsafe shard "x\\u0000\.safetensors": it contains a control character/,
    ],
    [
      "absolute shard",
      ["model.safetensors.index.json"],
      '{"weight_map":{"a":"/etc/x.safetensors"}}',
      /unsafe shard "\/etc\/x\.safetensors": it is absolute/,
    ],
    [
      // Counted before parsing: JSON.parse of millions of tiny entries takes minutes.
      "more entries than tensors a model may have",
      ["model.safetensors.index.json"],
      `{"weight_map":{${
        Array.from({ length: MAX_INDEX_ITEMS + 1 }, (_, i) => `"${i}":"a"`).join(",")
      }}}`,
      new RegExp(`has more than ${MAX_INDEX_ITEMS} entries`),
    ],
  ];
  for (const [name, files, indexText, message] of cases) {
    await t.step(name, async () => {
      await assert.rejects(
        selectModelFiles(files, () => Promise.resolve(indexText)),
        (e: Error) => {
          assert.ok(e instanceof TypeError);
          assert.match(e.message, message);
          return true;
        },
      );
    });
  }
  await t.step("include matching nothing", async () => {
    await assert.rejects(
      selectModelFiles(["a.json"], () => Promise.resolve(""), { include: ["*.gguf"] }),
      /no file matches "\*\.gguf"/,
    );
  });
});

Deno.test("hf://org/name:QUANT (issue 25 item 3)", () => {
  assert.deepEqual(parseHubRef("hf://org/m-GGUF:Q4_K_M"), {
    repoId: "org/m-GGUF",
    revision: undefined,
    path: undefined,
    quant: "Q4_K_M",
  });
  assert.equal(parseHubRef("hf://org/m@v2:iq2_xxs").revision, "v2");
  assert.equal(parseHubRef("hf://org/m@v2:iq2_xxs").quant, "iq2_xxs");
  assert.equal(formatHubRef(parseHubRef("hf://org/m@v2:Q8_0")), "hf://org/m@v2:Q8_0");
  assert.throws(() => parseHubRef("hf://org/m:"), /"" is not a quantization tag/);
  assert.throws(() => parseHubRef("hf://org/m:Q4/f.gguf"), /give no path after it/);
});

Deno.test("selectModelFiles(): split GGUF sets and quantization tags (issue 25 items 1 and 3)", async () => {
  const set = (p: string, n: number) =>
    Array.from({ length: n }, (_, i) => `${p}-0000${i + 1}-of-0000${n}.gguf`);
  const repo = [
    "README.md",
    "config.json",
    ...set("Q8_0/m-Q8_0", 2),
    ...set("m-Q4_K_M", 3),
    "m-IQ2_XXS.gguf",
    "mmproj-m-F16.gguf",
    "m.imatrix.gguf",
  ];
  const none = () => Promise.reject(new Error("no index"));
  // A shard's path selects its whole set.
  assert.deepEqual(await selectModelFiles(repo, none, { path: "m-Q4_K_M-00002-of-00003.gguf" }), [
    "config.json",
    ...set("m-Q4_K_M", 3),
  ]);
  // Tags: any case, split or not, in a folder or not; projectors never.
  assert.deepEqual(await selectModelFiles(repo, none, { quant: "q4_k_m" }), [
    "config.json",
    ...set("m-Q4_K_M", 3),
  ]);
  assert.deepEqual(await selectModelFiles(repo, none, { quant: "Q8_0" }), set("Q8_0/m-Q8_0", 2));
  assert.deepEqual(await selectModelFiles(repo, none, { quant: "iq2_xxs" }), [
    "config.json",
    "m-IQ2_XXS.gguf",
  ]);
  // The projector's F16 is not a model.
  assert.throws(() => selectQuant(repo, "F16"), /no GGUF file or split set of quantization "F16"/);
  await assert.rejects(
    selectModelFiles(repo, none, { quant: "Q5_K_M" }),
    /no GGUF file or split set of quantization "Q5_K_M" \(available: IQ2_XXS, Q4_K_M, Q8_0\)/,
  );
  // A folder holding one split set selects it.
  assert.deepEqual(await selectModelFiles(repo, none, { path: "Q8_0" }), set("Q8_0/m-Q8_0", 2));
});
