// Shared helpers of the k3-serve client tests: build the tiny synthetic
// model, start and stop k3-serve, raw HTTP, Prometheus text, SSE.
//
// Binaries come from $K3_BIN (default ../../build/bin), resolved relative
// to this folder; the model config from ../../models/k3-tiny.

import { spawn, execFile } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

import OpenAI from 'openai';

export const HERE = path.dirname(fileURLToPath(import.meta.url));
export const K3_BIN = path.resolve(HERE, process.env.K3_BIN ?? '../../build/bin');
export const MODEL_CONFIG = path.resolve(HERE, '../../models/k3-tiny');
export const MODEL = 'tiny';
export const VOCAB = 512;
export const IM_END = 482; // <|im_end|>: ends chat turns; eos of completions

const execFileP = promisify(execFile);

// Every child this process started, killed (SIGKILL) if we exit with one
// still running: no k3-serve is ever left behind, even when a test throws.
const children = new Set();
function killAll() {
  for (const child of children) {
    try {
      child.kill('SIGKILL');
    } catch {}
  }
}
process.on('exit', killAll);
for (const sig of ['SIGINT', 'SIGTERM', 'SIGHUP']) {
  process.once(sig, () => {
    killAll();
    process.exit(128 + os.constants.signals[sig]);
  });
}

/// Runs k3-compile with `args` (killed with the test process).
export async function compile(args) {
  const p = execFileP(path.join(K3_BIN, 'k3-compile'), args, { timeout: 180_000 });
  children.add(p.child);
  try {
    await p;
  } finally {
    children.delete(p.child);
  }
}

/// Writes the synthetic tiny model into a fresh temp dir and compiles it
/// for the CPU. Returns { dir, k3b, cleanup }.
export async function buildModel() {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'k3-serve-test-'));
  const k3b = path.join(dir, 'tiny.k3b');
  try {
    await compile([MODEL_CONFIG, `--write-synthetic=${dir}`, '--seed=1']);
    await compile([dir, '-o', k3b]);
  } catch (e) {
    await rm(dir, { recursive: true, force: true });
    throw e;
  }
  return { dir, k3b, cleanup: () => rm(dir, { recursive: true, force: true }) };
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/// Polls `fn` until it returns a truthy value; throws after `ms`.
export async function waitFor(fn, { ms = 15_000, every = 20, what = 'a condition' } = {}) {
  const deadline = Date.now() + ms;
  let last;
  for (;;) {
    last = await fn();
    if (last) return last;
    if (Date.now() > deadline) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
    await sleep(every);
  }
}

/// mpirun's flags for a test: root needs its consent; two cores host up to
/// four ranks.
export const MPIRUN_FLAGS = [
  ...(process.getuid?.() === 0 ? ['--allow-run-as-root'] : []),
  '--oversubscribe',
];

/// Starts k3-serve on a free port and waits until /health is 200; with
/// `ranks`, under `mpirun -np ranks` (a binary compiled for a grid).
/// Returns { url, client, child, stderr(), healthStatuses, stop(), rankPid(r) }.
export async function startServer(k3b, flags = [], { ranks } = {}) {
  const args = [k3b, '--port=0', `--model-name=${MODEL}`, '--threads=1', ...flags];
  const serve = path.join(K3_BIN, 'k3-serve');
  const child = ranks
    ? spawn('mpirun', [...MPIRUN_FLAGS, '-np', String(ranks), serve, ...args], {
        stdio: ['ignore', 'pipe', 'pipe'],
      })
    : spawn(serve, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  children.add(child);
  let log = '';
  child.stdout.setEncoding('utf8');
  child.stderr.setEncoding('utf8');
  child.stdout.on('data', (d) => (log += d));
  const exited = new Promise((resolve) =>
    child.once('exit', (code, signal) => {
      children.delete(child);
      resolve({ code, signal });
    }),
  );
  let exit = null;
  exited.then((e) => (exit = e));
  const server = {
    child,
    stderr: () => log,
    exited,
    healthStatuses: [],
    /// SIGTERM, then SIGKILL if it is not gone in `ms`. Returns {code, signal, killed}.
    async stop(ms = 10_000) {
      if (exit) return { ...exit, killed: false };
      child.kill('SIGTERM');
      const timer = sleep(ms).then(() => null);
      const e = await Promise.race([exited, timer]);
      if (e) return { ...e, killed: false };
      child.kill('SIGKILL');
      return { ...(await exited), killed: true };
    },
    /// Under mpirun: the pid of rank `r` (a child of mpirun whose
    /// environment says so).
    rankPid(r) {
      for (const pid of readdirSync('/proc').filter((d) => /^\d+$/.test(d))) {
        try {
          const ppid = readFileSync(`/proc/${pid}/stat`, 'utf8').replace(/^.*\) \S+ /, '').split(' ')[0];
          if (Number(ppid) !== child.pid) continue;
          const env = readFileSync(`/proc/${pid}/environ`, 'utf8').split('\0');
          if (env.includes(`OMPI_COMM_WORLD_RANK=${r}`)) return Number(pid);
        } catch {} // gone meanwhile
      }
      throw new Error(`no rank ${r} under mpirun (pid ${child.pid})`);
    },
  };
  try {
    const url = await new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`k3-serve did not listen in 30 s:\n${log}`)), 30_000);
      child.stderr.on('data', (d) => {
        log += d;
        const m = /k3-serve: listening on (http:\/\/[^\s]+)/.exec(log);
        if (m) {
          clearTimeout(timer);
          resolve(m[1]);
        }
      });
      exited.then(({ code, signal }) => {
        clearTimeout(timer);
        reject(new Error(`k3-serve exited (${code ?? signal}) before listening:\n${log}`));
      });
    });
    server.url = url;
    await waitFor(
      async () => {
        if (exit) throw new Error(`k3-serve exited (${exit.code ?? exit.signal}):\n${log}`);
        try {
          const r = await fetch(`${url}/health`);
          server.healthStatuses.push({ status: r.status, body: await r.text() });
          return r.status === 200;
        } catch {
          return false; // not accepting yet
        }
      },
      { ms: 60_000, what: '/health 200' },
    );
    server.client = new OpenAI({
      baseURL: `${url}/v1`,
      apiKey: 'k3-test',
      maxRetries: 0,
      timeout: 120_000,
    });
    return server;
  } catch (e) {
    await server.stop(2_000);
    throw e;
  }
}

/// A raw JSON request: { status, headers, text, json }.
export async function http(url, { method = 'GET', body, headers = {} } = {}) {
  const init = { method, headers: { ...headers } };
  if (body !== undefined) {
    init.body = typeof body === 'string' ? body : JSON.stringify(body);
    init.headers['content-type'] ??= 'application/json';
  }
  const r = await fetch(url, init);
  const text = await r.text();
  let json;
  try {
    json = JSON.parse(text);
  } catch {}
  return { status: r.status, headers: r.headers, text, json };
}

/// Prometheus text -> Map of 'name{labels}' (labels as printed) -> number.
export function parseMetrics(text) {
  const out = new Map();
  for (const line of text.split('\n')) {
    if (!line || line.startsWith('#')) continue;
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*(?:\{[^}]*\})?)\s+(\S+)$/.exec(line);
    if (!m) throw new Error(`not a Prometheus sample line: ${JSON.stringify(line)}`);
    out.set(m[1], Number(m[2]));
  }
  return out;
}

export async function metrics(server) {
  const r = await http(`${server.url}/metrics`);
  if (r.status !== 200) throw new Error(`/metrics: ${r.status} ${r.text}`);
  return parseMetrics(r.text);
}

export async function tokenize(server, body) {
  const r = await http(`${server.url}/tokenize`, { method: 'POST', body });
  if (r.status !== 200) throw new Error(`/tokenize: ${r.status} ${r.text}`);
  return r.json;
}

/// Runs an openai stream to its end; returns { chunks, text } (text: the
/// concatenated choice text or delta content).
export async function collect(stream) {
  const chunks = [];
  let text = '';
  for await (const chunk of stream) {
    chunks.push(chunk);
    for (const c of chunk.choices ?? []) text += c.text ?? c.delta?.content ?? '';
  }
  return { chunks, text };
}

/// The error an async function throws (fails when it does not throw).
export async function rejection(promiseOrFn) {
  try {
    await (typeof promiseOrFn === 'function' ? promiseOrFn() : promiseOrFn);
  } catch (e) {
    return e;
  }
  throw new Error('expected an error, got success');
}
