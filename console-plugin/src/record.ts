// numo's rollout record: the ConfigMap `numo-timeline-<run config>` next to the run config (src/rollout_record.rs).
// One key per finished node, `node.<name>`: "<outcome> <done> <started> <released> <upgrading> <upgraded>
// <soak started> <finished> <drained>" in Unix seconds (`-` when not seen; records written before numo read
// MachineConfigNodes end at <finished>); and `rollout`: the rollout the record belongs to. The node table reads its
// finished nodes; the holds it keeps (`hold.*`) are numo's to draw on the timeline, which numo serves.
import type { NodePhase } from './types';

export const ROLLOUT_KEY = 'rollout';
export const NODE_PREFIX = 'node.';

export type RecordedNode = {
  name: string;
  phase: Extract<NodePhase, 'Done' | 'Skipped' | 'Failed' | 'Ungated'>;
  /** started, released, upgrading, upgraded, soak started, finished, drained: milliseconds, or undefined. */
  times: (number | undefined)[];
  /** When it was done, in milliseconds. */
  done: number;
};

export type RolloutRecord = { rollout?: string; nodes: RecordedNode[] };

const seconds = (text?: string): number | undefined =>
  text !== undefined && /^-?[0-9]+$/.test(text) ? parseInt(text, 10) * 1000 : undefined;

const OUTCOMES = ['Done', 'Skipped', 'Failed', 'Ungated'];

/** What a record's data holds: its rollout, and its nodes in the order they were done. */
export const readRecord = (data?: Record<string, string> | null): RolloutRecord => {
  const nodes: RecordedNode[] = [];
  Object.entries(data ?? {}).forEach(([key, value]) => {
    if (key.startsWith(NODE_PREFIX)) {
      const fields = value.split(' ');
      const phase = fields[0];
      const done = seconds(fields[1]);
      if (!OUTCOMES.includes(phase) || done === undefined) return;
      const times = [0, 1, 2, 3, 4, 5, 6].map((i) => seconds(fields[2 + i]));
      nodes.push({ name: key.slice(NODE_PREFIX.length), phase: phase as RecordedNode['phase'], times, done });
    }
  });
  nodes.sort((a, b) => a.done - b.done || (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  return { rollout: data?.[ROLLOUT_KEY], nodes };
};

// SHA-256, for the record's name of a run config whose name is too long (src/rollout_record.rs, config_map_name).
const K = new Uint32Array([
  0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5, 0xd807aa98,
  0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786,
  0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da, 0x983e5152, 0xa831c66d, 0xb00327c8,
  0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13,
  0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819,
  0xd6990624, 0xf40e3585, 0x106aa070, 0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a,
  0x5b9cca4f, 0x682e6ff3, 0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7,
  0xc67178f2,
]);

/** The UTF-8 bytes of `text`. */
const utf8 = (text: string): number[] => {
  const out: number[] = [];
  for (const ch of text) {
    const c = ch.codePointAt(0) as number;
    if (c < 0x80) out.push(c);
    else if (c < 0x800) out.push(0xc0 | (c >> 6), 0x80 | (c & 63));
    else if (c < 0x10000) out.push(0xe0 | (c >> 12), 0x80 | ((c >> 6) & 63), 0x80 | (c & 63));
    else out.push(0xf0 | (c >> 18), 0x80 | ((c >> 12) & 63), 0x80 | ((c >> 6) & 63), 0x80 | (c & 63));
  }
  return out;
};

export const sha256Hex = (text: string): string => {
  const bytes = utf8(text);
  const bitLength = bytes.length * 8;
  bytes.push(0x80);
  while (bytes.length % 64 !== 56) bytes.push(0);
  for (let i = 7; i >= 0; i -= 1) bytes.push(i >= 4 ? 0 : (bitLength >>> (i * 8)) & 0xff);
  const h = new Uint32Array([
    0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19,
  ]);
  const w = new Uint32Array(64);
  const rotr = (x: number, n: number) => (x >>> n) | (x << (32 - n));
  for (let chunk = 0; chunk < bytes.length; chunk += 64) {
    for (let i = 0; i < 16; i += 1) {
      const j = chunk + i * 4;
      w[i] = (bytes[j] << 24) | (bytes[j + 1] << 16) | (bytes[j + 2] << 8) | bytes[j + 3];
    }
    for (let i = 16; i < 64; i += 1) {
      const s0 = rotr(w[i - 15], 7) ^ rotr(w[i - 15], 18) ^ (w[i - 15] >>> 3);
      const s1 = rotr(w[i - 2], 17) ^ rotr(w[i - 2], 19) ^ (w[i - 2] >>> 10);
      w[i] = (w[i - 16] + s0 + w[i - 7] + s1) >>> 0;
    }
    let [a, b, c, d, e, f, g, hh] = Array.from(h);
    for (let i = 0; i < 64; i += 1) {
      const t1 = (hh + (rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25)) + ((e & f) ^ (~e & g)) + K[i] + w[i]) >>> 0;
      const t2 = ((rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22)) + ((a & b) ^ (a & c) ^ (b & c))) >>> 0;
      hh = g;
      g = f;
      f = e;
      e = (d + t1) >>> 0;
      d = c;
      c = b;
      b = a;
      a = (t1 + t2) >>> 0;
    }
    [a, b, c, d, e, f, g, hh].forEach((v, i) => {
      h[i] = (h[i] + v) >>> 0;
    });
  }
  return Array.from(h)
    .map((v) => v.toString(16).padStart(8, '0'))
    .join('');
};

/** The record's ConfigMap name for run config `name`, shortened with a hash beyond 253 characters like numo's. */
export const recordName = (name: string): string => {
  const full = `numo-timeline-${name}`;
  if (full.length <= 253) return full;
  const head = full.slice(0, 240).replace(/[-.]+$/, '');
  return `${head}-${sha256Hex(name).slice(0, 10)}`;
};
