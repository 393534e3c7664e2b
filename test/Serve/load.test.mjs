// k3-serve under load and at its limits: 32 concurrent streams against
// isolated requests, the prefix cache, cancellation (pages go back), the
// pool and context limits. Four servers over one tiny synthetic model:
//   plain: --no-prefix-cache (isolated references, cancellation)
//   batch: --max-batch=8 --block-tokens=16 (concurrency, prefix hits)
//   pool:  --pool-kib=160 (4 pages of 40 KiB: two short requests at once)
//   ctx:   --context=64

import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';

import OpenAI from 'openai';

import { MODEL, buildModel, collect, http, metrics, rejection, startServer, waitFor } from './helpers.mjs';

let model;
const servers = {};

before(async () => {
  model = await buildModel();
  const flags = {
    plain: ['--no-prefix-cache'],
    batch: ['--max-batch=8', '--block-tokens=16'],
    pool: ['--pool-kib=160'],
    ctx: ['--context=64'],
  };
  await Promise.all(
    Object.entries(flags).map(async ([name, f]) => {
      servers[name] = await startServer(model.k3b, f);
    }),
  );
});

after(async () => {
  // In parallel: each waits out its idle keep-alive connections.
  const stops = await Promise.all(Object.values(servers).map((s) => s.stop()));
  await model?.cleanup();
  for (const e of stops) assert.equal(e.killed, false, 'a server needed SIGKILL');
});

const SHARED = 'This shared preamble is long enough to fill a few prefix-cache blocks of sixteen tokens each; ';
const PROMPTS = Array.from({ length: 32 }, (_, i) =>
  (i % 2 ? SHARED : '') + `request ${i}: ${'the quick brown fox jumps over the lazy dog'.split(' ').slice(i % 9).join(' ')}`,
);
const words = (n) => Array.from({ length: n }, (_, i) => `w${i}`).join(' ');

const greedy = (server, prompt, max_tokens, extra = {}) =>
  server.client.completions.create({ model: MODEL, prompt, max_tokens, temperature: 0, ...extra });

/// Polls /metrics until the engine is idle (nothing running or waiting).
const idle = (server) =>
  waitFor(
    async () => {
      const m = await metrics(server);
      return m.get('k3_requests_running') === 0 && m.get('k3_requests_waiting') === 0 && m;
    },
    { what: 'an idle engine' },
  );

/// Isolated (one at a time) greedy answers of `prompts` on the plain server.
const references = new Map();
async function reference(prompt, max) {
  const key = `${max}\u0000${prompt}`;
  if (!references.has(key)) {
    const r = await greedy(servers.plain, prompt, max);
    references.set(key, { text: r.choices[0].text, finish: r.choices[0].finish_reason, usage: r.usage });
  }
  return references.get(key);
}

describe('concurrency', () => {
  test('32 concurrent streams (max batch 8) each equal an isolated request', async () => {
    const want = [];
    for (const p of PROMPTS) want.push(await reference(p, 16));
    const s = servers.batch;
    const m0 = await idle(s);
    // Watch the gauges while the burst runs.
    let burst = true;
    const seen = [];
    const watcher = (async () => {
      while (burst) {
        const m = await metrics(s);
        seen.push([m.get('k3_requests_running'), m.get('k3_requests_waiting')]);
        await new Promise((r) => setTimeout(r, 10));
      }
    })();
    let got;
    try {
      got = await Promise.all(
        PROMPTS.map(async (prompt) => {
          const stream = await s.client.completions.create({
            model: MODEL, prompt, max_tokens: 16, temperature: 0, stream: true, stream_options: { include_usage: true },
          });
          const { chunks, text } = await collect(stream);
          const finish = chunks.flatMap((c) => c.choices).at(-1).finish_reason;
          return { text, finish, usage: chunks.at(-1).usage };
        }),
      );
    } finally {
      burst = false;
      await watcher;
    }
    for (const [i, g] of got.entries()) {
      assert.equal(g.text, want[i].text, `prompt ${i}`);
      assert.equal(g.finish, want[i].finish, `prompt ${i}`);
      assert.equal(g.usage.prompt_tokens, want[i].usage.prompt_tokens);
      assert.equal(g.usage.completion_tokens, want[i].usage.completion_tokens);
    }
    for (const [running] of seen) assert.ok(running <= 8, `${running} running with --max-batch=8`);
    const m1 = await idle(s);
    const d = (k) => (m1.get(k) ?? 0) - (m0.get(k) ?? 0);
    const sum = (f) => got.reduce((a, g) => a + f(g), 0);
    assert.equal(d('k3_prompt_tokens_total'), sum((g) => g.usage.prompt_tokens));
    assert.equal(d('k3_generation_tokens_total'), sum((g) => g.usage.completion_tokens));
    assert.ok(d('k3_requests_total{status="200"}') >= 32);
    assert.equal(d('k3_requests_cancelled_total'), 0);
    assert.equal(d('k3_time_to_first_token_seconds_count'), 32);
    // The shared preamble: later requests found the earlier ones' blocks.
    const cached = sum((g) => g.usage.prompt_tokens_details?.cached_tokens ?? 0);
    assert.ok(cached > 0, 'no prefix-cache hit in the burst');
    assert.equal(d('k3_prefix_cache_hit_tokens_total'), cached);
  });

  test('the prefix cache: a repeated prompt reuses whole blocks and gives the same text', async () => {
    const s = servers.batch;
    const prompt = `${SHARED}${SHARED}and a tail that differs`;
    const want = await reference(prompt, 24);
    const first = await greedy(s, prompt, 24);
    const again = await greedy(s, prompt, 24);
    for (const r of [first, again]) {
      assert.equal(r.choices[0].text, want.text);
      assert.equal(r.usage.completion_tokens, want.usage.completion_tokens);
    }
    const hit = again.usage.prompt_tokens_details.cached_tokens;
    assert.ok(hit > 0 && hit < again.usage.prompt_tokens, `cached_tokens ${hit}`);
    assert.equal(hit % 16, 0, 'hits are whole 16-token blocks');
  });

  test('a stop string still reports the prefix-cache hit (usage and metrics)', async () => {
    const s = servers.batch;
    const prompt = `${SHARED}${SHARED}and a tail for the stop string`;
    const full = await greedy(s, prompt, 32); // warms the cache
    const warm = await greedy(s, prompt, 32);
    const hit = warm.usage.prompt_tokens_details.cached_tokens;
    assert.ok(hit > 0);
    const text = full.choices[0].text;
    const i = [...text.matchAll(/[a-z]{2}/g)].map((m) => m.index).find((k) => k >= 4 && text.indexOf(text.slice(k, k + 2)) === k);
    assert.ok(i !== undefined, `no stop string in ${JSON.stringify(text)}`);
    const stop = text.slice(i, i + 2);
    const m0 = await idle(s);
    const r = await greedy(s, prompt, 32, { stop });
    assert.equal(r.choices[0].text, text.slice(0, i));
    assert.equal(r.choices[0].finish_reason, 'stop');
    const m1 = await idle(s);
    assert.equal(r.usage.prompt_tokens_details.cached_tokens, hit, 'cached_tokens with a stop string');
    assert.equal(m1.get('k3_prefix_cache_hit_tokens_total') - m0.get('k3_prefix_cache_hit_tokens_total'), hit);
  });
});

describe('cancellation', () => {
  /// Waits until the cancellation is counted and the pages are back.
  async function settles(s, before, idlePages) {
    return waitFor(
      async () => {
        const m = await metrics(s);
        return (
          m.get('k3_requests_cancelled_total') === before.get('k3_requests_cancelled_total') + 1 &&
          m.get('k3_requests_running') === 0 &&
          m.get('k3_requests_waiting') === 0 &&
          m.get('k3_pool_pages_used') === idlePages &&
          m
        );
      },
      { what: 'the cancellation to be counted and the pages to come back' },
    );
  }
  const LONG = words(1000); // ~3900 tokens: a prefill of a few steps

  test('a chat stream aborted after its first chunk is cancelled; its pages go back', async () => {
    const s = servers.plain;
    const m0 = await idle(s);
    const idlePages = m0.get('k3_pool_pages_used');
    const stream = await s.client.chat.completions.create({
      model: MODEL, messages: [{ role: 'user', content: LONG }], max_tokens: 2000, temperature: 0, stream: true,
    });
    let chunks = 0;
    for await (const chunk of stream) {
      chunks++;
      assert.equal(chunk.choices[0].delta.role, 'assistant');
      stream.controller.abort();
      break;
    }
    assert.equal(chunks, 1);
    const m1 = await settles(s, m0, idlePages);
    assert.ok(m1.get('k3_generation_tokens_total') - m0.get('k3_generation_tokens_total') < 2000);
    assert.ok(m1.get('k3_pool_pages_free') > 0);
    // Still serving.
    const want = await reference('after a cancellation', 8);
    assert.equal((await greedy(s, 'after a cancellation', 8)).choices[0].text, want.text);
  });

  test('a completion stream aborted after its first text chunk is cancelled; its pages go back', async () => {
    const s = servers.plain;
    // Prompts whose greedy answers run longest (the tiny model meets its
    // end-of-sequence token after a few hundred tokens): the abort must
    // land before the answer ends. Tried in turn until one is cancelled.
    const candidates = [];
    for (let i = 0; i < 24; i++) {
      const prompt = `cancel me ${i}`;
      const r = await greedy(s, prompt, 3000);
      candidates.push({ prompt, n: r.usage.completion_tokens });
    }
    candidates.sort((a, b) => b.n - a.n);
    assert.ok(candidates[0].n >= 300, `the longest greedy answer has ${candidates[0].n} tokens`);
    const tries = [];
    for (const { prompt, n } of candidates.slice(0, 3)) {
      const m0 = await idle(s);
      const idlePages = m0.get('k3_pool_pages_used');
      const stream = await s.client.completions.create({ model: MODEL, prompt, max_tokens: 3000, temperature: 0, stream: true });
      for await (const chunk of stream) {
        assert.equal(chunk.choices[0].finish_reason, null);
        stream.controller.abort();
        break;
      }
      const m1 = await idle(s);
      const generated = m1.get('k3_generation_tokens_total') - m0.get('k3_generation_tokens_total');
      tries.push(`${prompt}: ${generated} of ${n} tokens`);
      if (m1.get('k3_requests_cancelled_total') === m0.get('k3_requests_cancelled_total')) {
        assert.equal(generated, n, 'not cancelled, so it ran to its end');
        continue; // it ended before the abort reached the server
      }
      assert.ok(generated < n, `cancelled after all ${n} tokens`);
      await settles(s, m0, idlePages);
      return;
    }
    assert.fail(`no abort was cancelled in time: ${tries.join('; ')}`);
  });

  test('a non-streaming request whose client goes away is cancelled', async () => {
    const s = servers.plain;
    const m0 = await idle(s);
    const idlePages = m0.get('k3_pool_pages_used');
    const controller = new AbortController();
    const pending = s.client.completions.create(
      { model: MODEL, prompt: LONG, max_tokens: 2000, temperature: 0 },
      { signal: controller.signal },
    );
    // Abort once the server has it (its prefill takes a few steps).
    await waitFor(async () => (await metrics(s)).get('k3_prompt_tokens_total') > m0.get('k3_prompt_tokens_total'), {
      every: 5,
      what: 'the request to be admitted',
    });
    controller.abort();
    const e = await rejection(pending);
    assert.ok(e instanceof OpenAI.APIUserAbortError, String(e));
    await settles(s, m0, idlePages);
  });
});

describe('limits', () => {
  async function apiError(fn, status) {
    const e = await rejection(fn);
    assert.ok(e instanceof OpenAI.APIError, String(e));
    assert.equal(e.status, status, e.message);
    assert.equal(typeof e.error?.message, 'string');
    return e;
  }

  test('a prompt longer than the pool is a 400; the server answers normally afterwards', async () => {
    const s = servers.pool;
    const want = await reference('a normal request', 8);
    assert.equal((await greedy(s, 'a normal request', 8)).choices[0].text, want.text);
    const e = await apiError(() => greedy(s, words(600), 8), 400);
    assert.match(e.error.message, /pages?|pool/);
    await apiError(() => s.client.completions.create({ model: MODEL, prompt: 'x', max_tokens: 100_000 }), 400);
    await apiError(
      () => s.client.chat.completions.create({ model: MODEL, messages: [{ role: 'user', content: words(600) }] }),
      400,
    );
    const r = await greedy(s, 'a normal request', 8);
    assert.equal(r.choices[0].text, want.text);
    const m = await idle(s);
    assert.equal(m.get('k3_pool_pages_used'), 0);
  });

  test('requests that do not all fit in the pool at once wait their turn', async () => {
    const s = servers.pool;
    const prompts = PROMPTS.slice(0, 6);
    const want = [];
    for (const p of prompts) want.push(await reference(p, 16));
    const got = await Promise.all(prompts.map((p) => greedy(s, p, 16)));
    for (const [i, r] of got.entries()) assert.equal(r.choices[0].text, want[i].text, `prompt ${i}`);
  });

  test('max_tokens near 2^63 is a 400 (no overflow past the pool check)', async () => {
    const s = servers.pool;
    for (const prompt of ['hi', words(380)]) {
      const body = `{"model": "${MODEL}", "prompt": ${JSON.stringify(prompt)}, "max_tokens": 9223372036854775807, "temperature": 0}`;
      const r = await http(`${s.url}/v1/completions`, { method: 'POST', body });
      assert.equal(r.status, 400, `${prompt.length}-char prompt: ${r.text.slice(0, 300)}`);
    }
  });

  test('--context=64: prompts and max_tokens past it are 400s; without max_tokens it is clamped', async () => {
    const s = servers.ctx;
    const models = await http(`${s.url}/v1/models`);
    assert.equal(models.json.data[0].max_model_len, 64);
    const t = await http(`${s.url}/tokenize`, { method: 'POST', body: { prompt: words(30) } });
    assert.equal(t.json.max_model_len, 64);
    assert.ok(t.json.count >= 64, `${t.json.count} tokens`);
    let e = await apiError(() => greedy(s, words(30), 4), 400);
    assert.equal(e.param, 'prompt');
    e = await apiError(() => greedy(s, 'hi', 63), 400);
    assert.equal(e.param, 'max_tokens');
    assert.equal((await greedy(s, 'hi', 62)).usage.prompt_tokens, 2);
    // 60 prompt tokens and the default 16: at most 4 generated.
    const { tokens } = (await http(`${s.url}/tokenize`, { method: 'POST', body: { prompt: words(30) } })).json;
    const r = await s.client.completions.create({ model: MODEL, prompt: tokens.slice(0, 60), temperature: 0 });
    assert.ok(r.usage.completion_tokens <= 4, `${r.usage.completion_tokens} tokens`);
    assert.ok(r.usage.total_tokens <= 64);
    const c = await s.client.chat.completions.create({ model: MODEL, messages: [{ role: 'user', content: 'hi' }], temperature: 0 });
    assert.ok(c.usage.total_tokens <= 64, `${c.usage.total_tokens} tokens`);
  });
});
