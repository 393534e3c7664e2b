// k3-serve on a grid of ranks (issue 28): the tiny model compiled with
// --tp=2, served by `mpirun -np 2 k3-serve tp2.k3b` (rank 0 serves HTTP,
// rank 1 repeats its engine steps), answers what the single-process server
// answers over the same weights: greedy and seeded, streaming or not,
// concurrent, cancelled, cut by stop strings, from the prefix cache. And
// the ends: SIGTERM to rank 0 stops both ranks cleanly; a rank that stops
// answering ends the job within --collective-timeout, with one line.

import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';

import { K3_BIN, MODEL, buildModel, collect, compile, http, metrics, startServer, waitFor } from './helpers.mjs';

// mpirun, and the MPI plugin k3-serve loads under it (built with OpenMPI).
const HAVE_MPI =
  spawnSync('mpirun', ['--version']).status === 0 && existsSync(path.join(K3_BIN, '../lib/libk3rt-mpi.so'));
const FLAGS = ['--max-batch=8', '--block-tokens=16'];

let model, tp2;
const servers = {};

describe('k3-serve on a 1x2 grid', { skip: !HAVE_MPI && 'no mpirun (tools/scripts/setup.sh installs OpenMPI)' }, () => {
  before(async () => {
    model = await buildModel();
    tp2 = path.join(model.dir, 'tp2.k3b');
    await compile([model.dir, '--tp=2', '-o', tp2]);
    [servers.single, servers.grid] = await Promise.all([
      startServer(model.k3b, FLAGS),
      startServer(tp2, FLAGS, { ranks: 2 }),
    ]);
  });

  after(async () => {
    await Promise.all(Object.values(servers).map((s) => s.stop()));
    await model?.cleanup();
  });

  const ask = (server, prompt, extra = {}) =>
    server.client.completions.create({ model: MODEL, prompt, max_tokens: 16, temperature: 0, ...extra });

  test('rank 0 says it serves a grid', () => {
    assert.match(servers.grid.stderr(), /k3-serve: ready: .*grid 1x2 \(2 ranks\)/);
  });

  test('greedy and seeded answers equal the single process, streaming or not', async () => {
    for (const prompt of ['hello world', 'The quick brown fox', 'a']) {
      for (const extra of [{}, { temperature: 0.9, seed: 7 }, { temperature: 1.5, top_p: 0.8, seed: 3 }]) {
        const want = await ask(servers.single, prompt, extra);
        const got = await ask(servers.grid, prompt, extra);
        assert.equal(got.choices[0].text, want.choices[0].text, `${prompt} ${JSON.stringify(extra)}`);
        assert.deepEqual(got.usage, want.usage);
        const streamed = await collect(await ask(servers.grid, prompt, { ...extra, stream: true }));
        assert.equal(streamed.text, want.choices[0].text);
      }
    }
  });

  test('concurrent requests, cancellations and stop strings keep the ranks in step', async () => {
    const prompts = Array.from({ length: 8 }, (_, i) => `request ${i}: ${'lorem ipsum dolor sit amet'.slice(i)}`);
    const want = [];
    for (const p of prompts) want.push((await ask(servers.single, p, { max_tokens: 24 })).choices[0].text);
    // A stop string from the middle of an answer ends that request early:
    // a cancellation the followers must repeat.
    const cut = want[2].slice(5, 7);
    const wantCut = (await ask(servers.single, prompts[2], { max_tokens: 24, stop: [cut] })).choices[0].text;

    // A client that hangs up mid-stream: its request is cancelled on every
    // rank. The prompt whose greedy answer runs longest, so that the abort
    // lands first.
    let longest = { n: -1 };
    for (let i = 0; i < 6; i++) {
      const r = await ask(servers.single, `cancel me ${i}`, { max_tokens: 400 });
      if (r.usage.completion_tokens > longest.n) longest = { prompt: `cancel me ${i}`, n: r.usage.completion_tokens };
    }
    assert.ok(longest.n >= 100, `the longest answer has ${longest.n} tokens`);
    const cancelledBefore = (await metrics(servers.grid)).get('k3_requests_cancelled_total');
    const abandoned = (async () => {
      const stream = await ask(servers.grid, longest.prompt, { max_tokens: 400, stream: true });
      for await (const chunk of stream) {
        stream.controller.abort();
        break;
      }
    })();
    const [got, gotCut] = await Promise.all([
      Promise.all(prompts.map((p) => ask(servers.grid, p, { max_tokens: 24 }))),
      ask(servers.grid, prompts[2], { max_tokens: 24, stop: [cut] }),
      abandoned,
    ]);
    assert.deepEqual(
      got.map((r) => r.choices[0].text),
      want,
    );
    assert.equal(gotCut.choices[0].text, wantCut);
    assert.equal(gotCut.choices[0].finish_reason, 'stop');

    // Idle again, and still in step: one more request answers as before.
    await waitFor(
      async () => {
        const m = await metrics(servers.grid);
        return m.get('k3_requests_running') === 0 && m.get('k3_requests_waiting') === 0;
      },
      { what: 'an idle engine' },
    );
    assert.equal((await metrics(servers.grid)).get('k3_requests_cancelled_total'), cancelledBefore + 1);
    assert.equal((await ask(servers.grid, prompts[0], { max_tokens: 24 })).choices[0].text, want[0]);
  });

  test('unseeded sampling: rank 0 picks the seed and every rank uses it', async () => {
    // Were the seed each rank's own, the ranks would feed different tokens
    // and their step digests would differ: the grid would stop.
    const rs = await Promise.all(
      Array.from({ length: 4 }, () => ask(servers.grid, 'sample me', { temperature: 1, max_tokens: 24 })),
    );
    // A sample may draw the end-of-sequence token early: 'stop', not 'length'.
    for (const r of rs) {
      assert.ok(['length', 'stop'].includes(r.choices[0].finish_reason), JSON.stringify(r.choices[0]));
      assert.ok(r.usage.completion_tokens >= 1 && r.usage.completion_tokens <= 24, JSON.stringify(r.usage));
    }
    assert.ok(new Set(rs.map((r) => r.choices[0].text)).size > 1, 'four unseeded samples all equal');
    const want = await ask(servers.single, 'hello world');
    assert.equal((await ask(servers.grid, 'hello world')).choices[0].text, want.choices[0].text);
  });

  test('the prefix cache works on every rank', async () => {
    const prompt = 'A preamble long enough to fill two prefix-cache blocks of sixteen tokens each, then a question.';
    const want = await ask(servers.single, prompt);
    const first = await ask(servers.grid, prompt);
    const second = await ask(servers.grid, prompt);
    assert.equal(first.choices[0].text, want.choices[0].text);
    assert.equal(second.choices[0].text, want.choices[0].text);
    assert.ok(second.usage.prompt_tokens_details.cached_tokens >= 16, JSON.stringify(second.usage));
  });

  test('SIGTERM to rank 0 ends both ranks cleanly', async () => {
    process.kill(servers.grid.rankPid(0), 'SIGTERM');
    const e = await servers.grid.exited;
    assert.equal(e.code, 0, servers.grid.stderr());
    assert.doesNotMatch(servers.grid.stderr(), /error/);
  });

  test('a rank that stops answering ends the job with one line', async () => {
    for (const [stalled, line] of [
      [1, /k3-serve: error: rank 0: .*did not complete within 4 s: a peer died or never called it \(--collective-timeout\)/],
      [0, /k3-serve: error: rank 1: waiting for rank 0's next engine step: .*did not complete within 4 s/],
    ]) {
      const server = await startServer(tp2, ['--collective-timeout=4'], { ranks: 2 });
      servers[`stalled${stalled}`] = server;
      process.kill(server.rankPid(stalled), 'SIGSTOP');
      if (stalled === 1) {
        // The request that needs the stalled rank fails, as a 500.
        const r = await http(`${server.url}/v1/completions`, {
          method: 'POST',
          body: { model: MODEL, prompt: 'hello', max_tokens: 4 },
        });
        assert.equal(r.status, 500, r.text);
        assert.match(r.json.error.message, /--collective-timeout/);
      }
      const e = await server.exited;
      assert.notEqual(e.code, 0);
      assert.match(server.stderr(), line);
    }
  });
});
