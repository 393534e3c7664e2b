// k3-serve through the official openai client: routes, completions and chat
// (streaming or not), sampling, stop strings, usage, metrics and errors.
// One server (max batch 8) over the tiny synthetic model; random weights, so
// the text is garbage: these tests check mechanics, not quality.

import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';

import OpenAI from 'openai';

import {
  IM_END,
  MODEL,
  VOCAB,
  buildModel,
  collect,
  http,
  metrics,
  rejection,
  startServer,
  tokenize,
} from './helpers.mjs';

const PROMPTS = ['Hello world', 'The quick brown fox', 'Once upon a time', 'k3 serves tiny models'];
const MESSAGES = [
  { role: 'system', content: 'You are a test.' },
  { role: 'user', content: 'Say something, anything.' },
];

let model;
let server;
let client;

before(async () => {
  model = await buildModel();
  server = await startServer(model.k3b, ['--max-batch=8']);
  client = server.client;
});

after(async () => {
  await server?.stop();
  await model?.cleanup();
});

/// Greedy completion, non-streaming.
const greedy = (prompt, max_tokens, extra = {}) =>
  client.completions.create({ model: MODEL, prompt, max_tokens, temperature: 0, ...extra });

function checkUsage(usage, { maxTokens, promptTokens }) {
  assert.equal(typeof usage.prompt_tokens, 'number');
  assert.equal(typeof usage.completion_tokens, 'number');
  if (promptTokens !== undefined) assert.equal(usage.prompt_tokens, promptTokens);
  assert.ok(usage.completion_tokens >= 1, `completion_tokens ${usage.completion_tokens}`);
  if (maxTokens !== undefined) assert.ok(usage.completion_tokens <= maxTokens);
  assert.equal(usage.total_tokens, usage.prompt_tokens + usage.completion_tokens);
}

/// Checks the shape of a completion stream: one id, the object name, one
/// finish_reason on the last chunk with choices, a final usage chunk when
/// asked for. Returns the finish_reason and the usage.
function checkStream(chunks, { chat, includeUsage }) {
  assert.ok(chunks.length >= 2, `only ${chunks.length} chunks`);
  const id = chunks[0].id;
  const withChoices = chunks.filter((c) => c.choices.length > 0);
  for (const c of chunks) {
    assert.equal(c.id, id);
    assert.equal(c.model, MODEL);
    assert.equal(c.object, chat ? 'chat.completion.chunk' : 'text_completion');
  }
  for (const [i, c] of withChoices.entries()) {
    assert.equal(c.choices.length, 1);
    assert.equal(c.choices[0].index, 0);
    const last = i === withChoices.length - 1;
    if (last) assert.ok(c.choices[0].finish_reason, 'the last chunk has a finish_reason');
    else assert.equal(c.choices[0].finish_reason, null, `chunk ${i} has a finish_reason`);
    if (includeUsage) assert.equal(c.usage, null, 'usage is null on the chunks with choices');
  }
  if (chat) assert.equal(withChoices[0].choices[0].delta.role, 'assistant');
  let usage;
  if (includeUsage) {
    const last = chunks.at(-1);
    assert.equal(last.choices.length, 0, 'the usage chunk has no choices');
    assert.ok(last.usage, 'the last chunk has the usage');
    usage = last.usage;
    assert.equal(withChoices.length, chunks.length - 1);
  } else {
    assert.equal(withChoices.length, chunks.length);
    for (const c of chunks) assert.ok(!c.usage, 'no usage without include_usage');
  }
  return { finish: withChoices.at(-1).choices[0].finish_reason, usage };
}

const sameUsage = (a, b) => {
  assert.equal(a.prompt_tokens, b.prompt_tokens);
  assert.equal(a.completion_tokens, b.completion_tokens);
  assert.equal(a.total_tokens, b.total_tokens);
};

describe('routes', () => {
  test('GET /health is 200 once ready', async () => {
    const r = await http(`${server.url}/health`);
    assert.equal(r.status, 200);
    assert.deepEqual(r.json, { status: 'ok' });
    // Whatever was seen while loading: 503 with an OpenAI-shaped error.
    for (const h of server.healthStatuses.slice(0, -1)) {
      assert.equal(h.status, 503);
      assert.equal(typeof JSON.parse(h.body).error.message, 'string');
    }
  });

  test('models.list() has one model, tiny', async () => {
    const ids = [];
    for await (const m of client.models.list()) {
      ids.push(m.id);
      assert.equal(m.object, 'model');
    }
    assert.deepEqual(ids, [MODEL]);
  });

  test('unknown route: 404 with an OpenAI-shaped JSON error', async () => {
    for (const [method, route] of [
      ['GET', '/nope'],
      ['POST', '/v1/nope'],
      ['GET', '/v1/completions/x'],
    ]) {
      const r = await http(`${server.url}${route}`, { method, body: method === 'POST' ? {} : undefined });
      assert.equal(r.status, 404, `${method} ${route}`);
      assert.match(r.headers.get('content-type'), /application\/json/);
      assert.equal(typeof r.json?.error?.message, 'string', r.text);
      assert.equal(typeof r.json.error.type, 'string');
    }
  });

  test('/tokenize and /detokenize round-trip', async () => {
    for (const text of [
      'Hello world',
      'héllo wörld — ünïcode 你好 🙂',
      'tabs\tand\nnewlines  and   spaces',
      'x',
    ]) {
      const t = await tokenize(server, { prompt: text });
      assert.ok(Array.isArray(t.tokens) && t.tokens.length > 0);
      assert.equal(t.count, t.tokens.length);
      for (const id of t.tokens) assert.ok(Number.isInteger(id) && id >= 0 && id < VOCAB, `id ${id}`);
      const d = await http(`${server.url}/detokenize`, { method: 'POST', body: { tokens: t.tokens } });
      assert.equal(d.status, 200, d.text);
      assert.equal(d.json.prompt, text);
    }
    // Special tokens are parsed in prompts.
    const s = await tokenize(server, { prompt: '<|im_end|>' });
    assert.deepEqual(s.tokens, [IM_END]);
  });

  /// /tokenize's count of `messages` equals chat's prompt_tokens.
  async function sameCountAsChat(messages) {
    const chat = await client.chat.completions.create({ model: MODEL, messages, max_tokens: 1 });
    const r = await http(`${server.url}/tokenize`, { method: 'POST', body: { messages } });
    assert.equal(r.status, 200, r.text);
    assert.equal(r.json.count, chat.usage.prompt_tokens);
  }

  test('/tokenize counts chat messages as chat does', async () => {
    await sameCountAsChat(MESSAGES);
    await sameCountAsChat([{ role: 'user', content: 'hi' }, { role: 'assistant', content: 'yo' }, { role: 'user', content: 'ok' }]);
  });

  test("/tokenize takes the 'developer' role as chat does", async () => {
    await sameCountAsChat([{ role: 'developer', content: 'You are a test.' }, MESSAGES[1]]);
  });

  test('/tokenize takes text content parts as chat does', async () => {
    await sameCountAsChat([
      MESSAGES[0],
      { role: 'user', content: [{ type: 'text', text: 'Say something, ' }, { type: 'text', text: 'anything.' }] },
    ]);
  });

  test('/tokenize: a malformed add_generation_prompt is a 400, not a 500', async () => {
    const r = await http(`${server.url}/tokenize`, {
      method: 'POST',
      body: { messages: [{ role: 'user', content: 'hi' }], add_generation_prompt: 'yes' },
    });
    assert.equal(r.status, 400, r.text);
    assert.equal(typeof r.json?.error?.message, 'string');
  });

  test('/detokenize: an id outside the vocabulary is a 400', async () => {
    for (const tokens of [[VOCAB], [1, 2, -1], [1e9], ['a'], [1.5]]) {
      const r = await http(`${server.url}/detokenize`, { method: 'POST', body: { tokens } });
      assert.equal(r.status, 400, JSON.stringify(tokens));
      assert.equal(typeof r.json?.error?.message, 'string');
    }
    const r = await http(`${server.url}/detokenize`, { method: 'POST', body: '{"tokens": [1,' });
    assert.equal(r.status, 400);
  });
});

describe('completions', () => {
  test('non-streaming: shape and usage (prompt_tokens = /tokenize count)', async () => {
    for (const prompt of PROMPTS) {
      const max = 12;
      const r = await greedy(prompt, max);
      assert.equal(r.object, 'text_completion');
      assert.equal(r.model, MODEL);
      assert.match(r.id, /\S/);
      assert.equal(typeof r.created, 'number');
      assert.equal(r.choices.length, 1);
      assert.equal(r.choices[0].index, 0);
      assert.equal(typeof r.choices[0].text, 'string');
      assert.ok(['length', 'stop'].includes(r.choices[0].finish_reason));
      const { count } = await tokenize(server, { prompt });
      checkUsage(r.usage, { maxTokens: max, promptTokens: count });
      if (r.choices[0].finish_reason === 'length') assert.equal(r.usage.completion_tokens, max);
    }
  });

  test('prompt as token ids', async () => {
    const { tokens } = await tokenize(server, { prompt: PROMPTS[0] });
    const a = await greedy(PROMPTS[0], 10);
    const b = await greedy(tokens, 10);
    assert.equal(b.choices[0].text, a.choices[0].text);
    sameUsage(b.usage, a.usage);
  });

  test("finish_reason 'length' when max_tokens is reached", async () => {
    // A prompt whose greedy continuation runs past 8 tokens.
    let found = false;
    for (const prompt of PROMPTS) {
      const long = await greedy(prompt, 32);
      if (long.choices[0].finish_reason !== 'length') continue;
      found = true;
      for (const max of [1, 2, 8]) {
        const r = await greedy(prompt, max);
        assert.equal(r.choices[0].finish_reason, 'length');
        assert.equal(r.usage.completion_tokens, max);
        // Greedy: a shorter run is a prefix of the longer one (up to a
        // cut UTF-8 sequence, shown as U+FFFD at the end).
        const text = r.choices[0].text.replace(/\uFFFD+$/, '');
        assert.ok(long.choices[0].text.startsWith(text), `${JSON.stringify(text)} vs ${JSON.stringify(long.choices[0].text)}`);
      }
    }
    assert.ok(found, 'no prompt ran to 32 tokens');
  });

  test("finish_reason 'stop' at the end-of-sequence token", async () => {
    // Random weights emit <|im_end|> now and then: some prompt stops early.
    let stopped = 0;
    for (const prompt of PROMPTS) {
      const r = await greedy(prompt, 2000);
      checkUsage(r.usage, { maxTokens: 2000 });
      assert.ok(!r.choices[0].text.includes('<|im_end|>'), 'the eos token adds no text');
      if (r.choices[0].finish_reason === 'stop') {
        stopped++;
        assert.ok(r.usage.completion_tokens < 2000);
      } else {
        assert.equal(r.usage.completion_tokens, 2000);
      }
    }
    assert.ok(stopped > 0, 'no prompt met the end-of-sequence token in 2000 tokens');
  });

  test('streaming equals non-streaming at temperature 0 (text, finish_reason, usage)', async () => {
    for (const prompt of PROMPTS) {
      for (const max of [1, 24]) {
        const plain = await greedy(prompt, max);
        const stream = await client.completions.create({
          model: MODEL,
          prompt,
          max_tokens: max,
          temperature: 0,
          stream: true,
          stream_options: { include_usage: true },
        });
        const { chunks, text } = await collect(stream);
        const { finish, usage } = checkStream(chunks, { chat: false, includeUsage: true });
        assert.equal(text, plain.choices[0].text, `prompt ${JSON.stringify(prompt)} max ${max}`);
        assert.equal(finish, plain.choices[0].finish_reason);
        sameUsage(usage, plain.usage);
      }
    }
    // Without include_usage: no usage anywhere.
    const { chunks, text } = await collect(
      await client.completions.create({ model: MODEL, prompt: PROMPTS[1], max_tokens: 8, temperature: 0, stream: true }),
    );
    checkStream(chunks, { chat: false, includeUsage: false });
    assert.equal(text, (await greedy(PROMPTS[1], 8)).choices[0].text);
  });

  test('raw SSE framing: text/event-stream, data: lines, [DONE] last', async () => {
    const r = await fetch(`${server.url}/v1/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: MODEL, prompt: PROMPTS[0], max_tokens: 6, temperature: 0, stream: true }),
    });
    assert.equal(r.status, 200);
    assert.match(r.headers.get('content-type'), /^text\/event-stream/);
    const body = await r.text();
    assert.ok(body.endsWith('data: [DONE]\n\n'), JSON.stringify(body.slice(-40)));
    const events = body.split('\n\n').filter((e) => e);
    assert.equal(events.at(-1), 'data: [DONE]');
    let text = '';
    for (const e of events.slice(0, -1)) {
      assert.match(e, /^data: \{/);
      text += JSON.parse(e.slice(6)).choices[0].text;
    }
    assert.equal(text, (await greedy(PROMPTS[0], 6)).choices[0].text);
  });

  test('the same seed gives the same sample; different seeds differ', async () => {
    const sample = async (seed, extra = {}) =>
      (
        await client.completions.create({
          model: MODEL,
          prompt: PROMPTS[2],
          max_tokens: 24,
          temperature: 0.9,
          top_p: 0.95,
          seed,
          ...extra,
        })
      ).choices[0].text;
    const a = await sample(1234);
    assert.equal(await sample(1234), a);
    const k = await sample(99, { top_k: 40 }); // top_k: an extra body field
    assert.equal(await sample(99, { top_k: 40 }), k);
    // Streaming samples the same as non-streaming.
    const s = await collect(
      await client.completions.create({
        model: MODEL, prompt: PROMPTS[2], max_tokens: 24, temperature: 0.9, top_p: 0.95, seed: 1234, stream: true,
      }),
    );
    assert.equal(s.text, a);
    const others = [];
    for (const seed of [1, 2, 3, 4, 5, 6]) others.push(await sample(seed));
    assert.ok(others.some((t) => t !== a), 'six other seeds all gave the same text');
    // top_k 1 is greedy, whatever the temperature.
    const g = (await greedy(PROMPTS[2], 24)).choices[0].text;
    assert.equal(await sample(7, { top_k: 1 }), g);
  });
});

/// A stop string from a greedy stream: a 2-3 character printable-ASCII
/// substring that straddles a chunk (token) boundary near the middle and
/// does not occur at the very start. Returns { stop, expected }.
function pickStop(pieces) {
  const full = pieces.join('');
  const bounds = [];
  let pos = 0;
  for (const p of pieces.slice(0, -1)) {
    pos += p.length;
    bounds.push(pos);
  }
  bounds.sort((x, y) => Math.abs(x - full.length / 2) - Math.abs(y - full.length / 2));
  for (const b of bounds)
    for (const [before, after] of [[2, 1], [1, 1], [1, 2]]) {
      const stop = full.slice(b - before, b + after);
      if (stop.length !== before + after || !/^[\x21-\x7e]+$/.test(stop)) continue;
      const first = full.indexOf(stop);
      if (first < 2) continue;
      return { stop, expected: full.slice(0, first) };
    }
  return null;
}

describe('stop strings', () => {
  for (const chat of [false, true]) {
    test(`${chat ? 'chat' : 'completions'}: text ends before the first stop string, finish_reason 'stop'`, async () => {
      const picked = [];
      for (const prompt of PROMPTS) {
        const base = chat
          ? { model: MODEL, messages: [{ role: 'user', content: prompt }], max_tokens: 48, temperature: 0 }
          : { model: MODEL, prompt, max_tokens: 48, temperature: 0 };
        const create = (extra) =>
          chat ? client.chat.completions.create({ ...base, ...extra }) : client.completions.create({ ...base, ...extra });
        const first = await collect(await create({ stream: true }));
        const pieces = first.chunks
          .flatMap((c) => c.choices)
          .map((c) => (chat ? c.delta?.content : c.text) ?? '')
          .filter((t) => t.length > 0);
        const p = pickStop(pieces);
        if (!p) continue;
        picked.push(p);
        // Non-streaming.
        const r = await create({ stop: p.stop });
        const text = chat ? r.choices[0].message.content : r.choices[0].text;
        assert.equal(text, p.expected, `stop ${JSON.stringify(p.stop)}`);
        assert.equal(r.choices[0].finish_reason, 'stop');
        checkUsage(r.usage, { maxTokens: 48 });
        // A list, with a stop string that never occurs.
        const l = await create({ stop: ['\u0001never\u0001', p.stop] });
        assert.equal(chat ? l.choices[0].message.content : l.choices[0].text, p.expected);
        // Streaming: the same text, and no chunk ever held any of the stop
        // string (the concatenation is exactly the text before it).
        const s = await collect(await create({ stop: p.stop, stream: true, stream_options: { include_usage: true } }));
        const { finish, usage } = checkStream(s.chunks, { chat, includeUsage: true });
        assert.equal(s.text, p.expected);
        assert.equal(finish, 'stop');
        sameUsage(usage, r.usage);
        let sofar = '';
        for (const c of s.chunks.flatMap((c) => c.choices)) {
          sofar += (chat ? c.delta?.content : c.text) ?? '';
          assert.ok(p.expected.startsWith(sofar), `a chunk went past the stop string: ${JSON.stringify(sofar)}`);
        }
      }
      assert.ok(picked.length >= 2, `only ${picked.length} prompts gave a usable stop string`);
    });
  }

  test('a stop string that never completes changes nothing, up to the end-of-sequence token', async () => {
    // The text held back as a possible stop string's start is released when
    // generation ends, by max_tokens or by the end-of-sequence token.
    for (const p of PROMPTS.slice(0, 6)) {
      for (const chat of [false, true]) {
        const base = chat
          ? { model: MODEL, messages: [{ role: 'user', content: p }], max_tokens: 48, temperature: 0 }
          : { model: MODEL, prompt: p, max_tokens: 48, temperature: 0 };
        const create = (extra) =>
          chat ? client.chat.completions.create({ ...base, ...extra }) : client.completions.create({ ...base, ...extra });
        const plain = await create({});
        const text = chat ? plain.choices[0].message.content : plain.choices[0].text;
        if (text.length === 0) continue;
        // A stop string that starts with the text's last character but
        // never occurs in it.
        const stop = text.slice(-1) + '\u0001';
        const r = await create({ stop });
        assert.equal(chat ? r.choices[0].message.content : r.choices[0].text, text, JSON.stringify(stop));
        assert.equal(r.choices[0].finish_reason, plain.choices[0].finish_reason);
        const s = await collect(await create({ stop, stream: true }));
        assert.equal(s.text, text);
      }
    }
  });

  test('a stop string begun at the very end is released when max_tokens is reached', async () => {
    // The last characters of a length-limited answer start a stop string
    // that never completes: they are held back while streaming, then sent.
    let checked = 0;
    for (const prompt of PROMPTS) {
      const plain = await greedy(prompt, 12);
      const text = plain.choices[0].text;
      if (plain.choices[0].finish_reason !== 'length' || !/[\x21-\x7e]$/.test(text)) continue;
      const stop = `${text.at(-1)}\u0001\u0002`;
      if (text.slice(0, -1).includes(stop)) continue;
      const r = await greedy(prompt, 12, { stop });
      assert.equal(r.choices[0].text, text);
      assert.equal(r.choices[0].finish_reason, 'length');
      const s = await collect(await client.completions.create({ model: MODEL, prompt, max_tokens: 12, temperature: 0, stop, stream: true }));
      assert.equal(s.text, text);
      assert.equal(s.chunks.at(-1).choices[0].finish_reason, 'length');
      checked++;
    }
    assert.ok(checked > 0, 'no prompt ended its 12 tokens on a printable ASCII character');
  });
});

describe('chat', () => {
  test('non-streaming: shape, usage (prompt_tokens = /tokenize messages count)', async () => {
    const r = await client.chat.completions.create({ model: MODEL, messages: MESSAGES, max_tokens: 16, temperature: 0 });
    assert.equal(r.object, 'chat.completion');
    assert.equal(r.model, MODEL);
    assert.equal(r.choices.length, 1);
    assert.equal(r.choices[0].message.role, 'assistant');
    assert.equal(typeof r.choices[0].message.content, 'string');
    assert.ok(['length', 'stop'].includes(r.choices[0].finish_reason));
    const { count } = await tokenize(server, { messages: MESSAGES });
    checkUsage(r.usage, { maxTokens: 16, promptTokens: count });
    assert.ok(!r.choices[0].message.content.includes('<|im_end|>'));
    // max_completion_tokens is max_tokens' newer name.
    const m = await client.chat.completions.create({ model: MODEL, messages: MESSAGES, max_completion_tokens: 3, temperature: 0 });
    assert.ok(m.usage.completion_tokens <= 3);
    // developer is the system role's newer name; content parts are text.
    const d = await client.chat.completions.create({
      model: MODEL,
      messages: [
        { role: 'developer', content: 'You are a test.' },
        { role: 'user', content: [{ type: 'text', text: 'Say something, ' }, { type: 'text', text: 'anything.' }] },
      ],
      max_tokens: 16,
      temperature: 0,
    });
    assert.equal(d.choices[0].message.content, r.choices[0].message.content);
    sameUsage(d.usage, r.usage);
  });

  test('streaming equals non-streaming at temperature 0', async () => {
    for (const messages of [MESSAGES, [{ role: 'user', content: PROMPTS[0] }], [{ role: 'user', content: PROMPTS[3] }]]) {
      for (const max of [1, 24, 400]) {
        const plain = await client.chat.completions.create({ model: MODEL, messages, max_tokens: max, temperature: 0 });
        const s = await collect(
          await client.chat.completions.create({
            model: MODEL, messages, max_tokens: max, temperature: 0, stream: true, stream_options: { include_usage: true },
          }),
        );
        const { finish, usage } = checkStream(s.chunks, { chat: true, includeUsage: true });
        assert.equal(s.text, plain.choices[0].message.content);
        assert.equal(finish, plain.choices[0].finish_reason);
        sameUsage(usage, plain.usage);
      }
    }
  });

  test('the same seed gives the same sample', async () => {
    const sample = async (seed) =>
      (await client.chat.completions.create({
        model: MODEL, messages: MESSAGES, max_tokens: 24, temperature: 0.9, top_p: 0.95, seed,
      })).choices[0].message.content;
    const a = await sample(42);
    assert.equal(await sample(42), a);
    const others = [];
    for (const seed of [1, 2, 3, 4, 5, 6]) others.push(await sample(seed));
    assert.ok(others.some((t) => t !== a), 'six other seeds all gave the same text');
  });
});

describe('errors', () => {
  /// Calls `fn`, expects an APIError of `status`; returns it.
  async function apiError(fn, status, pattern) {
    const e = await rejection(fn);
    assert.ok(e instanceof OpenAI.APIError, `not an APIError: ${e}`);
    assert.equal(e.status, status, e.message);
    assert.equal(typeof e.error?.message, 'string', 'the body has error.message');
    if (pattern) assert.match(e.error.message, pattern);
    return e;
  }
  const prompt = PROMPTS[0];

  test('n = 2 is a 400 (streaming or not)', async () => {
    const e = await apiError(() => client.completions.create({ model: MODEL, prompt, n: 2 }), 400, /\bn\b/);
    assert.ok(e instanceof OpenAI.BadRequestError);
    assert.equal(e.param, 'n');
    await apiError(() => client.completions.create({ model: MODEL, prompt, n: 2, stream: true }), 400);
    await apiError(() => client.chat.completions.create({ model: MODEL, messages: MESSAGES, n: 2 }), 400);
  });

  test('an unknown model is a 404', async () => {
    const e = await apiError(() => client.completions.create({ model: 'no-such-model', prompt }), 404, /no-such-model/);
    assert.ok(e instanceof OpenAI.NotFoundError);
    await apiError(() => client.chat.completions.create({ model: 'no-such-model', messages: MESSAGES }), 404);
    await apiError(() => client.chat.completions.create({ model: 'no-such-model', messages: MESSAGES, stream: true }), 404);
  });

  test('logprobs is a 400', async () => {
    await apiError(() => client.completions.create({ model: MODEL, prompt, logprobs: 1 }), 400, /logprobs/);
    await apiError(() => client.chat.completions.create({ model: MODEL, messages: MESSAGES, logprobs: true }), 400, /logprobs/);
  });

  test('an empty prompt, max_tokens 0 and out-of-range sampling are 400s', async () => {
    await apiError(() => client.completions.create({ model: MODEL, prompt: '' }), 400, /empty/);
    await apiError(() => client.completions.create({ model: MODEL, prompt: [] }), 400);
    await apiError(() => client.completions.create({ model: MODEL, prompt, max_tokens: 0 }), 400, /max_tokens/);
    await apiError(() => client.completions.create({ model: MODEL, prompt, max_tokens: -1 }), 400);
    await apiError(() => client.chat.completions.create({ model: MODEL, messages: MESSAGES, max_tokens: 0 }), 400);
    await apiError(() => client.chat.completions.create({ model: MODEL, messages: [] }), 400);
    await apiError(() => client.completions.create({ model: MODEL, prompt, temperature: 3 }), 400, /temperature/);
    await apiError(() => client.completions.create({ model: MODEL, prompt, top_p: 0 }), 400, /top_p/);
    await apiError(() => client.completions.create({ model: MODEL, prompt, top_k: -2 }), 400, /top_k/);
    await apiError(() => client.completions.create({ model: MODEL, prompt, stop: '' }), 400, /stop/);
    await apiError(() => client.completions.create({ model: MODEL, prompt: [VOCAB] }), 400, /vocabulary/);
  });

  test('raw bodies: bad JSON, unknown fields, a non-object (400, OpenAI-shaped)', async () => {
    const cases = [
      ['/v1/completions', '{"model": "tiny", "prompt": "x",', /JSON/],
      ['/v1/completions', '', null],
      ['/v1/completions', '[1, 2]', null],
      ['/v1/completions', JSON.stringify({ model: MODEL, prompt: 'x', foo: 1 }), /foo/],
      ['/v1/chat/completions', JSON.stringify({ model: MODEL, messages: MESSAGES, foo: 1 }), /foo/],
      ['/v1/chat/completions', JSON.stringify({ model: MODEL, messages: MESSAGES, prompt: 'x' }), /prompt/],
      ['/v1/chat/completions', '{not json', /JSON/],
      // Nesting that would exhaust a stack if anything recursed over it.
      ['/v1/completions', `{"prompt": "x", "stop": ${'['.repeat(100000)}${']'.repeat(100000)}}`, /nests deeper/],
      ['/tokenize', `{"prompt": ${'['.repeat(100000)}${']'.repeat(100000)}}`, /nests deeper/],
      ['/detokenize', `{"tokens": [${'['.repeat(100000)}${']'.repeat(100000)}]}`, /nests deeper/],
      // Wrong types where a string is expected: 400s, not 500s.
      ['/v1/chat/completions', JSON.stringify({ model: MODEL, messages: [{ role: 'user', content: [{ type: 5, text: 'x' }] }] }), /text content/],
      ['/v1/chat/completions', JSON.stringify({ model: MODEL, messages: MESSAGES, response_format: { type: 3 } }), /response_format/],
      ['/tokenize', JSON.stringify({ messages: MESSAGES, add_generation_prompt: 'yes' }), /add_generation_prompt/],
    ];
    for (const [route, body, pattern] of cases) {
      const r = await http(`${server.url}${route}`, { method: 'POST', body });
      assert.equal(r.status, 400, `${route} ${body}: ${r.text}`);
      assert.match(r.headers.get('content-type'), /application\/json/);
      assert.equal(typeof r.json?.error?.message, 'string', r.text);
      assert.equal(r.json.error.type, 'invalid_request_error');
      if (pattern) assert.match(r.json.error.message, pattern);
    }
    // The client sends unknown fields through too.
    await apiError(() => client.completions.create({ model: MODEL, prompt: 'x', foo: 1 }), 400, /foo/);
  });

  test('the server still answers after errors', async () => {
    const r = await greedy(prompt, 4);
    assert.equal(r.choices.length, 1);
  });
});

describe('metrics', () => {
  const NAMES = [
    'k3_prompt_tokens_total',
    'k3_generation_tokens_total',
    'k3_prefix_cache_hit_tokens_total',
    'k3_requests_cancelled_total',
    'k3_requests_running',
    'k3_requests_waiting',
    'k3_pool_pages_used',
    'k3_pool_pages_free',
  ];
  const HISTOGRAMS = ['k3_time_to_first_token_seconds', 'k3_time_per_output_token_seconds'];

  test('Prometheus text with every metric; well-formed histograms', async () => {
    const r = await http(`${server.url}/metrics`);
    assert.equal(r.status, 200);
    assert.match(r.headers.get('content-type'), /^text\/plain/);
    const m = await metrics(server);
    for (const name of NAMES) {
      assert.ok(m.has(name), `no ${name}`);
      assert.match(r.text, new RegExp(`^# TYPE ${name} (counter|gauge)$`, 'm'));
    }
    assert.ok(m.get('k3_requests_total{status="200"}') > 0);
    for (const h of HISTOGRAMS) {
      assert.match(r.text, new RegExp(`^# TYPE ${h} histogram$`, 'm'));
      const buckets = [...m].filter(([k]) => k.startsWith(`${h}_bucket{`));
      assert.ok(buckets.length >= 2);
      assert.equal(buckets.at(-1)[0], `${h}_bucket{le="+Inf"}`);
      for (let i = 1; i < buckets.length; i++) assert.ok(buckets[i][1] >= buckets[i - 1][1], 'buckets are cumulative');
      assert.equal(m.get(`${h}_count`), buckets.at(-1)[1]);
      assert.ok(m.get(`${h}_sum`) >= 0);
      assert.ok(m.get(`${h}_count`) > 0, `${h}: nothing observed yet`);
    }
    // Idle: nothing runs or waits.
    assert.equal(m.get('k3_requests_running'), 0);
    assert.equal(m.get('k3_requests_waiting'), 0);
    assert.ok(m.get('k3_pool_pages_free') > 0);
  });

  test('counters follow a request', async () => {
    const before = await metrics(server);
    const prompt = 'metrics follow this request';
    const r = await greedy(prompt, 6);
    const after = await metrics(server);
    const d = (k) => (after.get(k) ?? 0) - (before.get(k) ?? 0);
    assert.equal(d('k3_prompt_tokens_total'), r.usage.prompt_tokens);
    assert.equal(d('k3_generation_tokens_total'), r.usage.completion_tokens);
    assert.ok(d('k3_requests_total{status="200"}') >= 1);
    assert.equal(d('k3_time_to_first_token_seconds_count'), 1);
    assert.equal(d('k3_time_per_output_token_seconds_count'), r.usage.completion_tokens - 1);
    assert.equal(d('k3_requests_cancelled_total'), 0);
    // Pages: the total is constant.
    assert.equal(
      after.get('k3_pool_pages_used') + after.get('k3_pool_pages_free'),
      before.get('k3_pool_pages_used') + before.get('k3_pool_pages_free'),
    );
    // A 400 and a 404 are counted by status.
    await http(`${server.url}/v1/completions`, { method: 'POST', body: '{bad' });
    await http(`${server.url}/nope`);
    const errs = await metrics(server);
    assert.equal((errs.get('k3_requests_total{status="400"}') ?? 0) - (after.get('k3_requests_total{status="400"}') ?? 0), 1);
    assert.equal((errs.get('k3_requests_total{status="404"}') ?? 0) - (after.get('k3_requests_total{status="404"}') ?? 0), 1);
  });
});

describe('shutdown', () => {
  test('SIGTERM stops the server cleanly (exit 0)', async () => {
    const e = await server.stop();
    assert.equal(e.killed, false, 'needed SIGKILL');
    assert.equal(e.signal, null);
    assert.equal(e.code, 0, server.stderr());
  });
});
