#!/usr/bin/env node
// k3-serve under load, next to the same requests through `k3-run --requests`
// (the engine alone, no HTTP): N streaming clients send R requests in all;
// prints requests/s, generated tokens/s, time to first token p50/p99, and
// the server's wall time over the engine's (its overhead as a ratio).
//
//   node tools/scripts/bench-serve.mjs [--model=models/k3-small] [--clients=8]
//        [--requests=32] [--prompt-words=96] [--max-tokens=32] [--max-batch=8]
//        [--threads=N] [--bin=build/bin] [--k3b=FILE --tokenizer=DIR] [--ranks=N]
//
// --ranks=N: --k3b is a binary compiled for a grid of N ranks (k3-compile
// --tp/--ep; its X.rank<R>.k3b files): the server and k3-run both run
// under `mpirun -np N` (--threads per rank).
//
// Without --k3b it writes a synthetic checkpoint of --model and compiles it
// for the CPU first (k3-small: about a minute here). No dependencies beyond
// Node.js 20 (fetch, no npm packages). Not run in CI: it measures.
import { spawn, execFileSync } from 'node:child_process';
import { mkdtempSync, writeFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const args = Object.fromEntries(process.argv.slice(2).map((a) => {
  const m = /^--([^=]+)=(.*)$/.exec(a);
  if (!m) {
    console.error(`bench-serve: error: bad argument '${a}' (use --name=value)`);
    process.exit(1);
  }
  return [m[1], m[2]];
}));
const opt = {
  model: args.model ?? join(root, 'models/k3-small'),
  clients: Number(args.clients ?? 8),
  requests: Number(args.requests ?? 32),
  promptWords: Number(args['prompt-words'] ?? 96),
  maxTokens: Number(args['max-tokens'] ?? 32),
  maxBatch: Number(args['max-batch'] ?? 8),
  threads: args.threads,
  bin: resolve(args.bin ?? join(root, 'build/bin')),
  ranks: Number(args.ranks ?? 0),
};
if (opt.ranks && !args.k3b) {
  console.error('bench-serve: error: --ranks needs --k3b (a grid-compiled binary)');
  process.exit(1);
}
// A tool, under mpirun with --ranks.
const mpi = (tool, toolArgs) =>
  opt.ranks
    ? ['mpirun', [...(process.getuid?.() === 0 ? ['--allow-run-as-root'] : []), '--oversubscribe',
        '-np', String(opt.ranks), join(opt.bin, tool), ...toolArgs]]
    : [join(opt.bin, tool), toolArgs];

const tmp = mkdtempSync(join(tmpdir(), 'k3-bench-serve-'));
let server;
process.on('exit', () => {
  server?.kill('SIGTERM');
  rmSync(tmp, { recursive: true, force: true });
});

let k3b = args.k3b, tokenizer = args.tokenizer;
if (!k3b) {
  console.error(`bench-serve: writing and compiling ${opt.model} ...`);
  execFileSync(join(opt.bin, 'k3-compile'), [opt.model, `--write-synthetic=${tmp}`, '--seed=1']);
  k3b = join(tmp, 'model.k3b');
  execFileSync(join(opt.bin, 'k3-compile'), [tmp, '-o', k3b]);
  tokenizer = tmp;
}
tokenizer ??= dirname(k3b);
const threads = opt.threads ? [`--threads=${opt.threads}`] : [];

// The server.
server = spawn(...mpi('k3-serve', [k3b, `--tokenizer=${tokenizer}`, '--port=0',
  '--model-name=bench', `--max-batch=${opt.maxBatch}`, ...threads]), { stdio: ['ignore', 'ignore', 'pipe'] });
const base = await new Promise((ok, fail) => {
  let err = '';
  server.stderr.on('data', (d) => {
    err += d;
    const m = /listening on (http:\/\/\S+)/.exec(err);
    if (m) ok(m[1]);
  });
  server.on('exit', (code) => fail(new Error(`k3-serve exited (${code}): ${err}`)));
});
for (const deadline = Date.now() + 120e3; ;) {
  const r = await fetch(`${base}/health`).catch(() => null);
  if (r?.status === 200) break;
  if (Date.now() > deadline) throw new Error('k3-serve did not become ready');
  await new Promise((r) => setTimeout(r, 50));
}

// Prompts: distinct texts of about --prompt-words words.
const words = 'the model reads a prompt and writes an answer one token at a time while the ' +
  'server streams every piece to its client over http';
const prompts = Array.from({ length: opt.requests }, (_, i) => {
  const w = words.split(' ');
  const out = [`Request ${i}:`];
  for (let k = 0; out.length < opt.promptWords; ++k) out.push(w[(k * (i + 3)) % w.length]);
  return out.join(' ');
});
const ids = [];
for (const p of prompts) {
  const r = await fetch(`${base}/tokenize`, { method: 'POST', body: JSON.stringify({ prompt: p }) });
  ids.push((await r.json()).tokens);
}

async function one(i) {
  const t0 = performance.now();
  const r = await fetch(`${base}/v1/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'bench', prompt: prompts[i], max_tokens: opt.maxTokens,
      temperature: 0, stream: true, stream_options: { include_usage: true } }),
  });
  if (r.status !== 200) throw new Error(`request ${i}: HTTP ${r.status} ${await r.text()}`);
  let ttft = null, tokens = 0, buf = '';
  const dec = new TextDecoder();
  for await (const chunk of r.body) {
    buf += dec.decode(chunk, { stream: true });
    let k;
    while ((k = buf.indexOf('\n\n')) >= 0) {
      const ev = buf.slice(0, k);
      buf = buf.slice(k + 2);
      if (!ev.startsWith('data: ') || ev === 'data: [DONE]') continue;
      const j = JSON.parse(ev.slice(6));
      if (ttft === null && j.choices?.length) ttft = performance.now() - t0;
      if (j.usage) tokens = j.usage.completion_tokens;
    }
  }
  return { ttft: ttft ?? performance.now() - t0, tokens };
}

const t0 = performance.now();
const results = [];
let next = 0;
await Promise.all(Array.from({ length: opt.clients }, async () => {
  while (next < opt.requests) results.push(await one(next++));
}));
const serveSeconds = (performance.now() - t0) / 1e3;
// Gone before the engine alone runs (mpirun takes about 2 s to end a grid).
const serverGone = new Promise((ok) => server.once('exit', ok));
server.kill('SIGTERM');
await serverGone;

// The same requests through the engine alone.
const imEnd = (() => { // k3-run stops where the server does: at <|im_end|>
  const r = execFileSync(join(opt.bin, 'k3-tokenize'), [tokenizer], { input: '<|im_end|>' });
  return Number(String(r).trim());
})();
const jsonl = ids.map((t, i) => JSON.stringify({ id: `r${i}`, tokens: t, max_new_tokens: opt.maxTokens,
  stop: [imEnd] })).join('\n');
writeFileSync(join(tmp, 'requests.jsonl'), jsonl + '\n');
const run = spawn(...mpi('k3-run', [k3b, `--requests=${join(tmp, 'requests.jsonl')}`,
  `--max-batch=${opt.maxBatch}`, ...threads]), { stdio: ['ignore', 'pipe', 'pipe'] });
let runErr = '', runOut = '';
run.stderr.on('data', (d) => (runErr += d));
run.stdout.on('data', (d) => (runOut += d));
await new Promise((ok) => run.on('exit', ok));
const m = /requests: \d+ in ([0-9.]+) s/.exec(runErr);
if (!m) throw new Error(`k3-run --requests: ${runErr}`);
const engineSeconds = Number(m[1]);
const engineTokens = runOut.trim().split('\n').map((l) => JSON.parse(l).tokens.length)
  .reduce((a, b) => a + b, 0);

const serveTokens = results.reduce((a, r) => a + r.tokens, 0);
const ttfts = results.map((r) => r.ttft).sort((a, b) => a - b);
const pct = (p) => ttfts[Math.min(ttfts.length - 1, Math.floor(p * ttfts.length))];
console.log(`model ${args.k3b ?? opt.model}${opt.ranks ? ` on ${opt.ranks} ranks` : ''}, ${opt.requests} requests of ~${ids[0].length} prompt tokens, ` +
  `max_tokens ${opt.maxTokens}, ${opt.clients} streaming clients, max batch ${opt.maxBatch}`);
console.log(`k3-serve:            ${(opt.requests / serveSeconds).toFixed(2)} requests/s, ` +
  `${(serveTokens / serveSeconds).toFixed(1)} tokens/s, time to first token p50 ` +
  `${pct(0.5).toFixed(1)} ms, p99 ${pct(0.99).toFixed(1)} ms (${serveTokens} tokens)`);
console.log(`k3-run --requests:   ${(opt.requests / engineSeconds).toFixed(2)} requests/s, ` +
  `${(engineTokens / engineSeconds).toFixed(1)} tokens/s (${engineTokens} tokens)`);
console.log(`serve_over_engine_time ${(serveSeconds / engineSeconds).toFixed(3)}`);
if (serveTokens !== engineTokens)
  console.log(`note: the server generated ${serveTokens} tokens, the engine ${engineTokens}`);
