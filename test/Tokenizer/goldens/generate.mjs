// Regenerates the tokenizer goldens under test/Tokenizer/Inputs/ with
// OpenAI's tiktoken (npm `tiktoken`, its Rust core compiled to WASM).
// Not run in CI:  cd test/Tokenizer/goldens && npm ci && node generate.mjs
//
// Writes
//   ../Inputs/tok/tiktoken.model         the first BASE_COUNT ranks of o200k_base
//                                         ("base64(bytes) rank" per line)
//   ../Inputs/tok/tokenizer_config.json  Kimi K2-shaped config: special tokens
//                                         at BASE_COUNT + k, chat template
//   ../Inputs/goldens.jsonl              {"name", "text", "ids"} per line
//
// The encoder is built from the tiktoken.model written here, Kimi's
// pre-tokenizer pattern and Kimi's 256 reserved special tokens, and the text
// is cut the way Kimi's tokenization_kimi.py cuts it before tiktoken sees it.

import { readFileSync, writeFileSync, mkdirSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { Tiktoken } from "tiktoken";

const require = createRequire(import.meta.url);
const here = dirname(fileURLToPath(import.meta.url));
const inputs = join(here, "..", "Inputs");
const tokDir = join(inputs, "tok");

const ENCODING = "o200k_base";
const BASE_COUNT = 32768;
const NUM_RESERVED_SPECIAL_TOKENS = 256; // Kimi's num_reserved_special_tokens
const TIKTOKEN_MAX_ENCODE_CHARS = 400_000; // tokenization_kimi.py
const MAX_NO_WHITESPACES_CHARS = 25_000; // tokenization_kimi.py

// Kimi's pre-tokenizer pattern, verbatim (tokenization_kimi.py).
const PAT_STR = [
  String.raw`[\p{Han}]+`,
  String.raw`[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}&&[^\p{Han}]]*[\p{Ll}\p{Lm}\p{Lo}\p{M}&&[^\p{Han}]]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?`,
  String.raw`[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}&&[^\p{Han}]]+[\p{Ll}\p{Lm}\p{Lo}\p{M}&&[^\p{Han}]]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?`,
  String.raw`\p{N}{1,3}`,
  String.raw` ?[^\s\p{L}\p{N}]+[\r\n]*`,
  String.raw`\s*[\r\n]+`,
  String.raw`\s+(?!\S)`,
  String.raw`\s+`,
].join("|");

// Kimi K2's named special tokens, at BASE_COUNT + offset (163584 + offset in
// K2). Every other id in [BASE_COUNT, BASE_COUNT + 256) is
// <|reserved_token_{id}|>.
const NAMED_SPECIALS = [
  [0, "[BOS]"],
  [1, "[EOS]"],
  [2, "<|im_end|>"],
  [3, "<|im_user|>"],
  [4, "<|im_assistant|>"],
  [6, "<|start_header_id|>"],
  [7, "<|end_header_id|>"],
  [9, "[EOT]"],
  [10, "<|im_system|>"],
  [17, "<|im_middle|>"],
];

const CHAT_TEMPLATE =
  "{%- for message in messages -%}" +
  "{%- if loop.first and message['role'] != 'system' -%}" +
  "<|im_system|>system<|im_middle|>You are a helpful assistant<|im_end|>" +
  "{%- endif -%}" +
  "{%- if message['role'] == 'system' -%}<|im_system|>system<|im_middle|>" +
  "{%- elif message['role'] == 'user' -%}<|im_user|>user<|im_middle|>" +
  "{%- else -%}<|im_assistant|>assistant<|im_middle|>" +
  "{%- endif -%}" +
  "{{ message['content'] }}<|im_end|>" +
  "{%- endfor -%}" +
  "{%- if add_generation_prompt -%}<|im_assistant|>assistant<|im_middle|>{%- endif -%}";

// ---------------------------------------------------------------------------
// The rank file: a prefix of o200k_base as shipped in the npm package.
// encoders/<name>.json holds {pat_str, special_tokens, bpe_ranks}; bpe_ranks is
// tiktoken-js's compact form, lines of "<tag> <first rank> <b64> <b64> ..."
// where the i-th base64 token has rank first + i.

function loadPackageRanks(name) {
  const { bpe_ranks } = require(`tiktoken/encoders/${name}.json`);
  const ranks = new Map(); // rank -> base64
  for (const line of bpe_ranks.split("\n")) {
    if (!line) continue;
    const parts = line.split(" ");
    const first = Number.parseInt(parts[1], 10);
    for (let i = 2; i < parts.length; ++i) ranks.set(first + i - 2, parts[i]);
  }
  return ranks;
}

function writeRankFile() {
  const ranks = loadPackageRanks(ENCODING);
  const lines = [];
  const singleBytes = new Set();
  const seen = new Set();
  for (let r = 0; r < BASE_COUNT; ++r) {
    const b64 = ranks.get(r);
    if (b64 === undefined) throw new Error(`${ENCODING}: rank ${r} missing`);
    const bytes = Buffer.from(b64, "base64");
    if (bytes.toString("base64") !== b64) throw new Error(`rank ${r}: non-canonical base64`);
    const key = bytes.toString("hex");
    if (seen.has(key)) throw new Error(`rank ${r}: duplicate token`);
    seen.add(key);
    if (bytes.length === 1) singleBytes.add(bytes[0]);
    lines.push(`${b64} ${r}`);
  }
  if (singleBytes.size !== 256) {
    throw new Error(`only ${singleBytes.size} single bytes below rank ${BASE_COUNT}`);
  }
  mkdirSync(tokDir, { recursive: true });
  const text = lines.join("\n") + "\n";
  writeFileSync(join(tokDir, "tiktoken.model"), text);
  return text;
}

function specialTokens() {
  const named = new Map(NAMED_SPECIALS.map(([k, s]) => [BASE_COUNT + k, s]));
  const out = {};
  for (let id = BASE_COUNT; id < BASE_COUNT + NUM_RESERVED_SPECIAL_TOKENS; ++id) {
    out[named.get(id) ?? `<|reserved_token_${id}|>`] = id;
  }
  return out;
}

function writeTokenizerConfig() {
  const decoder = {};
  for (const [k, content] of NAMED_SPECIALS) {
    decoder[String(BASE_COUNT + k)] = {
      content,
      lstrip: false,
      normalized: false,
      rstrip: false,
      single_word: false,
      special: true,
    };
  }
  const config = {
    added_tokens_decoder: decoder,
    additional_special_tokens: NAMED_SPECIALS.map(([, s]) => s).filter(
      (s) => s !== "[BOS]" && s !== "[EOS]",
    ),
    bos_token: "[BOS]",
    eos_token: "<|im_end|>",
    chat_template: CHAT_TEMPLATE,
    clean_up_tokenization_spaces: false,
    model_max_length: 1048576,
    tokenizer_class: "TikTokenTokenizer",
  };
  writeFileSync(join(tokDir, "tokenizer_config.json"), JSON.stringify(config, null, 2) + "\n");
}

// ---------------------------------------------------------------------------
// Kimi's cutting (tokenization_kimi.py), indexed by code point like Python.

// Python's str.isspace(): bidirectional class WS, B or S, or category Zs.
const PY_SPACE = new Set([
  0x09, 0x0a, 0x0b, 0x0c, 0x0d, 0x1c, 0x1d, 0x1e, 0x1f, 0x20, 0x85, 0xa0,
  0x1680, 0x2000, 0x2001, 0x2002, 0x2003, 0x2004, 0x2005, 0x2006, 0x2007,
  0x2008, 0x2009, 0x200a, 0x2028, 0x2029, 0x202f, 0x205f, 0x3000,
]);
const isspace = (cp) => PY_SPACE.has(cp);

// _split_whitespaces_or_nonwhitespaces over an array of code points.
function* splitWhitespacesOrNonwhitespaces(cps, maxLen) {
  let currentSliceLen = 0;
  let currentSliceIsSpace = cps.length > 0 ? isspace(cps[0]) : false;
  let sliceStart = 0;
  for (let i = 0; i < cps.length; ++i) {
    const isNowSpace = isspace(cps[i]);
    if (currentSliceIsSpace !== isNowSpace) {
      currentSliceLen = 1;
      currentSliceIsSpace = isNowSpace;
    } else {
      currentSliceLen += 1;
      if (currentSliceLen > maxLen) {
        yield cps.slice(sliceStart, i);
        sliceStart = i;
        currentSliceLen = 1;
      }
    }
  }
  yield cps.slice(sliceStart);
}

function kimiPieces(text) {
  const cps = Array.from(text, (c) => c.codePointAt(0));
  const pieces = [];
  // range(0, len(text), TIKTOKEN_MAX_ENCODE_CHARS): no chunk at all for "".
  for (let i = 0; i < cps.length; i += TIKTOKEN_MAX_ENCODE_CHARS) {
    const chunk = cps.slice(i, i + TIKTOKEN_MAX_ENCODE_CHARS);
    for (const piece of splitWhitespacesOrNonwhitespaces(chunk, MAX_NO_WHITESPACES_CHARS)) {
      pieces.push(cpsToString(piece));
    }
  }
  return pieces;
}

function cpsToString(cps) {
  let s = "";
  for (let i = 0; i < cps.length; i += 4096) {
    s += String.fromCodePoint(...cps.slice(i, i + 4096));
  }
  return s;
}

function kimiEncode(enc, text) {
  const ids = [];
  for (const piece of kimiPieces(text)) {
    for (const id of enc.encode(piece, "all")) ids.push(id);
  }
  return ids;
}

// ---------------------------------------------------------------------------
// The corpus.

function corpus() {
  const c = [];
  const add = (name, text) => c.push({ name, text });

  add("empty", "");
  add("single_space", " ");
  add("single_newline", "\n");
  add("single_letter", "a");
  add("english_sentence", "The quick brown fox jumps over the lazy dog.");
  add(
    "english_paragraph",
    "Hello, world! This is a test of the tokenizer: it handles punctuation, " +
      "\"quotes\", (parentheses) and numbers like 42 -- doesn't it?",
  );
  add("cjk_ascii_and_cjk_punct", "你好，世界！Hello、世界。");
  add("cjk_leading_ideographic_comma", "、世界");
  add("cjk_han_then_latin", "中文English混合text测试");
  add("cjk_han_iteration_mark", "人々は時々、様々なことを言う。");
  add("japanese_kana_kanji", "東京都に住んでいます。カタカナとひらがなと漢字を混ぜた文章です。");
  add("japanese_halfwidth_katakana", "ｶﾀｶﾅ ﾃｽﾄ ｰ");
  add("korean", "안녕하세요, 세계! 한국어 문장입니다. 한글ABC조합");
  add("camel_pascal_allcaps", "parseHTTPResponse XMLHttpRequest getURLForID NASA ALLCAPS iPhone McDonald");
  add("snake_and_kebab", "snake_case_name kebab-case-name SCREAMING_SNAKE __dunder__");
  add("contractions_mixed_case", "I'M don'T they'Re WE'LL it's She'S you'VE I'd THEY'D o'clock 'tis");
  add("contractions_curly_apostrophe", "it\u2019s don\u2019t I\u2019M");
  add("digit_runs", "1234567 3.14159 2026-12-04 0007 1,000,000 12:30:45 v1.2.3 1e-10");
  add("digits_nonascii", "٠١٢٣٤٥٦٧٨٩ ０１２３ ½ ² Ⅻ");
  add("crlf_lines", "line one\r\nline two\r\n\r\nline four\r\n");
  add("blank_lines", "para one\n\n\npara two\n\n\n\n");
  add("trailing_spaces", "trailing   \nspaces    ");
  add("tabs", "\tindented\t\ttabs\t \t\nend\t");
  add("mixed_whitespace", " \u00a0\u3000x\u2003y \u2028z\u0085w");
  add("cr_only", "a\rb\r\rc");
  add("leading_spaces_words", "   leading and    inner   spaces");
  add("punct_runs", "!!! ??? ... --- *** ;;; ::: \"\"\" ''' ``` ~~~ <=> != ==> ->");
  add("punct_then_newlines", "end.\n\n\nnext;\r\n\r\n");
  // Whitespace by Unicode's White_Space (Rust regex's \s), which U+180E is
  // not, next to the separators that are.
  add("mongolian_vowel_separator", "  \u180e a\u180e\u180e b \u2000\u205f\u3000c\u200b d");
  add("emoji_basic", "I ❤️ pizza 🍕 and 😀😃😄!");
  add("emoji_zwj_and_flags", "👨‍👩‍👧‍👦 family, 🏳️‍🌈 flag, 🇯🇵🇺🇸🇩🇪 flags, 👍🏽 tone");
  add("combining_marks", "cafe\u0301 e\u0301te\u0301 n\u0303 a\u0300\u0301\u0302 Z\u0351\u0352\u0353");
  add("precomposed_vs_decomposed", "café café Å Å");
  add("arabic", "مرحبا بالعالم! هذا اختبار ١٢٣.");
  add("hebrew", "שָׁלוֹם עוֹלָם, זה מבחן 123.");
  add("devanagari", "नमस्ते दुनिया। यह एक परीक्षण है।");
  add("thai", "สวัสดีชาวโลก นี่คือการทดสอบ");
  add("greek_cyrillic", "Καλημέρα κόσμε ΑΒΓ Привет, мир! ПРИВЕТ мИР");
  add("mixed_scripts_no_spaces", "abc你好def안녕ghiこんにちはjklмирmno");
  add("special_chat_turn", "<|im_user|>user<|im_middle|>hi<|im_end|>");
  add("special_bos_in_text", "[BOS]Hello[EOS] and [EOT]");
  add(
    "special_full_chat",
    "<|im_system|>system<|im_middle|>You are a helpful assistant<|im_end|>" +
      "<|im_user|>user<|im_middle|>What is 2+2?<|im_end|>" +
      "<|im_assistant|>assistant<|im_middle|>",
  );
  add("special_header_ids", "<|start_header_id|>user<|end_header_id|>\n\nhello");
  add("special_reserved_implicit", `x<|reserved_token_${BASE_COUNT + 5}|>y<|reserved_token_${BASE_COUNT + 255}|>`);
  add("special_lookalikes", "<|im_end|  <|im_end| > <|IM_END|> [bos] [BOS [ BOS]<|reserved_token_1|>");
  add("special_adjacent", "<|im_end|><|im_end|>[BOS][BOS]");
  add(
    "code_python",
    "def fib(n: int) -> int:\n" +
      "    \"\"\"Return the n-th Fibonacci number.\"\"\"\n" +
      "    a, b = 0, 1\n" +
      "    for _ in range(n):\n" +
      "        a, b = b, a + b\n" +
      "    return a\n\n\n" +
      "if __name__ == '__main__':\n" +
      "    print(f\"{fib(10)=}\")\n",
  );
  add(
    "code_cpp",
    "#include <vector>\n\n" +
      "template <typename T>\n" +
      "static T sum(const std::vector<T> &xs) {\n" +
      "\tT acc{};\n" +
      "\tfor (auto it = xs.begin(); it != xs.end(); ++it) acc += *it;  // sum\n" +
      "\treturn acc;\n" +
      "}\r\n",
  );
  add("json_snippet", "{\"key\": [1, 2.5, -3e4, true, null], \"nested\": {\"a\": \"b\\n\"}}");
  add("url_and_email", "https://example.com/path?q=1&r=two#frag user.name+tag@example.co.uk");
  add("replacement_char", "bad \uFFFD byte \uFFFD\uFFFD end");
  add("nul_and_controls", "a\u0000b\u0001c\u001bd\u007fe");
  add("py_space_separators", "x\u001cy\u001dz\u001e\u001fw");
  add("bom_and_zero_width", "\uFEFFstart zero\u200bwidth\u200cjoin\u200dx");
  add("math_symbols", "∀x∈ℝ: x² ≥ 0 ⇒ √x ∈ ℝ∪{∞} ∑ᵢ aᵢ");
  add("supplementary_letters", "𝐀𝐁𝐂 𝒜𝒷𝒸 𐌰𐌱𐌲 𠀀𠀁 text");
  add("apostrophe_edges", "'s 's' ''s x'S's 'LL'll");

  // Long runs: Kimi cuts a run of one class (Python isspace) longer than
  // 25,000 code points into slices of 25,000 before tiktoken sees them.
  add("whitespace_run_25000_uncut", "a" + " ".repeat(25000) + "b");
  add("whitespace_run_30000", "start" + " ".repeat(30000) + "end");
  add(
    "whitespace_run_mixed_26000",
    "x" + " ".repeat(12000) + "\n\t\u3000\u00a0\u2003\r\n" + "\t".repeat(2000) + " ".repeat(12000) + "y",
  );
  // \x1f is whitespace to Python's isspace (so the run is 26,001 long and is
  // cut) but not to the pattern's \s.
  add("whitespace_run_pyspace_26001", "x" + " ".repeat(13000) + "\u001f" + " ".repeat(13000) + "y");
  // Runs that start one letter early, so that the cut at 25,000 code points
  // falls out of step with the BPE merges and shows in the ids.
  add("nonwhitespace_run_c_a_30000", "c" + "a".repeat(29999));
  add("nonwhitespace_run_x_25000_uncut", "x".repeat(25000) + " y");
  add("nonwhitespace_run_y_x_25001", "y" + "x".repeat(25000));
  add(
    "nonwhitespace_run_mixed_26000",
    "zz" + "parseHTTPResponse(x[0]);\u4f60\u597d\u3001getURL.value=42;".repeat(700).slice(0, 25998) + " end",
  );
  add("nonwhitespace_run_astral_before_cut", "\u{1F600}" + "x".repeat(25000) + "b");
  add("nonwhitespace_run_astral_at_cut", "x".repeat(24999) + "\u{1F600}\u{1F600}" + "c".repeat(10));
  // The cut falls inside the special token: Kimi encodes "<|im_" and "end|>"
  // as ordinary text.
  add("nonwhitespace_run_special_token_across_cut", "x".repeat(24995) + "<|im_end|>" + "z");
  add("nonwhitespace_run_special_token_before_cut", "x".repeat(24990) + "<|im_end|>" + "z");
  return c;
}

// ---------------------------------------------------------------------------

function main() {
  const rankText = writeRankFile();
  writeTokenizerConfig();

  const enc = new Tiktoken(
    readFileSync(join(tokDir, "tiktoken.model"), "utf8"),
    specialTokens(),
    PAT_STR,
  );
  if (readFileSync(join(tokDir, "tiktoken.model"), "utf8") !== rankText) throw new Error("rank file");

  const names = new Set();
  const lines = [];
  const utf8 = new TextEncoder();
  for (const { name, text } of corpus()) {
    if (names.has(name)) throw new Error(`duplicate case ${name}`);
    names.add(name);
    if (!text.isWellFormed()) throw new Error(`${name}: lone surrogate`);
    const ids = kimiEncode(enc, text);
    // Round trip: the ids decode to the text's UTF-8.
    const back = Buffer.from(enc.decode(Uint32Array.from(ids)));
    if (!back.equals(Buffer.from(utf8.encode(text)))) throw new Error(`${name}: decode mismatch`);
    lines.push(JSON.stringify({ name, text, ids }));
  }
  enc.free();
  writeFileSync(join(inputs, "goldens.jsonl"), lines.join("\n") + "\n");
  console.log(`wrote ${lines.length} cases`);
}

main();
